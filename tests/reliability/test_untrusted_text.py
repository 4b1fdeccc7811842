"""Text from the analysed code and git stays inert in every output: one hostile history
(tests/reliability/hostile.py) through each sink, checked on the bytes the sink gets.

- a terminal: no control, format or separator character but the tool's own newlines, and
  no line that a newline or carriage return in a name starts;
- markdown (PR comments, release notes, issue bodies), rendered by a CommonMark renderer
  that lets HTML through as GitHub's does: no element but the tool's own, no link but to
  the source, no @mention, every quoted name one code span holding exactly that name;
- GitHub, through the real posting path against a server on 127.0.0.1: titles, bodies,
  closing comments, and each issue's identity (filed once, closed when fixed) whatever
  hidden markers the names hold;
- SARIF, the HTML report, and the SVG graphs (well-formed XML).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_github import REPO, TOKEN, State, fake_github
from markdown_it import MarkdownIt
from sgl_trees import BASE, write_tree

from tests.reliability import hostile
from tests.reliability.support import Run
from tracker.cli import cli
from tracker.release.issues import fingerprint_in, report_in
from tracker.sources import clear_memo

HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
SOURCE_LINK = "https://github.com/sgl-project/sglang/blob/"
# A GitHub mention: `@` and a user or team name, not after a word character.
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
# The escaped forms the terminal shows of the hostile payloads (hostile.TERMINAL).
SHOWN_TERMINAL = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m\\u202e"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile.build_history(tmp_path_factory.mktemp("hostile") / "repo")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile.accepted_config(tmp_path_factory.mktemp("config"))


def tracker(*args: str, env: dict[str, str] | None = None) -> Run:
    """The command in this process, with colour on: click then strips no escape sequence,
    so the output is what a terminal would get."""
    clear_memo()
    try:
        result = CliRunner(env=env).invoke(cli, list(args), color=True)
    finally:
        clear_memo()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def hidden_in(text: str, allowed: str = "\n") -> list[str]:
    return [c for c in text if c not in allowed and unicodedata.category(c) in HIDDEN]


def assert_terminal_safe(text: str) -> None:
    assert hidden_in(text) == [], text
    forged = [line for line in text.split("\n") if line.lstrip().startswith(hostile.FORGED)]
    assert forged == [], forged


# ------------------------------------------------------------------------ terminal

ESC_WRAPPER = "EscWrapperForCausalLM"
ATTRIBUTE_ERROR = f"AttributeError: '{ESC_WRAPPER}' object has no attribute 'get_embed_and_head'"

TERMINAL_CASES: dict[str, tuple[list[str], str]] = {
    # name: (arguments, what the output must show of the payloads, written out); markdown
    # (changelog, issues) writes a backslash twice
    "interface": (["interface", "v0.5.17", "-a", "EAGLE3"], "term" + SHOWN_TERMINAL),
    "check": (["check", "v0.5.17", "-a", "EAGLE3", "--all", "--config", "{config}"], "\\nFORGED"),
    "diff": (
        ["diff", "v0.5.16", "v0.5.17", "-a", "EAGLE3", "--all", "--config", "{config}"],
        "opt" + SHOWN_TERMINAL,
    ),
    "bisect": (["bisect", hostile.VICTIM, "v0.5.15..v0.5.16", "-a", "EAGLE3"], "\\rFORGED"),
    "changelog": (["changelog", "v0.5.15", "v0.5.16", "-a", "EAGLE3"], "\\\\rFORGED subject"),
    "issues": (["issues", "v0.5.16", "v0.5.17", "-a", "EAGLE3"], "rb} --&gt;"),
    "watch": (
        ["watch", "--out", "{out}", "--since", "v0.5.16", "--until", "v0.5.17", "-a", "EAGLE3"],
        "term" + SHOWN_TERMINAL,
    ),
    "watch --dry-run": (
        ["watch", "--out", "{out}", "--since", "v0.5.16", "-a", "EAGLE3", "--dry-run"],
        "term" + SHOWN_TERMINAL,
    ),
    "why member": (["why", hostile.MEMBER_TERMINAL, "--at", "v0.5.17"], "term" + SHOWN_TERMINAL),
    "why class": (["why", ESC_WRAPPER, "--at", "v0.5.17"], "models/f" + SHOWN_TERMINAL),
    "fix": (["fix", ESC_WRAPPER, "--at", "v0.5.17"], "\\033]0;pwned\\a"),
    # In a DOT string a backslash is written twice.
    "graph": (["graph", "v0.5.17", "-a", "EAGLE3", "--format", "dot"], "term\\\\x1b]0;pwned"),
    "facts": (["facts", "v0.5.17", hostile.SRT + "speculative/eagle_worker.py"], SHOWN_TERMINAL),
    "triage": (["triage", ATTRIBUTE_ERROR, "--at", "v0.5.17"], "models/f" + SHOWN_TERMINAL),
    "matrix": (["matrix", "v0.5.15..v0.5.18", "-a", "EAGLE3", "--config", "{config}"], "r\\x1b"),
    "history": (["history", hostile.ACCEPTED_MODEL, "--config", "{config}"], "\\nFORGED reason"),
    "error": (["check", "v0.5.17", "-m", f"No{hostile.TERMINAL}\n{hostile.FORGED}"], "No\\x1b"),
}


@pytest.mark.parametrize("case", sorted(TERMINAL_CASES))
def test_no_text_from_the_code_or_git_acts_on_the_terminal(
    case: str, repo: Path, config: Path, tmp_path: Path
) -> None:
    args, shown = TERMINAL_CASES[case]
    filled = [a.format(config=config, out=tmp_path / "issues") for a in args]
    run = tracker(*filled, "--repo", str(repo))
    # The error case is an unknown class: exit 2, its name in the one-line error. The fix
    # leaves the hostile wrapper broken (no inner model has the hostile members): exit 1.
    expected = {"error": 2, "fix": 1}.get(case, 0)
    assert run.code == expected, (run.code, run.stderr)
    assert_terminal_safe(run.stdout)
    assert_terminal_safe(run.stderr)
    # Shown, written out: not dropped.
    assert shown in run.stdout + run.stderr


def test_a_warning_about_a_hostile_file_name_is_one_visible_line(repo: Path) -> None:
    run = tracker("check", "v0.5.17", "-a", "EAGLE3", "--repo", str(repo))
    warnings = [line for line in run.stderr.split("\n") if "not UTF-8" in line]
    assert len(warnings) == 1
    assert f"models/w{SHOWN_TERMINAL}\\nFORGED warning.py" in warnings[0]
    assert_terminal_safe(run.stderr)


def _matrix_in_parallel(repo: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """`matrix` over four versions of the hostile history in its own process (so that the
    workers' stderr is the one captured), built on two workers."""
    env = {**os.environ, "TRACKER_CACHE_DIR": str(cache), "TRACKER_JOBS": "2"}
    run = subprocess.run(
        [sys.executable, "-m", "tracker", "matrix", "v0.5.15..v0.5.18", "-a", "EAGLE3",
         "--repo", str(repo)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run


def test_the_processes_that_build_a_range_write_nothing_raw_to_the_terminal(
    repo: Path, tmp_path: Path
) -> None:
    run = _matrix_in_parallel(repo, tmp_path / "cache")
    assert_terminal_safe(run.stderr)
    warnings = [line for line in run.stderr.split("\n") if "not UTF-8" in line]
    # Said once per version, by the parent, written out.
    assert [w.split(":")[2] for w in warnings] == [" v0.5.15", " v0.5.16", " v0.5.17", " v0.5.18"]
    assert all(f"models/w{SHOWN_TERMINAL}\\nFORGED warning.py" in w for w in warnings)


def test_a_workers_own_warning_reaches_the_terminal_through_the_parent_once(
    repo: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "snapshots").write_text("a file where the snapshot cache should be")
    run = _matrix_in_parallel(repo, cache)
    assert_terminal_safe(run.stderr)
    lines = run.stderr.splitlines()
    unwritable = [line for line in lines if "cannot write to the cache" in line]
    # Said once: by the parent, or by one worker when the parent had not yet said it.
    assert len(unwritable) == 1
    assert all(line.startswith("tracker: warning: ") for line in lines)


def test_bisect_names_the_commit_and_keeps_its_subject_exactly(repo: Path) -> None:
    run = tracker(
        "bisect", hostile.VICTIM, "v0.5.15..v0.5.16", "-a", "EAGLE3", "--repo", str(repo),
        "--format", "json",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    # The separators str.splitlines() breaks at are kept: the subject read back whole.
    assert doc["commit"]["subject"] == hostile.SUBJECT
    assert doc["commit"]["author"] == hostile.AUTHOR
    assert doc["after"] == "broken"


def test_bisect_progress_cuts_a_long_subject_and_the_report_keeps_it_whole(repo: Path) -> None:
    run = tracker(
        "bisect", hostile.VICTIM, "v0.5.15..v0.5.16", "-a", "EAGLE3", "--repo", str(repo),
        "--format", "json",
    )  # fmt: skip
    assert run.code == 0, run.stderr
    progress = [ln for ln in run.stderr.splitlines() if ln.startswith("tracker: bisect: [")]
    assert progress and all(len(ln) < 200 for ln in progress), [len(ln) for ln in progress]
    assert any(ln.endswith("…»") for ln in progress), progress
    assert json.loads(run.stdout)["commit"]["subject"] == hostile.SUBJECT


# ------------------------------------------------------------------------ markdown


class _Html(HTMLParser):
    """The elements, links, code texts and other texts of rendered markdown."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.hrefs: list[str] = []
        self.code: list[str] = []
        self.text: list[str] = []
        self.comments: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.hrefs += [v or "" for k, v in attrs if k == "href"]
        if tag in ("code", "pre"):
            self._in_code += 1
            self.code.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        if self._in_code:
            self.code[-1] += data
        else:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


# What the tool's own markdown renders to: headings, lists, tables, code, emphasis it
# writes itself (`**EAGLE3**`), links to the source, a rule.
OWN_ELEMENTS = {"h2", "h3", "p", "ul", "li", "code", "pre", "strong", "a", "hr"}
TABLE_ELEMENTS = {"table", "thead", "tbody", "tr", "th", "td"}


def rendered(markdown: str) -> _Html:
    """`markdown` rendered as GitHub renders it, HTML let through, and parsed."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    parser = _Html()
    parser.feed(md.render(markdown))
    return parser


def assert_markdown_inert(markdown: str, markers: int = 0) -> _Html:
    """`markdown` renders only the tool's own elements, links to the source, mentions no
    one, shows nothing hidden, and holds `markers` HTML comments: the tool's own, whole."""
    page = rendered(markdown)
    assert page.tags <= OWN_ELEMENTS | TABLE_ELEMENTS
    assert len(page.comments) == markers, page.comments
    own = re.compile(r" sglang-tracker:(report=\{.*\}|fingerprint=[0-9a-f]+|fixed-in=\S+) ")
    assert all(own.fullmatch(c) for c in page.comments), page.comments
    assert all(h.startswith(SOURCE_LINK) for h in page.hrefs), page.hrefs
    text = "".join(page.text)
    assert not MENTION.search(text), MENTION.findall(text)
    assert hidden_in(text, allowed="\n\u200b") == []
    assert hidden_in("".join(page.code), allowed="\n") == []
    return page


def assert_cells_line_up(markdown: str) -> None:
    """Every row of each table has as many cells as its header: a `|` in a name split
    none."""
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(markdown)
    widths: list[int] = []
    row = 0
    for token in tokens:
        if token.type == "tr_open":
            row = 0
        elif token.type in ("th_open", "td_open"):
            row += 1
        elif token.type == "tr_close":
            widths.append(row)
    assert widths and len(set(widths)) == 1, widths


NAMES_IN_CODE = (hostile.MEMBER_MARKUP, hostile.MEMBER_FINGERPRINT, hostile.MEMBER_REPORT_END)

MARKDOWN_CASES: dict[str, tuple[list[str], tuple[str, ...]]] = {
    # name: (arguments, names each of which must be exactly one code span's text)
    "diff --format md (the PR comment)": (
        ["diff", "v0.5.16", "v0.5.17", "-a", "EAGLE3", "--format", "md", "--config", "{config}"],
        NAMES_IN_CODE,
    ),
    "changelog of the hostile commit": (["changelog", "v0.5.15", "v0.5.16", "-a", "EAGLE3"], ()),
    "changelog of the hostile members": (
        ["changelog", "v0.5.16", "v0.5.17", "-a", "EAGLE3", "--all", "--config", "{config}"],
        NAMES_IN_CODE,
    ),
    "check --format md": (
        ["check", "v0.5.17", "-a", "EAGLE3", "--format", "md", "--config", "{config}"],
        NAMES_IN_CODE,
    ),
    "interface --format md": (
        ["interface", "v0.5.17", "-a", "EAGLE3", "--format", "md"],
        NAMES_IN_CODE,
    ),
    "matrix --format md": (
        ["matrix", "v0.5.15..v0.5.18", "-a", "EAGLE3", "--format", "md", "--config", "{config}"],
        (),
    ),
    "issues (the bodies to file)": (["issues", "v0.5.15", "v0.5.17", "-a", "EAGLE3"], ()),
}


def issue_files(markdown: str) -> list[tuple[dict[str, Any], str]]:
    """(front matter, body) of each issue in `tracker issues` output."""
    out = []
    for chunk in ("\n" + markdown).split("\n---\ntitle: ")[1:]:
        head, _, body = ("title: " + chunk).partition("\n---\n")
        fields = dict(x.partition(": ")[::2] for x in head.split("\n"))
        meta = {**fields, "title": json.loads(fields["title"])}
        out.append((meta, body))
    return out


@pytest.mark.parametrize("case", sorted(MARKDOWN_CASES))
def test_markdown_renders_no_markup_and_pings_no_one(case: str, repo: Path, config: Path) -> None:
    args, names = MARKDOWN_CASES[case]
    run = tracker(*[a.format(config=config) for a in args], "--repo", str(repo))
    assert run.code == 0, run.stderr
    if case.startswith("issues"):
        issues = issue_files(run.stdout)
        assert len(issues) > len(hostile.REQUIRED_MEMBERS)
        for meta, body in issues:
            assert_inert_title(meta["title"])
            assert_markdown_inert(body, markers=2)
        return
    page = assert_markdown_inert(run.stdout)
    for name in names:
        assert name in page.code, (name, page.code)
    if "table" in page.tags:
        assert_cells_line_up(run.stdout)


def test_the_changelog_quotes_the_commit_subject_and_author_as_text(repo: Path) -> None:
    run = tracker("changelog", "v0.5.15", "v0.5.16", "-a", "EAGLE3", "--repo", str(repo))
    text = "".join(assert_markdown_inert(run.stdout).text)
    # The subject's markup arrives as the characters it is made of.
    assert "<script>alert(1)</script> <img src=x onerror=alert(2)> <b>bold</b> *em*" in text
    assert "\\u2028\\x85\\x0b\\x0c\\x1c\\x1d\\x1e \\rFORGED subject" in text


# ------------------------------------------------------------------------ GitHub


def subject_of(issue: dict[str, Any]) -> str:
    """What a posted issue reports on (its model or member), from its body's report."""
    report = report_in(issue["body"])
    assert report is not None, issue["body"][:300]
    return report.subject


def assert_inert_title(title: str) -> None:
    """One visible line whose @mentions notify no one: a zero-width space after each `@`
    is the only hidden character."""
    assert hidden_in(title, allowed="\u200b") == []
    assert all(title[i - 1] == "@" for i, c in enumerate(title) if c == "\u200b")
    assert not MENTION.search(title)


def _watch(url: str, state: Path, repo: Path, *extra: str) -> Run:
    return tracker(
        "watch", "--repo", str(repo), "--post", REPO, "--api-url", url, "--state", str(state),
        "-a", "EAGLE3", *extra, env={"GITHUB_TOKEN": TOKEN},
    )  # fmt: skip


@pytest.fixture
def posted(repo: Path, tmp_path: Path) -> Iterator[tuple[State, Path, str]]:
    """(server, state file, URL) after one watch of v0.5.17 filed its issues on the fake
    GitHub."""
    state = tmp_path / "watch.json"
    with fake_github() as (url, server):
        run = _watch(url, state, repo, "--since", "v0.5.16", "--until", "v0.5.17")
        assert run.code == 0, run.stderr
        yield server, state, url


def test_issue_titles_and_bodies_posted_to_github_are_inert(
    posted: tuple[State, Path, str],
) -> None:
    server, _, _ = posted
    subjects = {subject_of(i) for i in server.issues}
    assert set(hostile.REQUIRED_MEMBERS) <= subjects
    for issue in server.issues:
        assert_inert_title(issue["title"])
        page = assert_markdown_inert(issue["body"], markers=2)
        assert page.text  # a body, not a comment swallowing it
    member_issues = [i for i in server.issues if "must now provide" in i["title"]]
    for issue in member_issues:
        member = subject_of(issue)
        if hidden_in(member) == []:
            assert member in rendered(issue["body"]).code


def test_each_issue_keeps_its_own_identity_whatever_its_member_is_named(
    posted: tuple[State, Path, str],
) -> None:
    server, _, _ = posted
    for issue in server.issues:
        report = report_in(issue["body"])
        assert report is not None, issue["body"][:300]
        assert fingerprint_in(issue["body"]) == report.fingerprint
        # The body's first two lines are the markers, nothing before them.
        first, second = issue["body"].split("\n")[:2]
        assert first.startswith("<!-- sglang-tracker:report={") and first.endswith("} -->")
        assert second == f"<!-- sglang-tracker:fingerprint={report.fingerprint} -->"
        assert "-->" not in first[: -len("-->")]
    assert "00000000deadbeef" not in {fingerprint_in(i["body"]) for i in server.issues}


def test_watching_again_files_nothing_and_the_fix_release_closes_every_issue(
    posted: tuple[State, Path, str], repo: Path
) -> None:
    server, state, url = posted
    filed = len(server.issues)
    assert filed >= len(hostile.REQUIRED_MEMBERS)
    again = _watch(url, state, repo, "--since", "v0.5.16", "--until", "v0.5.17")
    assert again.code == 0, again.stderr
    assert len(server.issues) == filed
    assert f"0 filed · {filed} already filed" in again.stdout

    fixed = _watch(url, state, repo, "--until", "v0.5.18")
    assert fixed.code == 0, fixed.stderr
    member_issues = {subject_of(i): i for i in server.issues if "must now provide" in i["title"]}
    for member in hostile.REQUIRED_MEMBERS:
        assert member_issues[member]["state"] == "closed", member
    comments = [c for bodies in server.comments.values() for c in bodies]
    assert comments
    for comment in comments:
        assert_markdown_inert(comment, markers=1)
    assert_terminal_safe(fixed.stdout)


# ------------------------------------------------------------------------ SARIF


def test_sarif_messages_are_plain_text_for_its_viewers(repo: Path, config: Path) -> None:
    run = tracker(
        "check", "v0.5.17", "-a", "EAGLE3", "--format", "sarif", "--config", str(config),
        "--repo", str(repo),
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert_terminal_safe(run.stdout)
    results = json.loads(run.stdout)["runs"][0]["results"]
    texts = [r["message"]["text"] for r in results]
    markup = [t for t in texts if "javascript" in t]
    assert markup
    for text in texts:
        assert hidden_in(text) == []
        # SARIF reads `[text](n)` as a link and `{n}` as a placeholder: escaped, doubled.
        assert not re.search(r"(?<!\\)\[", text)
        assert not re.search(r"(?<![{}])[{}](?![{}])", text)
    assert any("\\[click\\](javascript:alert(3))" in t for t in markup)
    assert any("rb}} -->" in t for t in texts)
    justifications = [s["justification"] for r in results for s in r.get("suppressions", [])]
    assert justifications
    assert all(hidden_in(j) == [] for j in justifications)


# ------------------------------------------------------------------ report, graphs


@pytest.fixture(scope="module")
def report_dir(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the whole history, written once for the tests below (in a cache of
    its own: the per-test isolation has not started when a module's fixture runs)."""
    out = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRACKER_CACHE_DIR", str(out / "cache"))
        run = tracker(
            "report", "v0.5.15..v0.5.18", "-a", "EAGLE3", "-o", str(out / "report"),
            "--graphs", "all", "--layout", "python", "--repo", str(repo),
        )  # fmt: skip
    assert run.code == 0, run.stderr
    return out / "report"


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_html_report_shows_every_name_as_text(report_dir: Path) -> None:
    page = _Elements()
    page.feed((report_dir / "index.html").read_text(encoding="utf-8"))
    tags = [tag for tag, _ in page.elements]
    assert "img" not in tags
    # The legend's own bold member name; the names' `<b>bold</b>` is no element.
    assert all(attrs == {"class": "t"} for tag, attrs in page.elements if tag == "b")
    # The page's own scripts only: its code and its data.
    scripts = [attrs for tag, attrs in page.elements if tag == "script"]
    assert len(scripts) == 2 and {a.get("type") for a in scripts} == {"application/json", None}
    assert not any(k.startswith("on") for _, attrs in page.elements for k in attrs)
    assert "<script>alert(1)</script>" in "".join(page.text)
    # Nothing hidden reaches the page: not in its text, nor in the data its script shows.
    shown = "".join(page.text)
    assert hidden_in(shown, allowed="\n\t") == []
    assert "term" + SHOWN_TERMINAL in shown


def test_every_svg_graph_is_well_formed_xml_showing_the_names(report_dir: Path) -> None:
    graphs = sorted((report_dir / "graphs").glob("*.svg"))
    assert graphs
    texts = []
    for graph in graphs:
        root = ET.parse(graph).getroot()  # raises on a character XML 1.0 refuses
        texts += ["".join(e.itertext()) for e in root.iter()]
    shown = "\n".join(texts)
    assert "term" + SHOWN_TERMINAL in shown
    assert hostile.MEMBER_MARKUP in shown
    assert hidden_in(shown) == []


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_json_keeps_every_name_exactly_and_shows_no_hidden_character_raw(repo: Path) -> None:
    run = tracker("interface", "v0.5.17", "-a", "EAGLE3", "--format", "json", "--repo", str(repo))
    assert run.code == 0, run.stderr
    assert_terminal_safe(run.stdout)
    members = {r["member"] for r in json.loads(run.stdout)["requirements"]}
    assert set(hostile.REQUIRED_MEMBERS) <= members
    assert hostile.MEMBER_TERMINAL in set(_strings(json.loads(run.stdout)))


def test_the_json_files_issues_and_watch_write_keep_names_exactly_and_nothing_raw(
    posted: tuple[State, Path, str], repo: Path, tmp_path: Path
) -> None:
    _, state, _ = posted
    out = tmp_path / "issues"
    run = tracker("issues", "v0.5.16", "v0.5.17", "-a", "EAGLE3", "--out", str(out),
                  "--repo", str(repo))  # fmt: skip
    assert run.code == 0, run.stderr
    for written in (out / "issues.json", state):
        text = written.read_text(encoding="utf-8")
        assert hidden_in(text) == [], written.name
        assert_terminal_safe(text)
    # The member a report is about, exactly (its title shows it written out).
    index = json.loads((out / "issues.json").read_text(encoding="utf-8"))
    assert hostile.MEMBER_TERMINAL in set(_strings(index))


# ------------------------------------------------------------------ the fix patch


def _apply(patch: Path, root: Path) -> None:
    done = subprocess.run(
        ["git", "apply", str(patch)], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_fix_patch_for_a_class_in_a_hostile_file_applies(repo: Path, tmp_path: Path) -> None:
    patch = tmp_path / "fix.patch"
    written = tracker("fix", ESC_WRAPPER, "--at", "v0.5.17", "-o", str(patch), "--repo", str(repo))
    # Written, and exit 1: the hostile members no inner model provides stay missing.
    assert written.code == 1, written.stderr
    assert "partial patch" in written.stderr
    # The path is quoted as git quotes it: the header holds nothing a terminal acts on.
    assert hidden_in(patch.read_text(encoding="utf-8")) == []
    printed = tracker("fix", ESC_WRAPPER, "--at", "v0.5.17", "--repo", str(repo))
    assert printed.stdout == patch.read_text(encoding="utf-8")
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(repo), str(checkout)], check=True)
    _apply(patch, checkout)
    fixed = (checkout / hostile.SRT / hostile.FILE_TERMINAL).read_text(encoding="utf-8")
    assert "    def get_embed_and_head(self):" in fixed


def test_a_form_feed_or_line_separator_in_a_model_file_does_not_move_the_fix(
    tmp_path: Path,
) -> None:
    wrapper = BASE["models/wrapper.py"].replace(
        "from sglang.srt.models.llama import LlamaForCausalLM\n",
        "\x0c\nfrom sglang.srt.models.llama import LlamaForCausalLM  # \u2028 \x1c\n",
    )
    root = write_tree(tmp_path / "sglang", {"models/wrapper.py": wrapper})
    patch = tmp_path / "fix.patch"
    run = tracker(
        "fix", "WrapperForConditionalGeneration", "--at", "local", "--source", f"dir:{root}",
        "-o", str(patch),
    )  # fmt: skip
    assert run.code == 0, run.stderr
    _apply(patch, root)
    fixed = ast.parse((root / hostile.SRT / "models/wrapper.py").read_text(encoding="utf-8"))
    cls = next(n for n in fixed.body if isinstance(n, ast.ClassDef))
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert {"__init__", "get_embed_and_head", "set_eagle3_layers_to_capture"} <= methods
