"""A small GitHub issues API on 127.0.0.1 for the publish and watch tests.

A real HTTP server in a thread (not a mock transport), so the client's headers, pagination
links, status codes and retries go over a socket as they would against GitHub. It keeps
issues and comments in memory, pages lists by `page_size`, checks the token, and can be
told to fail: a queue of canned answers, or every creation after the Nth.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "test-token"
REPO = "octo/sglang"


@dataclass
class Canned:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    method: str | None = None  # only for this method; None: any
    apply: bool = False  # do the work anyway, then answer with this (a lost answer)


@dataclass
class State:
    issues: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[int, list[str]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    canned: deque[Canned] = field(default_factory=deque)
    page_size: int = 2
    fail_creates_after: int | None = None  # then every POST /issues answers 500
    drop_labels: bool = False  # as GitHub does for a token without push access
    hold_after_create: int | None = None  # that creation happens, its answer waits...
    release: threading.Event = field(default_factory=threading.Event)  # ...until this
    creates: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_issue(
        self,
        title: str,
        body: str,
        labels: list[str],
        state: str = "open",
        pull_request: bool = False,
    ) -> dict[str, Any]:
        number = len(self.issues) + 1
        issue: dict[str, Any] = {
            "number": number,
            "title": title,
            "body": body,
            "state": state,
            "labels": [{"name": n} for n in labels],
            "html_url": f"https://github.example/{REPO}/issues/{number}",
        }
        if pull_request:
            issue["pull_request"] = {"url": "x"}
        self.issues.append(issue)
        return issue

    def bodies_with(self, text: str) -> list[dict[str, Any]]:
        return [i for i in self.issues if text in (i["body"] or "")]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body if body is not None else {}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _handle(self, method: str) -> None:
        st = self.server.state
        url = urlsplit(self.path)
        payload = self._body() if method in ("POST", "PATCH") else None
        with st.lock:
            st.requests.append((method, self.path))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, {"message": "Bad credentials"})
                return
            canned = None
            if st.canned and st.canned[0].method in (None, method):
                canned = st.canned.popleft()
                if not canned.apply:
                    self._send(
                        canned.status,
                        canned.body if canned.body is not None else {"message": "canned"},
                        canned.headers,
                    )
                    return
            prefix = f"/repos/{REPO}/issues"
            if not url.path.startswith(prefix):
                self._send(404, {"message": "Not Found"})
                return
            rest = url.path[len(prefix) :].strip("/")
            before = st.creates
            status, body, headers = self._route(method, rest, parse_qs(url.query), payload)
            if canned is not None:
                status, body, headers = canned.status, {"message": "lost"}, canned.headers
            hold = st.creates != before and st.creates == st.hold_after_create
        if hold:
            st.release.wait(30)  # the client is killed meanwhile: the answer is lost
        self._send(status, body, headers)

    def _route(
        self, method: str, rest: str, query: dict[str, list[str]], payload: Any
    ) -> tuple[int, Any, dict[str, str]]:
        st = self.server.state
        parts = rest.split("/") if rest else []
        if not parts and method == "GET":
            label = query.get("labels", [""])[0]
            state = query.get("state", ["open"])[0]
            chosen = [
                i
                for i in st.issues
                if (not label or any(x["name"] == label for x in i["labels"]))
                and (state == "all" or i["state"] == state)
            ]
            return self._page(chosen, query, f"labels={label}&state={state}")
        if not parts and method == "POST":
            if st.fail_creates_after is not None and st.creates >= st.fail_creates_after:
                return 500, {"message": "Server Error"}, {}
            st.creates += 1
            labels = [] if st.drop_labels else list(payload.get("labels", []))
            issue = st.add_issue(payload["title"], payload.get("body", ""), labels)
            return 201, issue, {}
        number = int(parts[0])
        issue = next((i for i in st.issues if i["number"] == number), None)
        if issue is None:
            return 404, {"message": "Not Found"}, {}
        if len(parts) == 1 and method == "PATCH":
            issue.update({k: v for k, v in payload.items() if k in ("state", "state_reason")})
            return 200, issue, {}
        if parts[1:] == ["comments"] and method == "POST":
            st.comments.setdefault(number, []).append(payload["body"])
            return 201, {"body": payload["body"]}, {}
        if parts[1:] == ["comments"] and method == "GET":
            items = [{"body": b} for b in st.comments.get(number, [])]
            return self._page(items, query, "")
        return 404, {"message": "Not Found"}, {}

    def _page(
        self, items: list[Any], query: dict[str, list[str]], keep: str
    ) -> tuple[int, Any, dict[str, str]]:
        size = self.server.state.page_size
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * size : page * size]
        headers = {}
        if page * size < len(items):
            base = f"http://127.0.0.1:{self.server.server_address[1]}{urlsplit(self.path).path}"
            sep = "&" if keep else ""
            headers["Link"] = (
                f'<{base}?{keep}{sep}per_page=100&page={page + 1}>; rel="next", '
                f'<{base}?page=999>; rel="last"'
            )
        return 200, chunk, headers

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: State

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client killed mid-request is what some tests do on purpose


@contextmanager
def fake_github() -> Iterator[tuple[str, State]]:
    """(API base URL, server state) for the duration of the block."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = State()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.state
    finally:
        server.state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
