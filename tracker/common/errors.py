"""Errors the user can act on; the CLI turns each into one line on stderr and exit code 2."""


class TrackerError(Exception):
    """Bad usage or bad input: the message is shown as is, without a traceback."""

    exit_code = 2


class UnknownVersionError(TrackerError):
    """A version spec names nothing the source has."""


class NoSpeculativeDecodingError(UnknownVersionError):
    """A release older than the first one with a speculative worker: nothing to analyse."""


class SourceError(TrackerError):
    """A source (git repository, package index, directory) cannot give what was asked."""


class NotSGLangError(SourceError):
    """The tree exists but holds no `python/sglang/srt/` (or a release's `sglang/srt/`)."""
