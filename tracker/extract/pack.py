"""The facts pack: the facts of every released file the analysis reads, shipped with the tool.

Keyed like the facts cache, by content: a file of a `dir:` tree, a git commit or a fork whose
bytes are those of a released blob (same git blob id) takes its facts from here and is never
parsed. The pack also carries named JSON documents that the stages above write and read
(which files each release has, what its analysis read): opaque here.

Layout (all JSON is UTF-8, zlib-compressed):

    b"TFPACK1\n"  header length (8 bytes, big endian)  header  sha256(header) (32 bytes)
    body: one zlib stream per group and per named document, at the offsets the header gives

The header holds the key (query-set hash, FACTS_FORMAT, codec version and row layout), the
group of each (pass, content id), and each group's and document's offset, length and
sha256. A group holds a few versions of one path: one JSON row a line, each distinct row
once, after a first line saying which rows make each entry. A pack whose key is not this
tool's is ignored (never misread, as a stale snapshot is); one whose header or group fails
its hash is rejected, with one warning, and the files are parsed instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracker.common.atomic import atomic_writer
from tracker.common.resources import data_file
from tracker.extract import codec
from tracker.extract.facts import FACTS_FORMAT, ModuleFacts

log = logging.getLogger(__name__)

MAGIC = b"TFPACK1\n"
PACK_NAME = "facts.pack"
_DIGEST = 32


class PackError(Exception):
    """The pack cannot be used; the message says why, in a few words."""


def pack_key() -> dict[str, Any]:
    """What facts in a pack must have been made by to be this tool's facts."""
    from tracker.extract.identity import query_set_hash

    layout = hashlib.sha256(codec.layout_digest().encode()).hexdigest()[:16]
    return {
        "query_set": query_set_hash(),
        "facts_format": FACTS_FORMAT,
        "codec": codec.CODEC_VERSION,
        "layout": layout,
    }


# (offset, length, sha256 hex) of one blob in the body
Where = tuple[int, int, str]


@dataclass
class Pack:
    """An opened pack: the header in memory, groups read from the file on demand."""

    path: Path
    key: dict[str, Any]
    # By pass ("full" or "defs"), then content id: the number of the group holding it.
    entries: dict[str, dict[str, int]]
    groups: list[Where]
    documents: dict[str, Where]
    body_start: int
    _data: mmap.mmap | None = field(default=None, repr=False)

    def has(self, content_id: str, full: bool) -> bool:
        return content_id in self.entries["full" if full else "defs"]

    def facts(self, content_id: str, full: bool) -> ModuleFacts | None:
        """The facts of one blob read in that pass, None when the pack has none.
        Raises PackError when the entry is damaged."""
        kind = "full" if full else "defs"
        number = self.entries[kind].get(content_id)
        if number is None:
            return None
        lines = self._raw(self.groups[number], f"entry {content_id}").split(b"\n")
        try:
            runs = json.loads(lines[0])[f"{kind}:{content_id}"]
            wanted = b",".join(
                b",".join(lines[at : at + count])
                for at, count in zip(runs[::2], runs[1::2], strict=True)
            )
            facts = codec.decode(json.loads(b"[" + wanted + b"]"))
        except (codec.CodecError, IndexError, KeyError, TypeError, ValueError) as exc:
            raise PackError(f"entry {content_id} cannot be read ({exc})") from None
        if facts.content_id != content_id or facts.definitions_only == full:
            raise PackError(f"entry {content_id} holds the facts of another file")
        return facts

    def document(self, name: str) -> Any:
        """A named document, None when the pack has none. Raises PackError when damaged."""
        where = self.documents.get(name)
        return None if where is None else self._json(where, name)

    def _json(self, where: Where, what: str) -> Any:
        try:
            return json.loads(self._raw(where, what))
        except ValueError as exc:
            raise PackError(f"{what} cannot be read ({exc})") from None

    def _raw(self, where: Where, what: str) -> bytes:
        offset, length, digest = where
        start = self.body_start + offset
        raw = self._bytes()[start : start + length]
        if hashlib.sha256(raw).hexdigest() != digest:
            raise PackError(f"{what} fails its checksum")
        try:
            return zlib.decompress(raw)
        except zlib.error as exc:
            raise PackError(f"{what} cannot be read ({exc})") from None

    def _bytes(self) -> mmap.mmap:
        # Mapped, not read: a command touches a few MB of the file's 20, and the page cache
        # holds them across runs. A slice of the map is bytes.
        if self._data is None:
            try:
                with self.path.open("rb") as handle:
                    self._data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:  # ValueError: an empty file
                raise PackError(f"cannot be read ({exc})") from None
        return self._data


def open_pack(path: Path) -> Pack | None:
    """The pack at `path`; None when there is none or it was made for other facts (another
    query set, facts format or codec). Raises PackError when it is damaged."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or not head.startswith(MAGIC):
                raise PackError("not a facts pack")
            size = int.from_bytes(head[len(MAGIC) :], "big")
            header = handle.read(size)
            digest = handle.read(_DIGEST)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PackError(f"cannot be read ({exc.strerror or exc})") from None
    if len(header) != size or hashlib.sha256(header).digest() != digest:
        raise PackError("its header fails its checksum")
    try:
        doc = json.loads(zlib.decompress(header))
        key = doc["key"]
    except (zlib.error, ValueError, KeyError, TypeError) as exc:
        raise PackError(f"its header cannot be read ({exc})") from None
    if key != pack_key():
        log.debug("facts pack %s is for other facts (%s); not used", path, key)
        return None
    try:
        entries = {kind: dict(doc["entries"][kind]) for kind in _PASSES}
        groups = [_where(w) for w in doc["groups"]]
        documents = {name: _where(w) for name, w in doc["documents"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PackError(f"its header cannot be read ({exc})") from None
    return Pack(path, key, entries, groups, documents, len(MAGIC) + 8 + size + _DIGEST)


_PASSES = ("full", "defs")


def _where(value: Any) -> Where:
    offset, length, digest = value
    return int(offset), int(length), str(digest)


def _runs(ids: list[int]) -> list[int]:
    """[3, 4, 5, 9] -> [3, 3, 9, 1]: start, count of each run of consecutive ids."""
    out: list[int] = []
    for i in ids:
        if out and out[-2] + out[-1] == i:
            out[-1] += 1
        else:
            out += [i, 1]
    return out


# How many versions of a path one group holds at most: reading an entry reads its group, so
# a group holding every version of a busy file (server_args.py changes in every release)
# would cost several times the entry; a new group every few versions bounds that, for
# about a third more bytes than one group per path.
GROUP_SPAN = 4


def write_pack(
    path: Path,
    facts: Iterable[ModuleFacts],
    documents: Mapping[str, Any],
    span: int = GROUP_SPAN,
) -> int:
    """Write a pack of `facts` (one entry per content id and pass; repeats are skipped) and
    the named JSON `documents`; returns the number of facts entries.

    Consecutive versions of one path (in the order given: release order, for the shipped
    pack), up to `span` of them in both passes, form a group that stores each distinct row
    once (tracker.extract.codec writes an untouched part of a file as the same rows in
    every version): a file's versions cost little more than one of them."""
    by_path: dict[str, dict[tuple[str, bool], ModuleFacts]] = {}
    for item in facts:
        by_path.setdefault(item.path, {}).setdefault((item.content_id, item.definitions_only), item)
    entries: dict[str, dict[str, int]] = {kind: {} for kind in _PASSES}
    body: list[bytes] = []
    size = [0]  # of the body so far

    def add(data: bytes) -> Where:
        raw = zlib.compress(data, 9)
        offset, size[0] = size[0], size[0] + len(raw)
        body.append(raw)
        return offset, len(raw), hashlib.sha256(raw).hexdigest()

    groups: list[Where] = []
    for item_path in sorted(by_path):
        versions = [(k, v) for k, v in by_path[item_path].items()]
        for first in range(0, len(versions), span):
            # Row ids count from 1: line 0 of the group says which rows make each entry.
            table: dict[str, int] = {}
            runs: dict[str, list[int]] = {}
            for (cid, defs_only), item in versions[first : first + span]:
                kind = "defs" if defs_only else "full"
                if cid in entries[kind]:
                    continue  # the same blob at another path
                ids = [table.setdefault(_dumps(row), len(table) + 1) for row in codec.encode(item)]
                entries[kind][cid] = len(groups)
                runs[f"{kind}:{cid}"] = _runs(ids)
            if table:
                # One row a line (JSON text has no raw newline): a reader parses only the
                # rows of the entry it wants.
                groups.append(add("\n".join([_dumps(runs), *table]).encode()))
    where = {name: add(_dumps(documents[name]).encode()) for name in sorted(documents)}
    doc = {"key": pack_key(), "entries": entries, "groups": groups, "documents": where}
    header = zlib.compress(_dumps(doc).encode(), 9)
    with atomic_writer(path) as out:
        out.write(MAGIC + len(header).to_bytes(8, "big") + header)
        out.write(hashlib.sha256(header).digest())
        for raw in body:
            out.write(raw)
    return sum(len(e) for e in entries.values())


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------------ the shipped one


def shipped_pack_path() -> Path:
    """Where the pack ships: inside the package, beside the other data files."""
    return data_file(PACK_NAME)


_shipped: list[Pack | None] = []


def shipped_pack() -> Pack | None:
    """The shipped pack, opened once per process; None when there is none, it is for other
    facts, or it is damaged (said once, in one warning)."""
    if not _shipped:
        path = shipped_pack_path()
        try:
            _shipped.append(open_pack(path))
        except PackError as exc:
            reject(exc)
    return _shipped[0] if _shipped else None


def reject(exc: PackError) -> None:
    """Stop using the shipped pack for the rest of the process, saying why once."""
    log.warning("the shipped facts pack is damaged (%s); parsing the files instead", exc)
    _shipped[:] = [None]


def forget_shipped() -> None:
    """Open the shipped pack again on next use (tests that swap it)."""
    _shipped.clear()
