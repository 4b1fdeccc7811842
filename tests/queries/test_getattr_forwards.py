"""Fixture for queries/getattr_forwards.scm: `__getattr__` methods, their name parameter and
body."""

from __future__ import annotations

SOURCE = """\
class MiniCPMV:
    def __getattr__(self, name):
        if name == "minicpmv":
            return None
        return getattr(self.minicpmv, name)


class Typed(nn.Module):
    def __getattr__(self, attr: str):
        return getattr(self.inner, attr)
"""

EXPECTED = [
    ("forward.body", 'if name == "minicpmv":…return getattr(self.minicpmv, name)', 3),
    ("forward.body", "return getattr(self.inner, attr)", 10),
    ("forward.definition", "def __getattr__(self, attr: str):…return getattr(self.inner, attr)", 9),
    ("forward.definition", "def __getattr__(self, name):…return getattr(self.minicpmv, name)", 2),
    ("forward.method", "__getattr__", 2),
    ("forward.method", "__getattr__", 9),
    ("forward.param", "attr: str", 9),
    ("forward.param", "name", 2),
]


def test_getattr_forwards_capture_the_name_parameter_and_the_body(captures) -> None:
    assert captures("getattr_forwards", SOURCE) == EXPECTED


def test_other_methods_and_getattribute_are_not_captured(captures) -> None:
    source = """\
    class A:
        def __getattribute__(self, name):
            return object.__getattribute__(self, name)

        def get(self, name):
            return getattr(self.inner, name)

        def __getattr__(self):
            return None
    """
    assert captures("getattr_forwards", source) == []


def test_the_fixture_exercises_every_capture_of_the_query(capture_names) -> None:
    assert {name for name, _, _ in EXPECTED} == capture_names("getattr_forwards")
