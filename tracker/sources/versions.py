"""Version specs (`v0.5.9`, `0.5.9`, `latest`, `v0.5.8..v0.5.12`) turned into tag names.

Every source lists its versions as tag names; this module is the one place that knows how
a user's spec maps onto such a list. Release order is PEP 440's (`0.5.8 < 0.5.8.post1 <
0.5.9 < 0.5.10`), never string order, and pre-releases stay out of lists unless asked for.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from packaging.version import InvalidVersion, Version

from tracker.common.errors import TrackerError, UnknownVersionError

LATEST = "latest"
RANGE_SEPARATOR = ".."


def parse_version(name: str) -> Version | None:
    """The release version a tag or bare version names, or None (`gateway-v0.1.0`, `main`)."""
    text = name.strip()
    # packaging accepts a leading "v" itself; it also accepts things such as "1" or
    # "v1.0-dev", which is fine: ordering them is still well defined.
    if not text or RANGE_SEPARATOR in text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def canonical_tag(spec: str) -> str | None:
    """The tag spelling of a version spec (`0.5.8-post1` -> `v0.5.8.post1`), or None when
    the spec is not a version (`latest`, a branch name, a range)."""
    version = parse_version(spec)
    return None if version is None else f"v{version}"


def sort_versions(names: Iterable[str], *, prereleases: bool = False) -> list[str]:
    """The names that parse as versions, oldest first, one name per version.

    When two names denote one version (`v0.5.9` and `0.5.9` both tagged), the `v` spelling
    wins so that output uses one form throughout.
    """
    chosen: dict[Version, str] = {}
    for name in names:
        version = parse_version(name)
        if version is None or (version.is_prerelease and not prereleases):
            continue
        previous = chosen.get(version)
        if previous is None or (name.startswith("v") and not previous.startswith("v")):
            chosen[version] = name
    return [chosen[version] for version in sorted(chosen)]


def is_range(spec: str) -> bool:
    return RANGE_SEPARATOR in spec


def match_version(spec: str, known: Sequence[str]) -> str:
    """The name in `known` that `spec` denotes: equal as a version, or the newest release for
    `latest`. Raises UnknownVersionError naming the nearest known versions."""
    if spec.strip().lower() == LATEST:
        releases = sort_versions(known)
        if not releases:
            raise UnknownVersionError("no release versions known, so `latest` names nothing")
        return releases[-1]
    wanted = parse_version(spec)
    if wanted is not None:
        # Pre-releases count here: asking for `v0.5.0rc1` by name should find its tag.
        for name in sort_versions(known, prereleases=True):
            if parse_version(name) == wanted:
                return name
    raise unknown_version(spec, known)


def expand_range(spec: str, known: Sequence[str]) -> list[str]:
    """Every release from A to B (inclusive, release order) for `A..B`; a one-item list for a
    single version spec. Both ends must be known; pre-releases inside the range are left out
    (an end that is one is kept, since it was asked for by name)."""
    if not is_range(spec):
        return [match_version(spec, known)]
    first_spec, last_spec = range_ends(spec)
    first = match_version(first_spec, known)
    last = match_version(last_spec, known)
    low, high = _version_of(first), _version_of(last)
    if low > high:
        raise TrackerError(f"empty range {spec}: {first} is newer than {last}")
    inside = [name for name in sort_versions(known) if low <= _version_of(name) <= high]
    # The ends may be pre-releases that sort_versions() dropped: put them back in place.
    return sort_versions({first, last, *inside}, prereleases=True)


def range_ends(spec: str) -> tuple[str, str]:
    """(A, B) of a range `A..B`; a malformed range is an error."""
    first_spec, _, last_spec = spec.partition(RANGE_SEPARATOR)
    if not first_spec.strip() or not last_spec.strip() or is_range(last_spec):
        raise TrackerError(f"malformed range {spec!r}: write it as A..B, e.g. v0.5.8..v0.5.12")
    return first_spec, last_spec


def nearest(spec: str, known: Sequence[str], n: int = 3) -> list[str]:
    """Up to `n` known names closest to `spec`: its neighbours in release order (oldest first)
    when it parses as a version, else the closest spellings (best first), else the newest
    releases."""
    releases = sort_versions(known)
    wanted = parse_version(spec)
    if wanted is not None and releases:
        position = sum(1 for name in releases if _version_of(name) < wanted)
        older, newer = releases[:position], releases[position:]
        picked: list[str] = []
        # Alternate older/newer neighbours so an unknown version in the middle of the list
        # shows what lies on both sides of it.
        while len(picked) < n and (older or newer):
            if older:
                picked.append(older.pop())
            if newer and len(picked) < n:
                picked.append(newer.pop(0))
        return sort_versions(picked)
    close = difflib.get_close_matches(spec, list(known), n=n, cutoff=0.6)
    if close:
        return close
    return releases[-n:]


def unknown_version(spec: str, known: Sequence[str]) -> UnknownVersionError:
    """The error for a spec that names nothing, with the nearest known versions in it."""
    near = nearest(spec, known)
    if not near:
        return UnknownVersionError(f"unknown version {spec}; the source lists no versions")
    return UnknownVersionError(f"unknown version {spec}; nearest known: {', '.join(near)}")


def _version_of(name: str) -> Version:
    version = parse_version(name)
    if version is None:  # only called on names that came out of sort_versions()
        raise ValueError(f"{name!r} is not a version")
    return version
