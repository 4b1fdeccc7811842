"""What external base classes provide (`torch.nn.Module`, `transformers.PreTrainedModel`, ...):
the shipped inventory, read at the package versions one SGLang version pins.

SGLang models inherit from classes of other packages. Their members are not guessed: the
inventory (`tracker/data/external_bases.json`) is built by `tools/build_base_inventory.py`
from the packages' real source, with this tool's own extraction, at every version an SGLang
release pins. A lookup names the package version it used, and says so when that is not the
version pinned (the nearest inventoried one, or a release's pin for a tree that pins none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from packaging.version import InvalidVersion, Version

from tracker.common.errors import TrackerError
from tracker.common.resources import data_file
from tracker.sources.base import Pins

SCHEMA = "sglang-tracker/external-bases@1"
INVENTORY = "external_bases.json"

# Bases outside every inventoried package that contribute no model members.
EMPTY_BASES = frozenset({"abc.ABC", "typing.Generic", "typing.Protocol", "object", "enum.Enum"})
# What every Python object has, from `object` itself: never a member a model must provide.
OBJECT_MEMBERS = frozenset(
    {
        "__class__",
        "__delattr__",
        "__dict__",
        "__dir__",
        "__doc__",
        "__eq__",
        "__format__",
        "__ge__",
        "__getattribute__",
        "__getstate__",
        "__gt__",
        "__hash__",
        "__init__",
        "__init_subclass__",
        "__le__",
        "__lt__",
        "__module__",
        "__ne__",
        "__new__",
        "__reduce__",
        "__reduce_ex__",
        "__repr__",
        "__setattr__",
        "__sizeof__",
        "__str__",
        "__subclasshook__",
        "__weakref__",
    }
)


@dataclass(frozen=True)
class PackageRelease:
    """One version of one package: its classes, and the names SGLang reaches them by."""

    classes: dict[str, tuple[frozenset[str], tuple[str, ...]]]  # class -> (members, bases)
    names: dict[str, str]  # "torch.nn.Module" -> "torch.nn.modules.module.Module"


@dataclass(frozen=True)
class Inventory:
    packages: dict[str, dict[str, PackageRelease]]  # package -> version -> release
    releases: dict[str, dict[str, str]]  # SGLang tag -> package -> pinned version


@dataclass(frozen=True)
class ExternalClass:
    """An external base as one SGLang version sees it."""

    name: str  # as SGLang reaches it: "transformers.PreTrainedModel"
    label: str  # "transformers.PreTrainedModel (transformers 4.57.1)"
    members: frozenset[str]  # every member it provides, inherited ones included
    outside: tuple[str, ...]  # its bases the inventory does not hold


class InventoryError(TrackerError):
    """The shipped inventory is damaged: a packaging error, named with the entry."""


@cache
def load_inventory() -> Inventory:
    path = data_file(INVENTORY)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InventoryError(f"cannot read {path}: {exc}") from None
    return parse_inventory(doc, str(path))


def parse_inventory(doc: Any, where: str) -> Inventory:
    """Validate and load the inventory document (see tools/build_base_inventory.py)."""

    def fail(message: str) -> InventoryError:
        return InventoryError(f"{where}: {message}")

    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise fail(f"not an inventory (schema is not {SCHEMA})")
    unknown = set(doc) - {"schema", "built_by", "member_sets", "packages", "releases"}
    if unknown:
        raise fail(f"unknown keys {sorted(unknown)}")
    sets = doc.get("member_sets")
    if not isinstance(sets, dict) or not all(
        isinstance(v, list) and all(isinstance(m, str) for m in v) for v in sets.values()
    ):
        raise fail("member_sets must map ids to lists of member names")
    frozen = {k: frozenset(v) for k, v in sets.items()}
    packages: dict[str, dict[str, PackageRelease]] = {}
    for package, versions in _mapping(doc.get("packages"), "packages", fail).items():
        for version, entry in _mapping(versions, f"packages.{package}", fail).items():
            at = f"packages.{package}.{version}"
            _version(version, at, fail)
            entry = _mapping(entry, at, fail)
            if set(entry) != {"classes", "names"}:
                raise fail(f"{at} must have exactly the keys classes, names")
            classes: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
            for cls, spec in _mapping(entry["classes"], f"{at}.classes", fail).items():
                spec = _mapping(spec, f"{at}.classes.{cls}", fail)
                members, bases = spec.get("members"), spec.get("bases", [])
                if set(spec) - {"members", "bases"} or members not in frozen:
                    raise fail(f"{at}.classes.{cls}: needs a known member set id and bases")
                if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
                    raise fail(f"{at}.classes.{cls}.bases must be a list of names")
                classes[cls] = (frozen[members], tuple(bases))
            names = _mapping(entry["names"], f"{at}.names", fail)
            for alias, target in names.items():
                if target not in classes:
                    raise fail(f"{at}.names.{alias} names {target}, which has no entry")
            packages.setdefault(package, {})[version] = PackageRelease(classes, dict(names))
    releases: dict[str, dict[str, str]] = {}
    for tag, pins in _mapping(doc.get("releases"), "releases", fail).items():
        _version(tag, f"releases.{tag}", fail)
        pins = _mapping(pins, f"releases.{tag}", fail)
        if not all(isinstance(v, str) for v in pins.values()):
            raise fail(f"releases.{tag}: versions must be strings")
        releases[tag] = dict(pins)
    return Inventory(packages, releases)


def _mapping(value: Any, at: str, fail: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(f"{at} must be a mapping")
    return value


def _version(text: str, at: str, fail: Any) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise fail(f"{at}: {text!r} is not a version") from None


def _nearest(wanted: Version, known: list[str]) -> str:
    """The newest of `known` not after `wanted`, else the oldest after it."""
    ordered = sorted(known, key=Version)
    before = [k for k in ordered if Version(k) <= wanted]
    return before[-1] if before else ordered[0]


class ExternalBases:
    """The inventory at the package versions one SGLang version pins."""

    def __init__(self, inventory: Inventory, pins: Pins) -> None:
        self.inventory = inventory
        self.pins = pins
        # package -> (inventoried version used, how it was chosen when not the pin itself)
        self.chosen: dict[str, tuple[str, str]] = {}
        self._found: dict[str, ExternalClass | None] = {}
        for package, versions in inventory.packages.items():
            if versions:
                self.chosen[package] = self._choose(package, sorted(versions, key=Version))

    def _choose(self, package: str, known: list[str]) -> tuple[str, str]:
        pin = self.pins.get(package)
        note = ""
        if pin is None:
            release, pin = self._release_pin(package)
            if pin is None:
                return known[-1], "no release pin known: newest inventoried"
            note = f"not pinned here: {release}'s pin"
        try:
            wanted = Version(pin)
        except InvalidVersion:
            return known[-1], f"pin {pin} unreadable: newest inventoried"
        if pin in known:
            return pin, note
        used = _nearest(wanted, known)
        return used, (f"{note}; " if note else "") + f"nearest to the pinned {pin}"

    def _release_pin(self, package: str) -> tuple[str, str | None]:
        """A tree that pins nothing (a checkout without metadata): the nearest release's
        pin by version, or the newest release's when the tree names no release."""
        tags = [t for t, p in self.inventory.releases.items() if package in p]
        if not tags:
            return "", None
        try:
            wanted = Version(self.pins.release) if self.pins.release else None
        except InvalidVersion:
            wanted = None
        tag = _nearest(wanted, tags) if wanted is not None else max(tags, key=Version)
        return tag, self.inventory.releases[tag][package]

    def lookup(self, name: str) -> ExternalClass | None:
        """The external class SGLang names `name` (`torch.nn.Module`), or None when it is
        outside the inventory."""
        if name not in self._found:
            self._found[name] = self._lookup(name, ())
        return self._found[name]

    def _lookup(self, name: str, seen: tuple[str, ...]) -> ExternalClass | None:
        package = name.partition(".")[0]
        if package not in self.chosen or name in seen:
            return None
        version, note = self.chosen[package]
        release = self.inventory.packages[package][version]
        canonical = release.names.get(name, name)
        if canonical not in release.classes:
            return None
        members, bases = release.classes[canonical]
        outside: list[str] = []
        for base in bases:
            if base in EMPTY_BASES:
                continue
            found = self._lookup(base, (*seen, name))
            if found is None:
                outside.append(base)
                continue
            members = members | found.members
            outside.extend(found.outside)
        detail = f"{package} {version}" + (f", {note}" if note else "")
        return ExternalClass(name, f"{name} ({detail})", members, tuple(outside))


@lru_cache(maxsize=16)
def bases_for(pins: Pins) -> ExternalBases:
    return ExternalBases(load_inventory(), pins)


def judged_at(pins: Pins) -> tuple[tuple[str, str, str], ...]:
    """What the analysis reads of `pins`: per inventoried package, the version its classes
    are judged at and the note that says how it was chosen. `ExternalBases` answers from
    these alone, so pins equal here give the same answers wherever they were read (a
    wheel's METADATA, a checkout's pyproject.toml), and pins of packages outside the
    inventory change nothing."""
    chosen = bases_for(pins).chosen
    return tuple(sorted((package, version, note) for package, (version, note) in chosen.items()))


@lru_cache(maxsize=16)
def every_model_has(pins: Pins) -> frozenset[str]:
    """What every model has whatever its class: `object`'s members and `torch.nn.Module`'s
    at the torch version `pins` name (nearest inventoried; its `forward` raises, so it is
    not among them). Using one asks nothing of a model class."""
    module = bases_for(pins).lookup("torch.nn.Module")
    return OBJECT_MEMBERS | (module.members if module is not None else frozenset())


__all__ = [
    "EMPTY_BASES",
    "OBJECT_MEMBERS",
    "ExternalBases",
    "ExternalClass",
    "Inventory",
    "InventoryError",
    "PackageRelease",
    "bases_for",
    "every_model_has",
    "judged_at",
    "load_inventory",
    "parse_inventory",
]
