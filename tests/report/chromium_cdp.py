"""Headless Chromium driven over the DevTools protocol, with a stdlib-only WebSocket client.

Enough of RFC 6455 for CDP on loopback: text frames (masked, as a client must), fragmented
messages, ping/pong and close. Chromium is started with ``--remote-debugging-port=0`` and tells
its port on stderr; everything stays on 127.0.0.1 and every wait is bounded.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-sync",
    "--hide-scrollbars",
]


class WebSocket:
    def __init__(self, url: str, timeout: float = 30.0) -> None:
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        if m is None:
            raise ValueError(url)
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise ConnectionError(f"websocket handshake refused: {status[:200]!r}")
        self.buf = rest

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            opcode, fin = b0 & 0x0F, b0 & 0x80
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x9:
                self._send_frame(0xA, data)
                continue
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x0, 0x1, 0x2):
                parts.append(data)
                if fin:
                    return b"".join(parts).decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send_frame(0x8, b"")
        self.sock.close()


class Page:
    """One page target: send commands, collect events."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, pred: Callable[[], bool], timeout: float = 30.0, poll: float = 0.1) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(poll)
        return False

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events:
                if e["method"] == method:
                    return e
            self.ws.sock.settimeout(max(0.1, end - time.monotonic()))
            try:
                msg = json.loads(self.ws.recv())
            except TimeoutError:
                break
            finally:
                self.ws.sock.settimeout(30.0)
            if "method" in msg:
                self.events.append(msg)
        raise TimeoutError(method)

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")


class Chromium:
    """``with Chromium() as browser: page = browser.page()``; the process is ended on exit."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="logdoctor-chromium-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.sockets: list[WebSocket] = []

    def __enter__(self) -> Chromium:
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        assert self.proc.stderr is not None
        end = time.monotonic() + 60
        port = None
        lines = []
        while time.monotonic() < end:
            line = self.proc.stderr.readline().decode(errors="replace")
            if not line and self.proc.poll() is not None:
                break
            lines.append(line)
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
                break
        if port is None:
            self.__exit__(None, None, None)
            raise RuntimeError("chromium did not start: " + "".join(lines[-20:]))
        self.port = port
        # keep draining stderr so the browser never blocks on a full pipe
        import threading

        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for _ in iter(self.proc.stderr.readline, b""):
            pass

    def page(self) -> Page:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as r:
            targets = json.load(r)
        target = next(t for t in targets if t.get("type") == "page")
        ws = WebSocket(target["webSocketDebuggerUrl"])
        self.sockets.append(ws)
        return Page(ws)

    def __exit__(self, *exc: object) -> None:
        for ws in self.sockets:
            ws.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


def load_report(browser: Chromium, path: Path, timeout: float = 60.0) -> Page:
    """Open ``path`` (file://) with Network, Log and Runtime events recorded; wait until its script ran."""
    page = browser.page()
    page.call("Network.enable")
    page.call("Log.enable")
    page.call("Runtime.enable")
    page.call("Page.enable")
    page.call("Page.navigate", url=path.resolve().as_uri())
    page.wait_event("Page.loadEventFired", timeout=timeout)
    ready = "document.body && document.body.getAttribute('data-report-ready')"
    ok = page.wait_for(lambda: page.evaluate(ready) == "1", timeout=timeout)
    if not ok:
        raise TimeoutError("the report's script did not finish")
    page.call("Runtime.evaluate", expression="1")  # flush events queued meanwhile
    return page


def console_errors(page: Page) -> list[str]:
    """Exceptions, console.error/warn calls and error-level log entries seen so far."""
    out = []
    for e in page.events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:500])
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append(f"console.{p['type']}: " + json.dumps(p.get("args", []))[:500])
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            out.append("log: " + json.dumps(p["entry"])[:500])
    return out


def requested_urls(page: Page) -> list[str]:
    return [e["params"]["request"]["url"] for e in page.events if e["method"] == "Network.requestWillBeSent"]
