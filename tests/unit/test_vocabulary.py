"""The kinds are enums carrying their metadata: every kind says what the renderers,
issues and changelog need of it, and serialises as the string it always was."""

from __future__ import annotations

import json
import string

import pytest

from tracker.analysis.interface import _status
from tracker.analysis.vocabulary import Guard, RequirementStatus
from tracker.compare.changes import MODEL_GROUPS, ChangeKind, ModelEvent


@pytest.mark.parametrize("kind", list(ChangeKind))
def test_a_kind_serialises_as_its_name_and_is_found_by_it(kind: ChangeKind) -> None:
    assert json.dumps({kind: [kind]}) == json.dumps({kind.value: [kind.value]})
    assert f"{kind}" == kind.value
    assert ChangeKind.of(kind.value) is kind


@pytest.mark.parametrize("kind", [k for k in ChangeKind if k.model_event])
def test_every_model_wrapper_kind_names_its_model_event_and_report_group(
    kind: ChangeKind,
) -> None:
    assert isinstance(kind.event, ModelEvent)
    assert kind.group in MODEL_GROUPS
    # A wrapper that broke is breaking; one that appears, is fixed or goes is not.
    assert kind.breaking == (kind.event is ModelEvent.BROKE)


@pytest.mark.parametrize("kind", [k for k in ChangeKind if not k.model_event])
def test_an_interface_kind_is_added_removed_or_changed_and_has_no_model_event(
    kind: ChangeKind,
) -> None:
    assert kind.event is None
    assert (kind.group, kind.sign) in {("added", "+"), ("removed", "-"), ("changed", "~")}


def test_an_unknown_kind_name_is_refused() -> None:
    with pytest.raises(ValueError, match="no_such_kind"):
        ChangeKind.of("no_such_kind")


FIELDS = {"algorithm", "subject", "role", "version", "missing", "hint", "broken"}


@pytest.mark.parametrize("kind", [k for k in ChangeKind if k.issue is not None])
def test_an_issue_title_uses_only_the_fields_an_issue_has(kind: ChangeKind) -> None:
    assert kind.issue is not None
    for title in (kind.issue.title, kind.issue.contract_title):
        used = {name for _, name, _, _ in string.Formatter().parse(title) if name}
        assert used <= FIELDS, title
    assert kind.issue.labels


def test_a_message_uses_only_the_fields_a_change_has() -> None:
    for kind in ChangeKind:
        used = {name for _, name, _, _ in string.Formatter().parse(kind.message) if name}
        assert used <= {"subject", "role", "algorithm", "was", "now"}, kind


def test_a_guard_that_tolerates_the_absence_makes_the_member_optional() -> None:
    for guard in Guard:
        expected = RequirementStatus.OPTIONAL if guard.tolerates else RequirementStatus.REQUIRED
        assert _status(True, guard) == expected
    assert _status(True, "") == RequirementStatus.REQUIRED
    assert _status(False, "") == RequirementStatus.CONDITIONAL
