"""A real `bertology serve` process on 127.0.0.1 (any free port), and a headless Chromium driven
through the DevTools protocol over a pipe (--remote-debugging-pipe: no extra package, no port)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time


class Server:
    def __init__(self, model_dir, *flags: str):
        cmd = [sys.executable, "-m", "bertology", "serve", "--model", str(model_dir), "--port", "0", "--quiet", *flags]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self._read_line(120)
        if "http://" not in line:
            self.process.kill()
            raise RuntimeError(f"the server did not start: {line}{self.process.stdout.read()}")
        self.url = line.rsplit(" on ", 1)[1].strip()

    def _read_line(self, timeout: float) -> str:
        box = []
        reader = threading.Thread(target=lambda: box.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return box[0] if box else ""

    def terminate(self, timeout: float = 60) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.terminate()


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


class Chromium:
    """Just enough of the DevTools protocol: open a page, evaluate JavaScript, type, screenshot."""

    def __init__(self, binary: str, profile_dir, width: int = 1100, height: int = 1300):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        # the protocol's pipe is the child's fds 3 (commands in) and 4 (replies out); bash moves them there
        # (no preexec_fn: forking a threaded process must not run Python in the child)
        args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile_dir}",
            f"--window-size={width},{height}",
            "--hide-scrollbars",
            "about:blank",
        ]
        a, b = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w))  # not 3 or 4 already
        self.process = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c", f'exec "$0" "$@" 3<&{a} 4>&{b} {a}<&- {b}>&-', binary, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(a, b),
        )
        for fd in (to_browser_r, from_browser_w, a, b):
            os.close(fd)
        self._buffer, self._next_id, self.session = b"", 0, None

    def send(self, method: str, params: dict | None = None, timeout: float = 60) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise TimeoutError(f"no answer to {method}")

    def _receive(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_browser], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("the browser said nothing")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("the browser closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, tries: int = 600):
        """Poll until the expression is truthy (bounded; the page's own state, not a timing)."""
        for _ in range(tries):
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"never true: {expression}")

    def type(self, text: str) -> None:
        """Key by key, as a person types: keydown / char / keyup for each character."""
        for ch in text:
            self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": ch, "key": ch, "unmodifiedText": ch})
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": ch})

    def press_enter(self) -> None:
        enter = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": "\r", **enter})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **enter})

    def screenshot(self) -> bytes:
        return base64.b64decode(
            self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        )

    def close(self) -> None:
        try:
            self.session = None
            self.send("Browser.close", timeout=10)
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self._to_browser)
        os.close(self._from_browser)
