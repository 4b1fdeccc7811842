"""tracker.extract.parse on `__getattr__` bodies: which forwarding shapes become Forward
facts, and the facts a forward target's class is found from (local names, dicts of
classes)."""

from __future__ import annotations

from textwrap import dedent

import pytest

from tracker.extract.facts import Forward, ModuleFacts
from tracker.extract.parse import extract_facts

MODEL = "python/sglang/srt/models/wrapper.py"


def facts(source: str, *, full: bool = False) -> ModuleFacts:
    return extract_facts(MODEL, "cid", dedent(source).encode(), full=full)


def forward(source: str) -> Forward:
    found = facts(source).forwards
    assert len(found) == 1, found
    return found[0]


def test_a_plain_getattr_forward_names_its_target() -> None:
    fwd = forward("""
        class Wrapper:
            def __getattr__(self, name):
                return getattr(self.inner, name)
        """)
    assert fwd == Forward("Wrapper", 3, targets=("self.inner",))


def test_a_guard_that_answers_a_name_first_exempts_it() -> None:
    fwd = forward("""
        class MiniCPMV:
            def __getattr__(self, name):
                if name == "minicpmv":
                    return None
                return getattr(self.minicpmv, name)
        """)
    assert fwd.targets == ("self.minicpmv",) and fwd.exempt == ("minicpmv",)
    assert fwd.problem == ""


def test_guards_on_several_names_and_on_prefixes_exempt_each() -> None:
    fwd = forward("""
        class Wrapper:
            def __getattr__(self, item: str):
                if item in ("a", "b") or item.startswith("_"):
                    raise AttributeError(item)
                elif item == "c":
                    return 1
                return getattr(self.inner, item)
        """)
    assert fwd.exempt == ("a", "b", "_*", "c") and fwd.targets == ("self.inner",)


@pytest.mark.parametrize(
    "body",
    [
        """
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)
    """,
        """
        try:
            return getattr(self.inner, name)
        except AttributeError:
            return super().__getattr__(name)
    """,
    ],
)
def test_a_try_except_around_super_getattr_in_either_order_is_a_forward(body: str) -> None:
    source = "class Wrapper(nn.Module):\n    def __getattr__(self, name):" + dedent(body).replace(
        "\n", "\n        "
    )
    fwd = forward(source)
    assert fwd.targets == ("self.inner",) and fwd.tries_super and fwd.problem == ""


def test_a_getattr_that_returns_something_else_says_so() -> None:
    fwd = forward("""
        class Table:
            def __getattr__(self, name):
                return self._data[name]
        """)
    assert fwd.targets == () and fwd.problem == "returns self._data[name] (line 4)"


def test_a_branch_on_another_condition_keeps_its_forward_and_reports_other_returns() -> None:
    fwd = forward("""
        class Wrapper:
            def __getattr__(self, name):
                if self.ready:
                    return getattr(self.inner, name)
                return self.defaults[name]
        """)
    assert fwd.targets == ("self.inner",)
    assert fwd.problem == "returns self.defaults[name] (line 6)"


def test_getattr_on_another_name_is_not_a_forward_of_the_attribute() -> None:
    fwd = forward("""
        class Wrapper:
            def __getattr__(self, name):
                return getattr(self.inner, "x")
        """)
    assert fwd.targets == () and fwd.problem.startswith("returns getattr(self.inner")


def test_a_module_that_forwards_keeps_the_local_assignments_its_target_flows_through() -> None:
    module = facts("""
        _SUPPORT_VERSION = {(2, 6): MiniCPMV2_6, (4, 0): MiniCPMV4_0}


        class MiniCPMV:
            def __init__(self, config):
                instance_class = _SUPPORT_VERSION.get(config.version)
                minicpmv = instance_class(config=config)
                self.minicpmv = minicpmv

            def __getattr__(self, name):
                return getattr(self.minicpmv, name)
        """)
    targets = [(a.target, a.context.scope, a.value_call, a.value_names) for a in module.assigns]
    assert targets == [
        ("_SUPPORT_VERSION", "", None, ("MiniCPMV2_6", "MiniCPMV4_0")),
        ("instance_class", "MiniCPMV.__init__", "_SUPPORT_VERSION.get", ()),
        ("minicpmv", "MiniCPMV.__init__", "instance_class", ()),
        ("self.minicpmv", "MiniCPMV.__init__", None, ()),
    ]


def test_a_module_without_a_forward_read_for_definitions_keeps_no_locals() -> None:
    module = facts("""
        class Model:
            def __init__(self, config):
                inner = Inner(config)
                self.inner = inner
        """)
    assert [a.target for a in module.assigns] == ["self.inner"]


def test_a_full_read_has_forwards_too_and_no_duplicate_assignments() -> None:
    module = facts(
        """
        class Wrapper:
            def __init__(self):
                self.inner = Inner()

            def __getattr__(self, name):
                return getattr(self.inner, name)
        """,
        full=True,
    )
    assert [f.targets for f in module.forwards] == [("self.inner",)]
    assert [a.target for a in module.assigns] == ["self.inner"]


def test_a_module_level_getattr_is_not_a_class_forward() -> None:
    assert (
        facts("""
        def __getattr__(name):
            return getattr(_impl, name)
        """).forwards
        == ()
    )
