"""A real headless Chromium for the report tests, driven over the DevTools protocol.

Why not `--dump-dom`: the report must load nothing from the network and log no errors, and
only the browser's own event stream says that for sure (every request the page makes,
every console message, every uncaught exception). The protocol runs over a websocket on
127.0.0.1; the few lines of websocket client below keep the tests free of extra packages.

Without Chromium the browser tests skip with the reason, except under CI (env CI set),
where a missing browser is a failure: CI installs it (`apt-get install -y chromium`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
VIEWPORT = (1440, 1000)


def find_chromium() -> str | None:
    explicit = os.environ.get("TRACKER_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = find_chromium()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(
                "CI is set but no Chromium was found (looked for "
                + ", ".join(CANDIDATES)
                + " and TRACKER_CHROMIUM): .ci/run must install it "
                "(apt-get install -y chromium)"
            )
        pytest.skip(
            "headless Chromium not found: install it (Debian: apt-get install -y chromium) "
            "or point TRACKER_CHROMIUM at a Chrome/Chromium binary"
        )
    return found


# ------------------------------------------------------------------ websocket client


class WebSocket:
    """Just enough RFC 6455 for the DevTools protocol: text frames, masking, fragments,
    ping/pong, close."""

    GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(url)
        assert parts.hostname in ("127.0.0.1", "localhost"), url  # never off the machine
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the browser closed the websocket handshake")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise ConnectionError(f"websocket upgrade refused: {head.decode(errors='replace')}")
        accept = base64.b64encode(hashlib.sha1((key + self.GUID).encode()).digest())
        if accept not in head:
            raise ConnectionError("bad Sec-WebSocket-Accept from the browser")

    def _exact(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the browser closed the websocket")
            data += chunk
        return bytes(data)

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytearray([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header.append(0x80 | 126)
            header += struct.pack(">H", n)
        else:
            header.append(0x80 | 127)
            header += struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes(header) + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def recv(self) -> str:
        message = bytearray()
        while True:
            b0, b1 = self._exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else b""
            payload = self._exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            if opcode == 0x8:
                raise ConnectionError("the browser closed the websocket")
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send_frame(0x8, b"")
        self.sock.close()


# -------------------------------------------------------------------- the browser


class Page:
    """One tab: protocol calls, and every event the page produced since `reset()`."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event["method"] == method:
                    return self.events.pop(i)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout}s")
            self.ws.sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                message = json.loads(self.ws.recv())
            except TimeoutError:
                continue
            finally:
                self.ws.sock.settimeout(30.0)
            if "method" in message:
                self.events.append(message)

    def open(self, url: str) -> None:
        self.events.clear()
        result = self.call("Page.navigate", url=url)
        if result.get("loaderId"):  # absent when only the #fragment changed: no load
            self.wait_for("Page.loadEventFired")
        self.settle()

    def settle(self) -> None:
        # One round trip after load lets late console messages arrive.
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))")

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations,
        failed loads) since the last navigation."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif e["method"] == "Runtime.exceptionThrown":
                details = p.get("exceptionDetails", {})
                out.append(str(details.get("exception", {}).get("description") or details))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"{p['entry'].get('source')}: {p['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data


def _devtools_port(profile: Path, proc: subprocess.Popen[bytes], log: Path) -> int:
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if port_file.is_file():
            first = port_file.read_text().splitlines()[:1]
            if first and first[0].isdigit():
                return int(first[0])
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"Chromium did not open its DevTools port:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def browser_page(chromium_path: str) -> Iterator[Page]:
    # Chromium's helper processes may still be writing to the profile a moment after the
    # browser exits; a leftover file there must not fail the tests.
    with tempfile.TemporaryDirectory(prefix="tracker-chromium-", ignore_cleanup_errors=True) as tmp:
        profile = Path(tmp) / "profile"
        log = Path(tmp) / "chromium.log"
        args = [
            chromium_path,
            "--headless",
            "--disable-gpu",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            # The browser itself must not phone home either (updates, safe browsing, ...).
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--hide-scrollbars",
            "--mute-audio",
            f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        args.append("about:blank")
        with log.open("wb") as sink:
            # Its own session: the teardown can end the browser's helpers with it.
            proc = subprocess.Popen(
                args, stdout=sink, stderr=sink, stdin=subprocess.DEVNULL, start_new_session=True
            )
        try:
            port = _devtools_port(profile, proc, log)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/json/list")
            targets = json.loads(conn.getresponse().read())
            conn.close()
            page_target = next(t for t in targets if t.get("type") == "page")
            ws = WebSocket(page_target["webSocketDebuggerUrl"])
            page = Page(ws)
            for domain in ("Page", "Runtime", "Log", "Network"):
                page.call(f"{domain}.enable")
            page.call(
                "Emulation.setDeviceMetricsOverride",
                width=VIEWPORT[0],
                height=VIEWPORT[1],
                deviceScaleFactor=1,
                mobile=False,
            )
            try:
                yield page
            finally:
                ws.close()
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the browser we started and the helpers in its session (renderer, zygote...)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    # Helpers that outlive the browser for a moment.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
