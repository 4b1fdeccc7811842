"""Filing the tracker's issues on GitHub, exactly once, and closing them when fixed.

The REST API is reached through httpx with explicit retries: 5xx answers, dropped
connections and rate limits (429, or 403 with `Retry-After` / `X-RateLimit-Remaining: 0`)
are retried with bounded backoff; a bad token, a missing repository or a refused permission
stops at once with a one-line TrackerError. Existing issues are found by listing the
repository's issues that carry the tracker's label, open and closed, page by page (the
search API is eventually consistent and would let a duplicate through), and matching the
fingerprint in their bodies. A create whose answer was lost is checked against that list
before it is tried again.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpx

from tracker import __version__
from tracker.common.errors import TrackerError
from tracker.release.issues import TRACKER_LABEL, fingerprint_in

DEFAULT_API_URL = "https://api.github.com"
TOKEN_ENV = "GITHUB_TOKEN"

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# A server's error message is shown in a one-line error: no longer than this.
_MESSAGE_LIMIT = 200


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


@dataclass(frozen=True)
class RemoteIssue:
    number: int
    title: str
    state: str  # "open" | "closed"
    body: str
    labels: tuple[str, ...]
    url: str

    @property
    def fingerprint(self) -> str | None:
        return fingerprint_in(self.body)


class _Ambiguous(Exception):
    """A request that changes state failed in a way that may or may not have applied it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class GitHubClient:
    """The few issue endpoints the tracker needs, on one repository."""

    def __init__(
        self,
        repo: str,
        token: str | None,
        api_url: str | None = None,
        *,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] | None = None,
        max_attempts: int = 5,
        max_wait: float = 120.0,
        base_delay: float = 1.0,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        read_only: bool = False,
    ) -> None:
        if not _REPO.fullmatch(repo):
            raise TrackerError(f"--post wants OWNER/REPO, not {repo!r}")
        token = clean_token(token)
        if not token and not read_only:
            raise TrackerError(f"set {TOKEN_ENV} to a token that can write issues on {repo}")
        # A dry run reads (a public repository needs no token for that) and can never
        # write: every request other than GET is refused here, whatever the caller does.
        self.read_only = read_only
        base = (api_url or DEFAULT_API_URL).rstrip("/")
        parts = urlsplit(base)
        # Credentials written into the URL are secrets too: never part of a message.
        self._display = _without_credentials(parts)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TrackerError(
                f"the GitHub API URL must be http(s)://HOST[/PATH], not {self._display!r}"
            )
        if token and parts.scheme == "http" and not _is_loopback(parts.hostname):
            raise TrackerError(
                f"refusing to send {TOKEN_ENV} in cleartext to {self._display}: "
                "use https:// (plain http:// is only for a server on this machine)"
            )
        self._secrets = tuple(s for s in (token, parts.password) if s)
        self.repo = repo
        self.api_url = base
        self._origin = (parts.scheme, parts.netloc)
        self._sleep = sleep if sleep is not None else _sleep
        self._clock = clock if clock is not None else time.time
        self.max_attempts = max(1, max_attempts)
        self.max_wait = max_wait
        self.base_delay = base_delay
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"sglang-tracker/{__version__}",
        }
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            headers=headers, timeout=timeout, transport=transport, follow_redirects=False
        )

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    # ----------------------------------------------------------------- endpoints

    def tracked_issues(self) -> list[RemoteIssue]:
        """Every issue (open and closed) carrying the tracker's label; pull requests left
        out. Follows `Link: rel="next"` to the last page."""
        url: str | None = (
            f"{self.api_url}/repos/{self.repo}/issues?state=all&labels={TRACKER_LABEL}&per_page=100"
        )
        out: list[RemoteIssue] = []
        seen: set[str] = set()
        while url is not None:
            if url in seen:  # a server that links a page to itself would loop forever
                raise TrackerError(
                    f"GitHub's pagination of {self.repo} issues loops at "
                    f"{_printable(url, self._secrets)}"
                )
            seen.add(url)
            self._check_origin(url)
            response = self._request("GET", url)
            items = response.json()
            if not isinstance(items, list):
                raise TrackerError(
                    f"GitHub answered the issue list of {self.repo} with "
                    "something that is not a list"
                )
            out.extend(_issue(i) for i in items if isinstance(i, dict) and "pull_request" not in i)
            url = response.links.get("next", {}).get("url")
        return out

    def create_issue(self, title: str, body: str, labels: Iterable[str]) -> RemoteIssue:
        """Create one issue. When the answer is lost (5xx, dropped connection) the issue may
        exist anyway: it is looked up by fingerprint before trying again."""
        wanted = list(labels)
        fingerprint = fingerprint_in(body)
        payload = {"title": title, "body": body, "labels": wanted}
        for attempt in range(self.max_attempts):
            try:
                response = self._request(
                    "POST", self._path("issues"), json=payload, idempotent=False
                )
            except _Ambiguous as failure:
                if attempt + 1 == self.max_attempts:
                    raise TrackerError(
                        f"GitHub kept failing to create an issue on {self.repo}: {failure.reason}"
                    ) from None
                self._sleep(self._delay(attempt))
                if fingerprint is not None:
                    found = self.find(fingerprint)
                    if found is not None:
                        return found
                continue
            created = _issue(response.json())
            if TRACKER_LABEL in wanted and TRACKER_LABEL not in created.labels:
                # GitHub drops labels silently for tokens without push access; an issue
                # without the label can never be found again, and would be filed again.
                raise TrackerError(
                    f"GitHub created {created.url} without the {TRACKER_LABEL} label (the "
                    "token may lack push access): stopping so as not to file duplicates"
                )
            return created
        raise AssertionError("unreachable")  # pragma: no cover

    def find(self, fingerprint: str) -> RemoteIssue | None:
        for issue in self.tracked_issues():
            if issue.fingerprint == fingerprint:
                return issue
        return None

    def comments(self, number: int) -> list[str]:
        url: str | None = f"{self._path(f'issues/{number}/comments')}?per_page=100"
        bodies: list[str] = []
        while url is not None:
            self._check_origin(url)
            response = self._request("GET", url)
            bodies.extend(str(c.get("body") or "") for c in response.json() if isinstance(c, dict))
            url = response.links.get("next", {}).get("url")
        return bodies

    def comment(self, number: int, body: str, marker: str | None = None) -> None:
        """Add a comment; with `marker`, only when no comment of the issue has it yet (a
        rerun after a crash does not say the same thing twice)."""
        if marker is not None and any(marker in c for c in self.comments(number)):
            return
        for attempt in range(self.max_attempts):
            try:
                self._request(
                    "POST",
                    self._path(f"issues/{number}/comments"),
                    json={"body": body},
                    idempotent=False,
                )
                return
            except _Ambiguous as failure:
                if attempt + 1 == self.max_attempts:
                    raise TrackerError(
                        f"GitHub kept failing to comment on #{number}: {failure.reason}"
                    ) from None
                self._sleep(self._delay(attempt))
                if marker is not None and any(marker in c for c in self.comments(number)):
                    return

    def close_issue(self, number: int) -> None:
        self._request(
            "PATCH",
            self._path(f"issues/{number}"),
            json={"state": "closed", "state_reason": "completed"},
        )

    # ----------------------------------------------------------------- transport

    def _path(self, tail: str) -> str:
        return f"{self.api_url}/repos/{self.repo}/{tail}"

    def _check_origin(self, url: str) -> None:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != self._origin:
            # The token goes with every request: never to a host the user did not name.
            linked = _without_credentials(parts._replace(path="", query="", fragment=""))
            raise TrackerError(
                f"GitHub linked to {linked}, not {self._display}; refusing to send the token there"
            )

    def _message(self, response: httpx.Response) -> str:
        """The server's own words, made safe to print: a proxy may echo the request's
        headers (the token) back, and its text may hold anything."""
        return _printable(_message(response), self._secrets)

    def _delay(self, attempt: int) -> float:
        return float(min(self.max_wait, self.base_delay * 2**attempt))

    def _request(
        self, method: str, url: str, *, json: Any = None, idempotent: bool = True
    ) -> httpx.Response:
        """One request with retries. Non-idempotent requests raise _Ambiguous instead of
        retrying when the server may have acted on them."""
        what = _printable(f"{method} {url.removeprefix(self.api_url)}", self._secrets)
        if self.read_only and method != "GET":
            raise TrackerError(f"dry run: refusing to send {what}")
        for attempt in range(self.max_attempts):
            last = attempt + 1 == self.max_attempts
            try:
                response = self._http.request(method, url, json=json)
            except httpx.ConnectError as error:
                cause = _printable(str(error), self._secrets)
                reason = f"cannot connect to {self._display} ({cause})"
                if last:
                    raise TrackerError(f"{reason} after {self.max_attempts} attempts") from None
                self._sleep(self._delay(attempt))
                continue
            except httpx.TransportError as error:
                reason = f"{type(error).__name__} on {what}"
                if not idempotent:
                    raise _Ambiguous(reason) from None
                if last:
                    raise TrackerError(f"{reason} after {self.max_attempts} attempts") from None
                self._sleep(self._delay(attempt))
                continue
            status = response.status_code
            if status < 300:
                return response
            wait = self._rate_limit_wait(response)
            if wait is not None:
                # Refused before any work was done: safe to repeat, whatever the method.
                if wait > self.max_wait:
                    raise TrackerError(
                        f"GitHub's rate limit is used up for {wait:.0f} s more ({what}); "
                        "run again later: nothing was lost"
                    )
                if last:
                    raise TrackerError(
                        f"GitHub kept rate limiting {what} after {self.max_attempts} attempts"
                    )
                self._sleep(max(wait, self._delay(attempt)))
                continue
            if status >= 500:
                reason = f"{status} {self._message(response)} on {what}"
                if not idempotent:
                    raise _Ambiguous(reason)
                if last:
                    raise TrackerError(
                        f"GitHub kept failing: {reason} after {self.max_attempts} attempts"
                    )
                self._sleep(self._delay(attempt))
                continue
            raise self._refusal(response, what)
        raise AssertionError("unreachable")  # pragma: no cover

    def _rate_limit_wait(self, response: httpx.Response) -> float | None:
        """Seconds to wait when `response` is a rate limit, else None."""
        status = response.status_code
        if status not in (403, 429):
            return None
        headers = response.headers
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                return self._delay(0)
        if headers.get("x-ratelimit-remaining") == "0":
            try:
                return max(0.0, float(headers.get("x-ratelimit-reset", "")) - self._clock())
            except ValueError:
                return self._delay(0)
        if status == 429 or "rate limit" in self._message(response).lower():
            return self._delay(0)
        return None

    def _refusal(self, response: httpx.Response, what: str) -> TrackerError:
        status, message = response.status_code, self._message(response)
        if status == 401:
            return TrackerError(f"GitHub rejected the token (401 {message}): check {TOKEN_ENV}")
        if status == 403:
            return TrackerError(
                f"GitHub refused {what} (403 {message}): the token needs "
                f"permission to read and write issues on {self.repo}"
            )
        if status == 404:
            return TrackerError(
                f"GitHub has no repository {self.repo}, or the token cannot see it (404 on {what})"
            )
        if status == 410:
            return TrackerError(f"issues are disabled on {self.repo} (410)")
        return TrackerError(f"GitHub refused {what} ({status} {message})")


def clean_token(token: str | None) -> str | None:
    """The token as given, without the surrounding whitespace a file or a secret store
    adds (`echo $T > file` ends it with a newline, which no HTTP header may carry); one
    clear line when what is left cannot be a token."""
    if token is None:
        return None
    token = token.strip()
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise TrackerError(
            f"{TOKEN_ENV} holds a character a token cannot have (tokens are printable "
            "ASCII without spaces): check how it was set"
        )
    return token


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _without_credentials(parts: SplitResult) -> str:
    """The URL with any `user:password@` left out."""
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc).geturl()


def _printable(text: str, secrets: Iterable[str]) -> str:
    """`text` on one line, each secret replaced, control characters shown escaped (a
    server's message could rewrite the terminal) and cut at _MESSAGE_LIMIT."""
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    text = " ".join(text.split())
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    if len(shown) > _MESSAGE_LIMIT:
        shown = shown[: _MESSAGE_LIMIT - 1] + "…"
    return shown


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.reason_phrase
    if isinstance(data, dict) and data.get("message"):
        return " ".join(str(data["message"]).split())
    return response.reason_phrase


def _issue(data: Any) -> RemoteIssue:
    if not isinstance(data, dict) or not isinstance(data.get("number"), int):
        raise TrackerError("GitHub answered with something that is not an issue")
    labels = tuple(
        str(x.get("name", "")) if isinstance(x, dict) else str(x) for x in data.get("labels") or ()
    )
    return RemoteIssue(
        number=data["number"],
        title=str(data.get("title") or ""),
        state=str(data.get("state") or "open"),
        body=str(data.get("body") or ""),
        labels=labels,
        url=str(data.get("html_url") or data.get("url") or ""),
    )
