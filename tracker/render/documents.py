"""Reports as documents (plain dicts, the JSON contract) and their text/markdown renders.

Every report is first built as a document; JSON output is that document, and the text and
markdown renders are jinja2 templates over the same document (templates in
`tracker/render/templates/`, overridable with `--template-dir`). One place decides what a report
says; the templates only decide how it looks.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracker.analysis.compat import Compat, ModelCheck, natural_role
from tracker.analysis.contract import ContractFinding
from tracker.analysis.interface import FieldUse, Interface, Requirement
from tracker.common.errors import TrackerError
from tracker.compare.changes import kinds_where
from tracker.compare.diff import Change, Diff, rank
from tracker.compare.matrix import check_row, status_counts

# The JSON forms of sites, requirements, field uses and provisions are the snapshot's, in
# full; re-exported here beside the other document parts.
from tracker.compare.snapshot import field_doc as field_doc
from tracker.compare.snapshot import provision_doc as provision_doc
from tracker.compare.snapshot import requirement_doc as requirement_doc
from tracker.compare.snapshot import site_doc as site_doc
from tracker.compare.support import Support, support_of
from tracker.render.inert import (
    json_text,
    md_block,
    md_code,
    md_prose,
    md_text,
    md_url_part,
    visible,
)
from tracker.sources.base import SRT_PREFIX

log = logging.getLogger(__name__)

DEFAULT_LINK = "https://github.com/sgl-project/sglang/blob/{tag}/{path}#L{line}"
# What the compiled templates in the cache depend on besides their source: entries compiled
# with other environment options are never loaded.
COMPILED_AS = "autoescape,finalize"
FORMATS = ("text", "md", "json")


@dataclass(frozen=True)
class RenderOptions:
    link_pattern: str = DEFAULT_LINK
    template_dir: Path | None = None
    show_all: bool = False  # list every model event, not only the notable ones


def short_path(path: str) -> str:
    return path.removeprefix(SRT_PREFIX)


def check_doc(c: ModelCheck) -> dict[str, Any]:
    return {
        "model": c.model,
        "path": c.path,
        "kind": c.kind,
        "kind_evidence": c.kind_evidence,
        "algorithm": c.algorithm,
        "role": c.role,
        "role_evidence": c.role_evidence,
        "status": c.status,
        "missing": list(c.missing),
        "unknown": list(c.unknown),
        "provisions": [provision_doc(p) for p in c.provisions],
        "delegations": [
            {
                "member": d.member,
                "attribute": d.attribute,
                "inner_class": d.inner_class,
                "provided_by": d.provided_by,
                "also": list(d.also),
                "lacking": list(d.lacking),
            }
            for d in c.delegations
        ],
        # Only on an accepted break (tracker.toml): the break is still reported as such.
        **({"accepted": {"reason": c.accepted}} if c.accepted else {}),
        "contract": [finding_doc(f) for f in c.contract],
        **({"contract_unknown": c.contract_unknown} if c.contract_unknown else {}),
        # Members needed only under a condition that the class lacks: not a break.
        "at_risk": [{"member": r.member, "condition": r.condition} for r in c.at_risk],
        # Why the check is unknown whatever its members: a file that does not parse.
        **({"problem": c.problem} if c.problem else {}),
    }


def finding_doc(f: ContractFinding) -> dict[str, Any]:
    """An aux-hidden-state contract finding: its rule, what is wrong, and the sites (the
    setter's write, the decoder's read, the failing unpack or call)."""
    return {
        "rule": f.rule,
        "message": f.message,
        "headline": f.headline,
        "text": f.render(),
        "sites": [{"path": s.path, "line": s.line, "what": s.what} for s in f.sites],
    }


# ------------------------------------------------------------------------ documents


def interface_document(
    itf: Interface, source: str, algorithms: Iterable[str], role: str | None
) -> dict[str, Any]:
    chosen = [a for a in itf.algorithms if a in set(algorithms)]
    return {
        "schema": "sglang-tracker/interface@2",
        "version": itf.version,
        "source": source,
        "algorithms": chosen,
        "role": role,
        "workers": {a: list(itf.workers.get(a, ())) for a in chosen},
        # The other names a user may pass for each algorithm (`NEXTN` runs as EAGLE).
        "aliases": {
            a: {"runs_as": runs_as, "site": site}
            for a, (runs_as, site) in sorted(itf.aliases.items())
            if runs_as in chosen
        },
        "requirements": [
            requirement_doc(r)
            for r in itf.requirements
            if r.algorithm in chosen and (role is None or r.role == role)
        ],
        "output_fields": [field_doc(f) for f in itf.output_fields if f.algorithm in chosen],
        "config_keys": [field_doc(f) for f in itf.config_keys if f.algorithm in chosen],
        # Which classes each algorithm may load as its draft model, and the evidence.
        "draft_models": {
            a: {"mode": d.mode, "summary": d.summary, "evidence": d.evidence}
            for a, d in itf.draft_models.items()
            if a in chosen and role in (None, "draft")
        },
        "warnings": sorted(
            w for w in itf.warnings if not _names_other_algorithm(w, chosen, itf.algorithms)
        ),
    }


def _names_other_algorithm(warning: str, chosen: list[str], every: tuple[str, ...]) -> bool:
    words = set(warning.replace(",", " ").split())
    return bool(words & set(every)) and not words & set(chosen)


def change_doc(change: Change) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": change.kind,
        "algorithm": change.algorithm,
        "subject": change.subject,
        "role": change.role,
        "message": change.message,
        "breaking": change.breaking,
        "notable": change.notable,
        "new_break": change.new_break,
    }
    for side, value in (("old", change.old), ("new", change.new)):
        if isinstance(value, Requirement):
            out[side] = requirement_doc(value)
        elif isinstance(value, FieldUse):
            out[side] = field_doc(value)
        elif isinstance(value, ModelCheck):
            out[side] = check_doc(value)
    return out


def diff_document(d: Diff, source: str, fix_options: str = "") -> dict[str, Any]:
    """`fix_options`: how the suggested `tracker fix` names the new version (default
    `--at NEW`; a directory source names itself)."""
    changes = sorted(d.changes, key=rank)
    counts: dict[str, int] = {}
    for c in changes:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    return {
        "schema": "sglang-tracker/diff@2",
        "from": d.old_version,
        "to": d.new_version,
        "source": source,
        "algorithms": list(d.algorithms),
        "changes": [change_doc(c) for c in changes],
        "unchanged": [
            {
                **requirement_doc(new),
                "previous_sites": [site_doc(s) for s in old.sites],
                "moved_from": _moved_from(old, new),
            }
            for old, new in d.unchanged
        ],
        "counts": dict(sorted(counts.items())),
        "fix_options": fix_options or f"--at {d.new_version}",
    }


def _moved_from(old: Requirement, new: Requirement) -> dict[str, Any] | None:
    """Where the new primary site stood before, when it moved: the old site in the same
    function of the same file (else the same file); when its file held none, the old
    primary site, if no site is left in that site's file (it moved to another file)."""
    primary = new.sites[0]
    same_function = [
        s for s in old.sites if s.path == primary.path and s.function == primary.function
    ]
    same_file = [s for s in old.sites if s.path == primary.path]
    candidates = same_function or same_file
    if not candidates:
        before = old.sites[0]
        if any(s.path == before.path for s in new.sites):
            return None  # a new site elsewhere, the old one still there: not a move
        return site_doc(before)
    previous = candidates[0]
    if previous.line == primary.line:
        return None
    return site_doc(previous)


def check_document(
    compat: Compat,
    checks: list[ModelCheck],
    requirements_version: str,
    models_version: str,
    source: str,
) -> dict[str, Any]:
    """`checks` (the rows shown) of `compat`; which broken ones never took the algorithm
    up is judged against every check of `compat` (tracker.compare.support)."""
    return {
        "schema": "sglang-tracker/check@3",
        "requirements_version": requirements_version,
        "models_version": models_version,
        "source": source,
        "checks": [check_doc(c) for c in checks],
        "counts": status_counts(c.status for c in checks),
        # The classes that work but lack a member needed only under a condition.
        "at_risk": sum(1 for c in checks if c.at_risk and c.status == "ok"),
        "unsupported": [
            {"model": c.model, "algorithm": c.algorithm, "role": c.role}
            for c in checks
            if support_of(c, compat) is Support.UNSUPPORTED
        ],
    }


# -------------------------------------------------------------------------- output


def document_json(doc: dict[str, Any]) -> str:
    return json_text(json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)) + "\n"


def render(
    template: str, fmt: str, doc: dict[str, Any], options: RenderOptions | None = None
) -> str:
    """`template` is the report name (`diff`), `fmt` one of text/md/json."""
    if fmt == "json":
        return document_json(doc)
    import jinja2

    options = options or RenderOptions()
    env = _environment(options, fmt)
    suffix = "md" if fmt == "md" else "txt"
    name = f"{template}.{suffix}.j2"
    try:
        text: str = env.get_template(name).render(doc=doc, options=options)
    except jinja2.TemplateSyntaxError as exc:
        where = exc.filename or exc.name or name
        raise TrackerError(f"template {where}, line {exc.lineno}: {exc.message}") from None
    except jinja2.TemplateError as exc:
        # A user's template asking for what the document has not (StrictUndefined).
        where = _template_file(env, name)
        raise TrackerError(f"template {where}: {exc.message or exc}") from None
    return text.rstrip() + "\n"


def _template_file(env: Any, name: str) -> str:
    try:
        return str(env.get_template(name).filename or name)
    except Exception:  # the name is what there is to say
        return name


def _environment(options: RenderOptions, fmt: str) -> Any:
    """The templates' environment for text or markdown. Every value a template prints
    (`{{ ... }}`) is made inert for that output by `finalize` (tracker.render.inert): the
    documents carry text from the analysed code and git, and no template has to remember
    it. What a filter below returns, or a macro, is already inert (Markup) and printed as
    it is; autoescape is on only so that jinja2 keeps that mark, never for HTML."""
    import jinja2
    from markupsafe import Markup

    text = fmt != "md"
    inert = visible if text else md_text

    def finalize(value: Any) -> Markup:
        return value if isinstance(value, Markup) else Markup(inert(str(value)))

    loaders: list[jinja2.BaseLoader] = []
    if options.template_dir is not None:
        loaders.append(jinja2.FileSystemLoader(str(options.template_dir)))
    loaders.append(jinja2.PackageLoader("tracker.render", "templates"))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=True,
        finalize=finalize,
        bytecode_cache=_template_cache(),
    )
    env.filters["short"] = short_path
    env.filters["site"] = lambda s: f"{short_path(s['path'])}:{s['line']}"
    env.filters["link"] = lambda s, tag: Markup(_link(options.link_pattern, s, tag, text))

    def site_link(site: dict[str, Any], tag: str) -> Markup:
        """`[path:line](url)`; with the default (upstream) pattern, a version that is not a
        release tag (a directory, a commit) has no page there: the site as code instead."""
        label = f"{short_path(site['path'])}:{site['line']}"
        if options.link_pattern == DEFAULT_LINK and not _RELEASE_TAG.fullmatch(tag):
            return Markup(md_code(label))
        return Markup(f"[{inert(label)}]({_link(options.link_pattern, site, tag, text)})")

    env.filters["sitelink"] = site_link
    env.filters["call"] = _call_text
    # A code span (markdown) and a block of lines (a fenced code block in markdown).
    env.filters["code"] = lambda v, in_table=False: Markup(
        visible(str(v)) if text else md_code(str(v), in_table)
    )
    env.filters["block"] = lambda v, info="": Markup(
        "\n".join(visible(line) for line in str(v).split("\n")) if text else md_block(str(v), info)
    )
    if text:
        # Columns are as wide as what is shown: a name is measured and padded once its
        # hidden characters are written out.
        env.filters["length"] = lambda v: len(visible(v)) if isinstance(v, str) else len(v)
        env.filters["format"] = lambda pattern, *args: Markup(
            str(pattern) % tuple(visible(a) if isinstance(a, str) else a for a in args)
        )
    # A sentence with `names` in backticks: code spans in markdown.
    env.filters["prose"] = lambda v: Markup(visible(str(v)) if text else md_prose(str(v)))
    env.filters["plural"] = plural
    # The mark before each check: ✓ ok, ✗ broken, · unsupported, ? unknown.
    env.globals["marks"] = {s.value: s.mark for s in Support}
    env.filters["column_labels"] = column_labels
    # Kept for templates of earlier versions; the built-in ones say `c.kind.model_event`.
    env.tests["model_event"] = lambda kind: kind in kinds_where(model_event=True)
    return env


# A release tag upstream has (v0.5.9, v0.4.1.post4, v0.5.0rc2).
_RELEASE_TAG = re.compile(r"v\d+(\.\d+)*((\.post|rc|\.dev)\d+)*")


def _link(pattern: str, site: dict[str, Any], tag: str, text: bool) -> str:
    """A site's URL. In markdown the path and tag are percent-encoded: a space or a
    parenthesis in a file name would end the link, and the rest of it would render."""
    if text:
        return visible(pattern.format(tag=tag, path=site["path"], line=site["line"]))
    return pattern.format(tag=md_url_part(tag), path=md_url_part(site["path"]), line=site["line"])


def _template_cache() -> Any:
    """Compiled templates kept in the cache folder: compiling them is a sixth of a warm
    `tracker diff`. Keyed by template source, so an edited template recompiles."""
    import jinja2

    from tracker.common.cachedir import cache_root

    folder = cache_root() / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only cache: compile every time
    cache_class: type[jinja2.FileSystemBytecodeCache] = _tolerant_cache()
    return cache_class(str(folder))


def _tolerant_cache() -> Any:
    """jinja2's file cache of compiled templates, except that an entry it cannot write (a
    full disk) or read costs the compile, not the run: as the facts cache does.

    Made anew for each environment, from the jinja2 module imported now: a class kept from
    an earlier import would keep that import's `Bucket` (seen when a test session restores
    `sys.modules`). Making it costs microseconds."""
    import jinja2

    class TolerantBytecodeCache(jinja2.FileSystemBytecodeCache):
        warned = False  # once per report, not once per template it includes

        def get_cache_key(self, name: str, filename: str | None = None) -> str:
            # The compiled code depends on the environment's options as well as on the
            # source: code compiled without `finalize` would print untrusted text raw.
            return super().get_cache_key(f"{COMPILED_AS}|{name}", filename)

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError as exc:
                if not self.warned:
                    self.warned = True
                    log.warning(
                        "could not write to the template cache in %s (%s); carrying on without it",
                        self.directory,
                        exc.strerror or exc,
                    )

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except OSError:
                bucket.reset()

    return TolerantBytecodeCache


def plural(count: int, noun: str, many: str = "") -> str:
    """ "1 version", "2 versions" ("1 class", "2 classes" with `many`)."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def column_labels(names: list[str]) -> dict[str, Any]:
    """Column labels for a grid of versions, one character a column: the prefix every
    name shares (`v0.5.`, said once), and the rest of each name written downwards, one
    character per line, with `.postN` shortened to `pN` (`v0.5.10.post1` is `10p1` under
    `v0.5.`)."""
    low, high = min(names, default=""), max(names, default="")
    same = next((i for i, (a, b) in enumerate(zip(low, high, strict=False)) if a != b), len(low))
    # Whole components only: v0.5.1 and v0.5.10 share "v0.5.", not "v0.5.1".
    prefix = low[: low.rfind(".", 0, same) + 1]
    shown = [n.removeprefix(prefix).replace(".post", "p") or n for n in names]
    height = max((len(n) for n in shown), default=0)
    lines = ["".join(n[i] if i < len(n) else " " for n in shown).rstrip() for i in range(height)]
    return {"prefix": prefix, "lines": lines}


def _call_text(req: dict[str, Any]) -> str:
    if req["kind"] != "call":
        return str(req["member"])
    arities = req.get("arities") or []
    shown = "/".join(arities) if arities else ""
    # One member, both ways: `model.x()` here and `model.x` (read, not called) there.
    also = " (also read as an attribute)" if "attribute" in req.get("uses", ()) else ""
    return f"{req['member']}({shown}){also}"


def matrix_document(m: Any, source: str) -> dict[str, Any]:
    from tracker.compare.matrix import Matrix

    assert isinstance(m, Matrix)
    return {
        "schema": "sglang-tracker/matrix@2",
        "algorithm": m.algorithm,
        "source": source,
        "versions": m.versions,
        "models": [
            {
                "model": model,
                "class": m.classes.get(model, model),
                "role": m.roles.get(model, ""),
                "kind": m.kinds.get(model, ""),
                "cells": [m.cells[model][v] for v in m.versions],
                "missing": {v: list(miss) for v, miss in m.missing[model].items() if miss},
            }
            for model in m.models
        ],
        "events": [event_doc(e) for e in m.events],
        "counts": {v: m.counts(v) for v in m.versions},
    }


def event_doc(e: Any) -> dict[str, Any]:
    return {
        "model": e.model,
        "algorithm": e.algorithm,
        "version": e.version,
        "kind": e.kind,
        "status": e.status,
        "members": list(e.members),
        "previous": e.previous,
        **({"contract_sites": list(e.contract_sites)} if e.contract_sites else {}),
    }


def history_document(model: str, kind: str, matrices: list[Any], source: str) -> dict[str, Any]:
    events = [event_doc(e) for m in matrices for e in m.events if e.model == model]
    rows = []
    for m in matrices:
        if model in m.cells:
            rows.append(
                {
                    "algorithm": m.algorithm,
                    "versions": m.versions,
                    "cells": [m.cells[model][v] for v in m.versions],
                }
            )
    return {
        "schema": "sglang-tracker/history@2",
        "model": model,
        "kind": kind,
        "source": source,
        "events": events,
        "rows": rows,
    }


def accepted_rows(
    compats: Iterable[Compat],
    algorithms: Iterable[str],
    roles: Iterable[str] | None = None,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """The accepted breaks over several versions (oldest first), one row per matrix row
    (`KimiK25ForConditionalGeneration`, or `... (as draft)`), algorithm and reason, with
    the versions it was accepted at: for the matrix and the history, whose cells hold only
    a status."""
    wanted, role_set = set(algorithms), set(roles) if roles is not None else None
    rows: dict[tuple[str, str, str], list[str]] = {}
    for compat in compats:
        for c in compat.checks:
            if not c.accepted or c.algorithm not in wanted or (model and c.model != model):
                continue
            # Without roles (a history), each class in its kind's own role, as its rows.
            if c.role not in (role_set if role_set is not None else {natural_role(c.kind)}):
                continue
            rows.setdefault((check_row(c), c.algorithm, c.accepted), []).append(compat.version)
    return [
        {"model": m, "algorithm": a, "reason": r, "versions": versions}
        for (m, a, r), versions in sorted(rows.items())
    ]
