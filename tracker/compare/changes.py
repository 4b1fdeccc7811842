"""The vocabulary of what changes between versions: change kinds and model events, each
member carrying its metadata (message, breaking, sign, group, issue) so that the diff,
renderers, issues, changelog and templates derive from one table instead of re-listing
kind names. Values are the serialised strings (JSON, snapshots, issue markers)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ModelEvent(StrEnum):
    """What happened to a (model wrapper, algorithm) between two versions: one vocabulary
    for the matrix's events and the diff's `model_wrapper_*` kinds (`ChangeKind.event`)."""

    _value_: str
    description: str

    def __new__(cls, value: str, description: str) -> ModelEvent:
        member = str.__new__(cls, value)
        member._value_ = value
        member.description = description
        return member

    # The class is new, or the algorithm asks something of it for the first time.
    APPEARED = "appeared", "first checked at this version"
    # There since before the range's first version (a range that starts late).
    PRESENT = "present", "there since before the range"
    BROKE = "broke", "ok in the previous version, broken in this one"
    FIXED = "fixed", "broken in the previous version, ok in this one"
    REMOVED = "removed", "no longer registered"
    # Still broken, but the set of missing members changed.
    CHANGED = "changed", "still broken, missing other members"


@dataclass(frozen=True)
class IssueSpec:
    """How a change kind is filed: the title template ({algorithm}, {subject}, {role},
    {version}, {missing}, {hint}), the labels after the tracker's own ({role} filled in),
    and whether a later release can close it."""

    title: str
    labels: tuple[str, ...]
    closable: bool
    # The title when the class breaks the aux-hidden-state contract ({broken}: the rules).
    contract_title: str = ""
    # When every member the class lacks is one the algorithm did not require before (the
    # class never provided it: the interface moved, the class did not regress).
    new_requirement_title: str = ""
    new_requirement_labels: tuple[str, ...] = ()
    # When it lacks both: members it provided before ({lost}) and newly required ones
    # ({new}), each said for what it is.
    mixed_title: str = ""


@dataclass(frozen=True)
class KindInfo:
    """A change kind's metadata.

    `message` is a template: {subject}; {role} "target" or "draft"; {algorithm}; {was} the
    numbers of arguments of the calls before ("1", "0/1", "1+1kw"), {now} those after with
    their noun ("1 argument", "0/1 arguments").
    `area` is what changed: algorithm, member, output_field, config_key or model.
    `sign` is the direction: "+" added, "-" gone, "~" changed.
    `group` is where the change is listed: added/removed/changed for the interface, and
    broke/fixed/new_unsupported/new_supported/removed for model wrappers.
    `label` names the change in every report (the kind's identifier is for JSON).
    """

    message: str
    area: str
    sign: str
    group: str
    # The words reports put before the message, in every format ("new, unsupported").
    label: str
    breaking: bool = False
    event: ModelEvent | None = None
    # The aux-hidden-state contract (tracker.analysis.contract), not a member, broke or
    # was fixed: its own kind, so an issue about it is its own issue.
    contract: bool = False
    issue: IssueSpec | None = None
    # The label when the change is a new break (a new class lacking what its inner model
    # or a class beside it provides), if that differs.
    new_break_label: str = ""


_MODEL_LABELS = ("model-wrapper",)
_CONTRACT_TITLE = (
    "[{algorithm}] {subject} breaks the aux-hidden-state contract: {broken} "
    "(broken since {version})"
)
_INTERFACE_LABELS = ("interface-change", "{role}-model")


class ChangeKind(StrEnum):
    """Every kind of change `tracker diff` reports, named `<subject>_<change>`."""

    _value_: str
    info: KindInfo

    def __new__(cls, value: str, info: KindInfo) -> ChangeKind:
        member = str.__new__(cls, value)
        member._value_ = value
        member.info = info
        return member

    ALGORITHM_ADDED = (
        "algorithm_added",
        KindInfo("new algorithm {subject}", "algorithm", "+", "added", "new algorithm"),
    )
    ALGORITHM_REMOVED = (
        "algorithm_removed",
        KindInfo("algorithm {subject} is gone", "algorithm", "-", "removed", "algorithm gone"),
    )
    MEMBER_NOW_REQUIRED = (
        "member_now_required",
        KindInfo(
            "the {role} model must now provide {subject}",
            "member",
            "+",
            "added",
            "newly required",
            breaking=True,
            issue=IssueSpec(
                "[{algorithm}] the {role} model must now provide {subject} ({version})",
                _INTERFACE_LABELS,
                closable=True,
            ),
        ),
    )
    MEMBER_NOW_OPTIONAL = (
        "member_now_optional",
        KindInfo(
            "the {role} model's {subject} is now used when present",
            "member",
            "+",
            "added",
            "newly used when present",
        ),
    )
    MEMBER_NO_LONGER_REQUIRED = (
        "member_no_longer_required",
        KindInfo(
            "the {role} model no longer needs {subject}",
            "member",
            "-",
            "removed",
            "no longer required",
            # A removed member is news, not something a later release fixes.
            issue=IssueSpec(
                "[{algorithm}] the {role} model no longer needs {subject} ({version})",
                _INTERFACE_LABELS,
                closable=False,
            ),
        ),
    )
    MEMBER_NO_LONGER_USED = (
        "member_no_longer_used",
        KindInfo(
            "the {role} model's optional {subject} is no longer used",
            "member",
            "-",
            "removed",
            "no longer used",
        ),
    )
    MEMBER_BECAME_OPTIONAL = (
        "member_became_optional",
        KindInfo(
            "{subject} on the {role} model is no longer always required",
            "member",
            "~",
            "changed",
            "no longer always required",
        ),
    )
    MEMBER_BECAME_REQUIRED = (
        "member_became_required",
        KindInfo(
            "{subject} on the {role} model is now required",
            "member",
            "~",
            "changed",
            "now required",
            breaking=True,
            issue=IssueSpec(
                "[{algorithm}] {subject} on the {role} model is now required ({version})",
                _INTERFACE_LABELS,
                closable=True,
            ),
        ),
    )
    CALL_ARITY_CHANGED = (
        "call_arity_changed",
        KindInfo(
            "{subject} on the {role} model is now called with {now} (was {was})",
            "member",
            "~",
            "changed",
            "called differently",
            breaking=True,
        ),
    )
    OUTPUT_FIELD_ADDED = (
        "output_field_added",
        KindInfo(
            "the forward output's {subject} is now read",
            "output_field",
            "+",
            "added",
            "new output field",
        ),
    )
    OUTPUT_FIELD_REMOVED = (
        "output_field_removed",
        KindInfo(
            "the forward output's {subject} is no longer read",
            "output_field",
            "-",
            "removed",
            "output field no longer read",
        ),
    )
    CONFIG_KEY_ADDED = (
        "config_key_added",
        KindInfo(
            "configuration key {subject} is now read",
            "config_key",
            "+",
            "added",
            "new configuration key",
        ),
    )
    CONFIG_KEY_REMOVED = (
        "config_key_removed",
        KindInfo(
            "configuration key {subject} is no longer read",
            "config_key",
            "-",
            "removed",
            "configuration key no longer read",
        ),
    )
    MODEL_WRAPPER_BROKE = (
        "model_wrapper_broke",
        KindInfo(
            "{subject} no longer provides what {algorithm} requires",
            "model",
            "-",
            "broke",
            "broke",
            breaking=True,
            event=ModelEvent.BROKE,
            issue=IssueSpec(
                "[{algorithm}] {subject} no longer provides {missing} (broken since {version})",
                (*_MODEL_LABELS, "regression"),
                closable=True,
                contract_title=_CONTRACT_TITLE,
                new_requirement_title="[{algorithm}] {subject} lacks {missing}, newly required "
                "of the {role} model (broken since {version})",
                new_requirement_labels=(*_MODEL_LABELS, "interface-change"),
                mixed_title="[{algorithm}] {subject} no longer provides {lost} and lacks "
                "{new}, newly required of the {role} model (broken since {version})",
            ),
        ),
    )
    MODEL_WRAPPER_FIXED = (
        "model_wrapper_fixed",
        KindInfo(
            "{subject} now provides what {algorithm} requires",
            "model",
            "+",
            "fixed",
            "fixed",
            event=ModelEvent.FIXED,
        ),
    )
    MODEL_WRAPPER_CONTRACT_BROKE = (
        "model_wrapper_contract_broke",
        KindInfo(
            "{subject} provides the members but breaks {algorithm}'s aux-hidden-state contract",
            "model",
            "-",
            "broke",
            "broke, the aux-hidden-state contract",
            breaking=True,
            event=ModelEvent.BROKE,
            contract=True,
            issue=IssueSpec(
                _CONTRACT_TITLE,
                (*_MODEL_LABELS, "regression"),
                closable=True,
                contract_title=_CONTRACT_TITLE,
            ),
        ),
    )
    MODEL_WRAPPER_CONTRACT_FIXED = (
        "model_wrapper_contract_fixed",
        KindInfo(
            "{subject} no longer breaks {algorithm}'s aux-hidden-state contract",
            "model",
            "+",
            "fixed",
            "fixed, the aux-hidden-state contract",
            event=ModelEvent.FIXED,
            contract=True,
        ),
    )
    MODEL_WRAPPER_ADDED_UNSUPPORTED = (
        "model_wrapper_added_unsupported",
        KindInfo(
            "new class {subject} lacks what {algorithm} requires",
            "model",
            "+",
            "new_unsupported",
            "new, unsupported",
            event=ModelEvent.APPEARED,
            new_break_label="new, broken",
            issue=IssueSpec(
                "[{algorithm}] new {subject} lacks {missing}{hint} ({version})",
                (*_MODEL_LABELS, "new-model"),
                closable=True,
                contract_title="[{algorithm}] new {subject} breaks the "
                "aux-hidden-state contract: {broken} ({version})",
            ),
        ),
    )
    MODEL_WRAPPER_ADDED_SUPPORTED = (
        "model_wrapper_added_supported",
        KindInfo(
            "new class {subject} supports {algorithm}",
            "model",
            "+",
            "new_supported",
            "new, supported",
            event=ModelEvent.APPEARED,
        ),
    )
    MODEL_WRAPPER_REMOVED = (
        "model_wrapper_removed",
        KindInfo(
            "{subject} is no longer registered",
            "model",
            "-",
            "removed",
            "removed",
            event=ModelEvent.REMOVED,
        ),
    )

    @classmethod
    def of(cls, name: str) -> ChangeKind:
        """The kind serialised as `name` (ValueError for an unknown one)."""
        # Lookup by value; mypy reads the call against the members' __new__.
        return cls(name)  # type: ignore[call-arg]

    # The metadata as attributes, so that code and templates say `kind.breaking`.
    @property
    def message(self) -> str:
        return self.info.message

    @property
    def label(self) -> str:
        return self.info.label

    def label_for(self, new_break: bool) -> str:
        """The label of a change of this kind, which may be a new break."""
        return self.info.new_break_label if new_break and self.info.new_break_label else self.label

    @property
    def area(self) -> str:
        return self.info.area

    @property
    def sign(self) -> str:
        return self.info.sign

    @property
    def group(self) -> str:
        return self.info.group

    @property
    def breaking(self) -> bool:
        return self.info.breaking

    @property
    def event(self) -> ModelEvent | None:
        return self.info.event

    @property
    def contract(self) -> bool:
        return self.info.contract

    @property
    def issue(self) -> IssueSpec | None:
        return self.info.issue

    @property
    def model_event(self) -> bool:
        """A model wrapper's event, as opposed to a change of the interface."""
        return self.info.area == "model"


def kinds_where(**metadata: object) -> frozenset[ChangeKind]:
    """The kinds whose metadata has every given value: `kinds_where(group="broke")`."""
    return frozenset(
        k for k in ChangeKind if all(getattr(k, name) == want for name, want in metadata.items())
    )


# Groups of model events in the order reports list them.
MODEL_GROUPS: tuple[str, ...] = tuple(dict.fromkeys(k.group for k in ChangeKind if k.model_event))
