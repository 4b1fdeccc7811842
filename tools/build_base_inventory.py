"""Build `tracker/data/external_bases.json`: the members of every external base class SGLang's
models inherit from, read from the packages' real source at the versions SGLang pins.

    python tools/build_base_inventory.py [RANGE] [--cache DIR]

1. For each SGLang release (default: every release the package index lists), read the
   `torch` and `transformers` pins from its wheel's `Requires-Dist`, and the external bases
   of every class in `sglang.srt.models` (and the modules it loads for base classes).
2. For each pinned version of each package, fetch the wheel with
   `pip download --no-deps --only-binary=:all:` into a cache directory (for torch a small
   macOS wheel: its Python source is the same as the CUDA wheel's), and run this tool's own
   extraction (tracker.extract.parse facts, tracker.analysis.index names and MRO) over the
   modules needed.
3. Write, per package version and class, the member names it provides, inherited members
   included (dunders kept, `_private` names left out: no requirement names one), and its
   bases in other packages (`transformers.PreTrainedModel` -> `torch.nn.Module`).

A member whose definition only raises `NotImplementedError` (nn.Module's `forward`, bound to
`_forward_unimplemented`) is not provided: a model without its own would crash on it.
`self.x = ...` and `super().__setattr__("x", ...)` in `__init__` count as instance members
(other methods set theirs only when called).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path

from packaging.version import Version

from tracker.analysis.externals import SCHEMA, parse_inventory
from tracker.analysis.index import VersionIndex, key
from tracker.analysis.loader import load_index
from tracker.common.cachedir import cache_root
from tracker.common.resources import data_file
from tracker.extract.facts import ModuleFacts
from tracker.extract.parse import extract_facts
from tracker.sources import open_source
from tracker.sources.base import content_id
from tracker.sources.versions import expand_range

ROOT = Path(__file__).resolve().parent.parent
# Package -> extra `pip download` arguments. torch: a small CPU wheel, never the CUDA one.
PACKAGES: dict[str, tuple[str, ...]] = {
    "transformers": (),
    "torch": (
        "--platform",
        "macosx_14_0_arm64",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
    ),
}
# Inventoried whatever the scan finds: the mixin generative models share.
ALWAYS = ("transformers.GenerationMixin",)


# ----------------------------------------------------------------------- SGLang side


def scan_releases(tags: list[str]) -> tuple[dict[str, dict[str, str]], dict[str, set[str]]]:
    """(tag -> package -> pinned version, package -> external base names SGLang uses)."""
    source = open_source("pypi", None, ROOT)
    pins: dict[str, dict[str, str]] = {}
    wanted: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for name in ALWAYS:
        wanted[name.partition(".")[0]].add(name)
    for tag in tags:
        tree = source.tree(tag)
        found = tree.pins()
        pins[tag] = {p: v for p in PACKAGES if (v := found.get(p)) is not None}
        index = load_index(tree)
        for cls in index.classes:
            if ".models." not in f".{index.module_of(cls)}.":
                continue
            for res in index.mro(cls)[1]:
                package = (res.external or "").partition(".")[0]
                if package in wanted:
                    wanted[package].add(res.external or "")
        print(f"{tag}: {pins[tag]}", file=sys.stderr)
    return pins, wanted


# ---------------------------------------------------------------------- package side


def download(package: str, version: str, cache: Path) -> Path:
    target = cache / f"{package}-{version}"
    found = sorted(target.glob("*.whl"))
    if found:
        return found[0]
    target.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        *PACKAGES[package],
        "-d",
        str(target),
        f"{package}=={version}",
    ]
    subprocess.run(command, check=True, capture_output=True, text=True)
    found = sorted(target.glob("*.whl"))
    if not found:
        raise SystemExit(f"pip downloaded no wheel for {package}=={version}")
    return found[0]


class PackageIndex:
    """One package wheel's modules, parsed on demand into a VersionIndex."""

    def __init__(self, wheel: Path, package: str) -> None:
        self.zip = zipfile.ZipFile(wheel)
        self.package = package
        self.paths: dict[str, str] = {}  # module -> member path
        for member in self.zip.namelist():
            if member.startswith(f"{package}/") and member.endswith(".py"):
                self.paths[ModuleFacts(member, "").module_name] = member
        self.index = VersionIndex({})
        self.sources: dict[str, bytes] = {}

    def load(self, dotted: str) -> bool:
        """Load the longest module prefix of `dotted` not loaded yet; False when none."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in self.paths:
                if module in self.index.modules:
                    return False
                path = self.paths[module]
                data = self.zip.read(path)
                self.sources[module] = data
                facts = extract_facts(path, content_id(data), data, full=True)
                self.index.add_modules({path: facts})
                return True
        return False

    def resolve(self, dotted: str) -> str | None:
        """The class key `dotted` names, loading the modules on the way."""
        for _ in range(40):
            module = self._loaded_prefix(dotted)
            if module is None:
                if not self.load(dotted):
                    return None
                continue
            rest = dotted[len(module) + 1 :]
            found = self.index.resolve_class(module, rest) if rest else None
            if found is not None and found.symbol is not None:
                return found.symbol
            target = found.external if found is not None else None
            if target and target.startswith(f"{self.package}.") and self.load(target):
                continue
            aliased = self._alias(target or dotted)
            if aliased is not None:
                return aliased
            # Not bound by a plain import: behind `from .modules import *` (torch.nn), or
            # deep below lazy `__init__` star imports (transformers.models.*): the one
            # module below `module` that defines the class, then star imports.
            defining = self._defining_module(module, dotted.rpartition(".")[2])
            if defining is not None:
                self.load(defining)
                symbol = key(defining, dotted.rpartition(".")[2])
                return symbol if symbol in self.index.classes else None
            if not self._load_star_imports():
                return None
        return None

    def _alias(self, dotted: str) -> str | None:
        """`PretrainedConfig = PreTrainedConfig` at module level: the class it names."""
        module, _, name = dotted.rpartition(".")
        facts = self.index.modules.get(module)
        for a in facts.assigns if facts is not None else ():
            if (
                a.target == name
                and not a.context.scope
                and a.value is not None
                and a.value.op == "ref"
                and a.value.text != name
            ):
                found = self.index.resolve_class(module, a.value.text)
                return found.symbol
        return None

    def _defining_module(self, package: str, name: str) -> str | None:
        """The only module below `package` that defines class `name` at top level."""
        pattern = re.compile(rb"^class " + re.escape(name.encode()) + rb"\b", re.MULTILINE)
        found = [
            m
            for m, path in self.paths.items()
            if m.startswith(f"{package}.") and pattern.search(self.zip.read(path))
        ]
        return found[0] if len(found) == 1 else None

    def _load_star_imports(self) -> bool:
        loaded = False
        for module, facts in list(self.index.modules.items()):
            is_package = facts.path.endswith("__init__.py")
            for imp in facts.imports:
                if imp.name == "*":
                    target = VersionIndex.absolute_module(module, imp, is_package)
                    if target in self.paths and target not in self.index.modules:
                        loaded = self.load(target) or loaded
        return loaded

    def _loaded_prefix(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.paths:
                if module not in self.index.modules:
                    self.load(module)
                return module
        return None

    def complete_mro(self, key: str) -> None:
        """Load the modules of in-package bases until the MRO no longer grows."""
        for _ in range(40):
            pending = [
                r.external
                for r in self.index.mro(key)[1]
                if r.external and r.external.startswith(f"{self.package}.")
            ]
            if not any(self.load(name) for name in pending):
                return

    def members(self, key: str) -> tuple[set[str], list[str]]:
        """(members `key` provides, inherited ones included; its bases in other packages)."""
        self.complete_mro(key)
        mro, external = self.index.mro(key)
        first: dict[str, tuple[str, str]] = {}  # member -> (module, function it runs)
        for cls in mro:
            info = self.index.classes[cls]
            facts = self.index.modules[info.module]
            qual = info.facts.qualname
            for name, fn in info.methods.items():
                first.setdefault(name, (info.module, fn.qualname))
            for a in facts.assigns:
                if a.context.scope == qual and "." not in a.target and a.target.isidentifier():
                    value = a.value.text if a.value is not None and a.value.op == "ref" else ""
                    first.setdefault(a.target, (info.module, value))
            # Attributes `__init__` sets: other methods set theirs only when called
            # (PreTrainedModel.set_decoder assigns `self.model`, which no model must have).
            for a in facts.assigns:
                if (
                    a.context.scope == f"{qual}.__init__"
                    and a.target.startswith("self.")
                    and a.target[5:].isidentifier()
                ):
                    first.setdefault(a.target[5:], (info.module, ""))
            for call in facts.calls:
                if (
                    call.name == "__setattr__"
                    and call.receiver in ("super()", "object")
                    and call.context.scope == f"{qual}.__init__"
                    and call.args
                ):
                    literal = call.args[-2] if call.receiver == "object" else call.args[0]
                    if literal[:1] in "'\"" and literal[1:-1].isidentifier():
                        first.setdefault(literal[1:-1], (info.module, ""))
        members = {
            name
            for name, (module, fn) in first.items()
            if not (name.startswith("_") and not name.endswith("__"))
            and not (fn and fn in raising_stubs(self.sources[module]))
        }
        outside = sorted(
            r.external or r.text
            for r in external
            if not (r.external or "").startswith(f"{self.package}.")
        )
        return members, outside


_STUBS: dict[bytes, frozenset[str]] = {}


def raising_stubs(source: bytes) -> frozenset[str]:
    """Qualified names of the functions whose whole body raises NotImplementedError."""
    if source not in _STUBS:
        out: set[str] = set()

        def visit(nodes: Iterable[ast.stmt], prefix: str) -> None:
            for node in nodes:
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    body = [
                        s
                        for s in node.body
                        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
                    ]
                    if len(body) == 1 and isinstance(body[0], ast.Raise) and _not_impl(body[0]):
                        out.add(f"{prefix}{node.name}")

        visit(ast.parse(source).body, "")
        _STUBS[source] = frozenset(out)
    return _STUBS[source]


def _not_impl(node: ast.Raise) -> bool:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


# ---------------------------------------------------------------------------- output


def build(tags: list[str], cache: Path) -> dict[str, object]:
    releases, wanted = scan_releases(tags)
    sets: dict[str, list[str]] = {}
    packages: dict[str, dict[str, object]] = {}
    # transformers first: the torch bases its classes name are inventoried with torch.
    for package in PACKAGES:
        versions = sorted({p[package] for p in releases.values() if package in p}, key=Version)
        for version in versions:
            wheel = download(package, version, cache)
            pkg = PackageIndex(wheel, package)
            classes: dict[str, dict[str, object]] = {}
            names: dict[str, str] = {}
            for name in sorted(wanted[package]):
                key = pkg.resolve(name)
                if key is None:
                    continue  # not in this version of the package
                members, outside = pkg.members(key)
                module, _, qual = key.partition(":")
                canonical = f"{module}.{qual}"
                set_id = hashlib.sha256("\n".join(sorted(members)).encode()).hexdigest()[:10]
                sets[set_id] = sorted(members)
                classes[canonical] = {"members": set_id, "bases": outside}
                if name != canonical:
                    names[name] = canonical
                for base in outside:
                    other = base.partition(".")[0]
                    if other in wanted and other != package:
                        wanted[other].add(base)
            packages.setdefault(package, {})[version] = {"classes": classes, "names": names}
            print(f"{package} {version}: {len(classes)} classes", file=sys.stderr)
    return {
        "schema": SCHEMA,
        "built_by": "tools/build_base_inventory.py",
        "member_sets": sets,
        "packages": packages,
        "releases": {tag: pins for tag, pins in releases.items() if pins},
    }


def dump(doc: dict[str, object]) -> str:
    """Sorted, indented JSON with each member set on one line: thousands of names would
    otherwise take a line each."""
    sets = doc["member_sets"]
    assert isinstance(sets, dict)
    rest = json.dumps(
        {k: v for k, v in doc.items() if k != "member_sets"}, indent=1, sort_keys=True
    )
    lines = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(sets.items()))
    # "member_sets" sorts before "packages" and "releases", after "built_by".
    head, sep, tail = rest.partition(',\n "packages"')
    return f'{head},\n "member_sets": {{\n{lines}\n }}{sep}{tail}\n'


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("range", nargs="?", help="SGLang releases, e.g. v0.4.10..v0.5.23")
    parser.add_argument(
        "--cache",
        type=Path,
        default=cache_root() / "inventory-wheels",
        help="where the package wheels are kept (never the repository)",
    )
    parser.add_argument("--output", type=Path, default=data_file("external_bases.json"))
    args = parser.parse_args(argv)
    known = open_source("pypi", None, ROOT).versions()
    tags = expand_range(args.range, known) if args.range else known
    doc = build(tags, args.cache)
    parse_inventory(doc, "the built inventory")  # what the tool will load must validate
    args.output.write_text(dump(doc), encoding="utf-8")
    print(f"wrote {args.output} ({args.output.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
