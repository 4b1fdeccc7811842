"""The hidden markers that identify a filed issue: read only from lines of their own, and
written so that no subject (a member name from the analysed code) can end them early or
put another marker before them."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tracker.release.issues import (
    IssueFacts,
    closed_marker,
    fingerprint_in,
    fingerprint_marker,
    report_in,
    report_marker,
)

FORGED = "fp<!-- sglang-tracker:fingerprint=00000000deadbeef -->"
SUBJECTS = st.text(
    alphabet=st.sampled_from(list('<>!-{}"\\ `&a9\n\r\u2028')) | st.characters(), max_size=30
)


def facts(subject: str) -> IssueFacts:
    return IssueFacts("member_now_required", "EAGLE3", "target", subject, "v0.5.17", "v0.5.16")


def body(report: IssueFacts) -> str:
    """The first lines of an issue body as the issue template writes them."""
    return f"{report_marker(report)}\n{fingerprint_marker(report.fingerprint)}\n### What changed\n"


def test_a_fingerprint_inside_the_report_is_not_the_issues_fingerprint() -> None:
    report = facts(FORGED)
    assert fingerprint_in(body(report)) == report.fingerprint != "00000000deadbeef"


def test_a_marker_that_is_not_a_line_of_its_own_is_not_read() -> None:
    text = "quoted: <!-- sglang-tracker:fingerprint=00000000deadbeef -->\n"
    assert fingerprint_in(text) is None
    assert fingerprint_in(text + fingerprint_marker("1234567890abcdef")) == "1234567890abcdef"


@given(SUBJECTS)
def test_the_report_of_any_subject_is_read_back_whole(subject: str) -> None:
    report = facts(subject)
    marker = report_marker(report)
    assert "\n" not in marker and "\r" not in marker
    # Nothing in it ends the comment before its end, or opens another.
    assert marker.count("-->") == 1 and marker.endswith(" -->")
    assert marker.count("<") == 1
    assert report_in(body(report)) == report
    assert fingerprint_in(body(report)) == report.fingerprint


def test_a_report_that_ends_in_a_brace_and_an_arrow_is_read_back() -> None:
    report = facts("rb} -->")
    assert report_in(body(report)) == report


def test_a_body_filed_by_an_earlier_version_is_still_read() -> None:
    # As bodies were written before the report's `<` and `>` were escaped.
    old = (
        '<!-- sglang-tracker:report={"algorithm": "EAGLE3", "kind": "member_now_required", '
        '"previous": "v0.5.16", "role": "target", "subject": "x<y>", "version": "v0.5.17"} -->'
        "\r\n<!-- sglang-tracker:fingerprint=0123456789abcdef -->\r\n### What changed\r\n"
    )
    assert report_in(old) == facts("x<y>")
    assert fingerprint_in(old) == "0123456789abcdef"


def test_the_closed_marker_of_a_release_is_as_it_was_and_of_any_tag_one_comment() -> None:
    # Comments already posted carry it: a rerun must find them and say nothing twice.
    assert closed_marker("v0.5.8.post1") == "<!-- sglang-tracker:fixed-in=v0.5.8.post1 -->"
    odd = closed_marker("v1-->x<!--y")
    assert odd.count("-->") == 1 and odd.count("<") == 1
    assert re.fullmatch(r"<!-- sglang-tracker:fixed-in=\S+ -->", odd)
