"""Which files of a version the analysis reads, and the index built from their facts.

Reading all of `srt/` (2,000+ files in late releases) would be wasted work: the interface
lives in the speculative package, the model executor and the scheduler, the wrappers in
`models/`. Other modules are pulled in only when a class there is a base of a loaded
class (a model deriving from a shared mixin, say).

Model files (and those base-class modules) are read for their definitions only: provision
needs classes, methods, assignments and imports, not every call and attribute read of a
model's forward pass, which is most of the extraction work. The cost: a helper in such a
module that a worker calls is not followed into (role rules apply to the speculative and
executor packages anyway).
"""

from __future__ import annotations

from collections.abc import Callable

from tracker.analysis.index import VersionIndex
from tracker.extract.store import Progress, load_facts, parse_ahead, recent
from tracker.sources.base import SRT_PREFIX, VersionTree

SEED_DIRS = ("speculative/", "model_executor/", "models/", "arg_groups/fields/")
# model_config.py and the speculative argument hooks say which checkpoint a draft worker
# loads when no draft path is given, and which algorithms refuse to start so; the server
# options' defaults (ServerArgs, and from v0.5.16 on the namespaces of arg_groups/fields/)
# tell which worker a release builds unless the user turns something on.
SEED_FILES = (
    "managers/scheduler.py",
    "managers/tp_worker.py",
    "server_args.py",
    "configs/model_config.py",
    "arg_groups/speculative_hook.py",
)
# Read in full; every other file the analysis loads is read for its definitions only.
FULL_DIRS = ("speculative/", "model_executor/", "managers/")


def reads_in_full(path: str) -> bool:
    rel = path.removeprefix(SRT_PREFIX)
    return rel.startswith(FULL_DIRS) or rel in SEED_FILES


def parse_seeds_ahead(tree: VersionTree) -> int:
    """Start parsing `tree`'s seed files on the worker pool (tracker.extract.store)."""
    paths = seed_paths(tree)
    return parse_ahead(tree, paths, frozenset(p for p in paths if not reads_in_full(p)))


def seed_paths(tree: VersionTree) -> list[str]:
    out = []
    for path in tree.files:
        if not path.startswith(SRT_PREFIX):
            continue
        rel = path[len(SRT_PREFIX) :]
        if rel.startswith(SEED_DIRS) or rel in SEED_FILES or rel.startswith("managers/tp_worker"):
            out.append(path)
    return sorted(out)


def module_path(tree: VersionTree, module: str) -> str | None:
    base = "python/" + module.replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if candidate in tree.files:
            return candidate
    return None


def load_index(
    tree: VersionTree,
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
    after_seeds: Callable[[], None] | None = None,
) -> VersionIndex:
    """The index of `tree`: its seed files, then the modules their classes' bases are in.
    `after_seeds` runs once the seed files are read (the worker pool is free again)."""
    recent.next_version()
    paths = seed_paths(tree)
    facts = load_facts(
        tree,
        paths,
        progress=progress,
        definitions_only=frozenset(p for p in paths if not reads_in_full(p)),
    )
    if after_seeds is not None:
        after_seeds()
    index = VersionIndex(facts, tree.pins())
    pending = list(index.classes)
    for _ in range(6):
        wanted: set[str] = set()
        waiting: list[str] = []
        for cls in pending:
            for res in index.bases(cls):
                if res.external and res.external.startswith("sglang."):
                    parts = res.external.split(".")
                    for cut in range(len(parts) - 1, 1, -1):
                        found = module_path(tree, ".".join(parts[:cut]))
                        if found is not None:
                            if found not in facts:
                                wanted.add(found)
                                waiting.append(cls)
                            break
        if not wanted:
            return index
        if on_phase is not None:
            on_phase(f"reading {len(wanted)} more modules for base classes")
        before = set(index.classes)
        more = load_facts(
            tree,
            sorted(wanted),
            definitions_only=frozenset(p for p in wanted if not reads_in_full(p)),
        )
        facts.update(more)
        index.add_modules(more)
        # A package that only re-exports (`evs/__init__.py`: `from .evs_module import EVS`)
        # brings no class: the classes waiting on it are looked at again.
        pending = waiting + [c for c in index.classes if c not in before]
    return index
