"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), stdlib only.

Chromium reads protocol messages from file descriptor 3 and writes them to 4, each a JSON object ended
by a NUL byte; no port is opened and no websocket library is needed. One browser serves a whole test
session; each :meth:`Browser.open` gets a fresh page (a new target) and returns what the tests check:
console messages and uncaught exceptions, the result of a JavaScript expression, and a PNG screenshot.
Chromium here refuses every connection to the internet, hence the flags that keep it from trying.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """``$STRUCTNETS_CHROMIUM`` or the first Chromium on ``PATH``; None when there is none."""
    named = os.environ.get("STRUCTNETS_CHROMIUM")
    if named:
        return named if shutil.which(named) else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    """Chromium did not start, died, or answered a command with an error."""


@dataclass
class Visit:
    """What one page load gave: console messages and exceptions, the probe's value, a screenshot."""

    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    value: Any = None
    screenshot: bytes = b""

    @property
    def errors(self) -> list[str]:
        """Console errors and warnings, log entries of level error, and uncaught exceptions, as text."""
        found = [f"exception: {e}" for e in self.exceptions]
        for entry in self.console:
            if entry.get("level") in ("error", "warning"):
                found.append(f"{entry.get('source', 'console')} {entry['level']}: {entry.get('text', '')}")
        return found


class Browser:
    """One headless Chromium process (use as a context manager)."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 800, timeout: float = 30.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self._profile = tempfile.TemporaryDirectory(prefix="structnets-chromium-")
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        # fds 3 and 4 in the child: dup to high numbers first so the dup2s cannot clobber each other.
        keep_r, keep_w = os.dup(to_browser_r), os.dup(from_browser_w)
        high_r, high_w = fcntl_dupfd(keep_r, 10), fcntl_dupfd(keep_w, 10)
        os.close(keep_r)
        os.close(keep_w)

        def child_fds() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--mute-audio",
            "--hide-scrollbars",
            f"--user-data-dir={self._profile.name}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            preexec_fn=child_fds, close_fds=False,
        )  # fmt: skip
        for fd in (to_browser_r, from_browser_w, high_r, high_w):
            os.close(fd)
        self._out = os.fdopen(to_browser_w, "wb", buffering=0)
        self._in = os.fdopen(from_browser_r, "rb", buffering=0)
        self._buffer = b""
        self._id = 0
        self._events: list[dict[str, Any]] = []
        self.version = self.call("Browser.getVersion")

    # -- protocol ---------------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            self._out.write(json.dumps(message).encode() + b"\0")
        except BrokenPipeError as e:
            raise BrowserError(f"chromium exited: {self._stderr_tail()}") from e
        return self._id

    def _receive(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"no answer from chromium within {self.timeout} s: {self._stderr_tail()}")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = self._in.read(1 << 16)
                if not chunk:
                    raise BrowserError(f"chromium closed the pipe: {self._stderr_tail()}")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its answer (events seen meanwhile are kept)."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self._events.append(message)

    def _wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self._events.pop(i)
            message = self._receive(deadline)
            if "method" in message:
                self._events.append(message)

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-2000:].decode(errors="replace")

    # -- pages ------------------------------------------------------------------------------------

    def open(self, path: Path | str, probe: str, *, full_page: bool = False) -> Visit:
        """Load ``path`` in a fresh page, evaluate the JavaScript expression ``probe``, take a screenshot.

        ``path`` is a file, or a ``file:`` URL as a string (e.g. a link's resolved ``href``, fragment and all).
        """
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable", session=session)
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            self._events = [e for e in self._events if e.get("sessionId") != session]
            url = path if isinstance(path, str) and path.startswith("file:") else Path(path).resolve().as_uri()
            self.call("Page.navigate", {"url": url}, session=session)
            self._wait_event("Page.loadEventFired", session)
            result = self.call(
                "Runtime.evaluate", {"expression": probe, "returnByValue": True, "awaitPromise": True}, session=session
            )
            if "exceptionDetails" in result:
                raise BrowserError(f"probe failed: {result['exceptionDetails']}")
            shot = self.call(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full_page}, session=session
            )
            visit = Visit(value=result["result"].get("value"), screenshot=base64.b64decode(shot["data"]))
            for event in [e for e in self._events if e.get("sessionId") == session]:
                params = event.get("params", {})
                if event["method"] == "Runtime.consoleAPICalled":
                    text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                    visit.console.append({"level": params.get("type"), "text": text, "source": "console"})
                elif event["method"] == "Log.entryAdded":
                    entry = params.get("entry", {})
                    visit.console.append(
                        {"level": entry.get("level"), "text": entry.get("text"), "source": entry.get("source")}
                    )
                elif event["method"] == "Runtime.exceptionThrown":
                    details = params.get("exceptionDetails", {})
                    visit.exceptions.append(str(details.get("exception", {}).get("description") or details.get("text")))
            return visit
        finally:
            self._events = [e for e in self._events if e.get("sessionId") != session]
            self.call("Target.closeTarget", {"targetId": target})

    def close(self) -> None:
        """End the browser (politely, then by force) and remove its profile."""
        try:
            if self.proc.poll() is None:
                try:
                    self._send("Browser.close")
                except BrowserError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            for f in (self._out, self._in, self._stderr):
                f.close()
            self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fcntl_dupfd(fd: int, lowest: int) -> int:
    """A duplicate of ``fd`` numbered at least ``lowest`` (inheritable, unlike ``os.dup``'s)."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.set_inheritable(new, True)
    return new
