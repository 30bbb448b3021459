"""A real browser, and the server, for the tests of ``tuimon serve`` (also used by
screenshots/make_browser_screenshot.py and bench/serve_cost.py): Debian's chromium, installed
with apt-get when it is missing and we are root, driven by playwright (its own browser download
cannot work here, so it is pointed at /usr/bin/chromium).

Reading what the page shows without OCR: textual-serve draws the terminal with xterm.js on a
canvas, and keeps its xterm ``Terminal`` in a closure. ``EXPOSE`` (an init script, run before
the page's own) catches it: textual.js's terminal class assigns ``this.websocket_url`` in its
constructor, so a setter of that name on Object.prototype sees the instance once and leaves a
plain property in its place. From there, xterm's buffer gives every cell's character, exactly
what the canvas was asked to draw; ``drawn_like_buffer`` then checks the screenshot against it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

CHROMIUM = "chromium"

EXPOSE = """
Object.defineProperty(Object.prototype, "websocket_url", {
  configurable: true,
  set(value) {
    window.__tuimonTerminal = this;
    Object.defineProperty(this, "websocket_url",
                          {value, writable: true, configurable: true, enumerable: true});
  },
});
"""

# Every cell's character ('' for the right half of a wide one), row by row, and the screen's box.
CELLS = """() => {
  const owner = window.__tuimonTerminal, term = owner && owner.terminal;
  if (!term) return null;
  const buffer = term.buffer.active, rows = [];
  for (let y = 0; y < term.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y), row = [];
    for (let x = 0; x < term.cols; x++) {
      const cell = line && line.getCell(x);
      row.push(cell ? cell.getChars() : " ");
    }
    rows.push(row);
  }
  const box = term.element.querySelector(".xterm-screen").getBoundingClientRect();
  return {rows, cols: term.cols, x: box.x, y: box.y, width: box.width, height: box.height};
}"""


def find_chromium() -> tuple[str | None, str]:
    """(path of chromium, '') or (None, why not): installed from Debian's packages when missing
    and this process is root; nothing else is tried."""
    if path := shutil.which(CHROMIUM):
        return path, ""
    if not shutil.which("apt-get"):
        return None, "chromium is not installed and there is no apt-get to install it"
    if os.geteuid() != 0:
        return None, "chromium is not installed and tests are not root (apt-get install chromium)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=300"]  # another apt-get on the machine: wait for it
    for cmd in (["apt-get", *lock, "update", "-qq"],
                ["apt-get", *lock, "install", "-y", "-qq", CHROMIUM]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{' '.join(cmd)}: {exc}"
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            return None, f"{' '.join(cmd)} failed: {last[0]}"
    path = shutil.which(CHROMIUM)
    return (path, "") if path else (None, "apt-get installed chromium, but it is not on PATH")


def launch(playwright, executable: str):
    # --no-sandbox: chromium's sandbox refuses to run as root (CI runs tests as root).
    return playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])


def cells(page) -> dict | None:
    return page.evaluate(CELLS)


def text(page) -> str:
    """The terminal's screen as text, one line a row ('' before the first draw)."""
    grid = cells(page)
    return "\n".join("".join(row).rstrip() for row in grid["rows"]) if grid else ""


def is_blank(ch: str) -> bool:
    return ch in ("", " ")


def is_solid(ch: str) -> bool:
    """Block elements (U+2580-U+259F): may fill their cell with one colour."""
    return len(ch) == 1 and 0x2580 <= ord(ch) <= 0x259F


def drawn_like_buffer(png: Path, grid: dict) -> tuple[float, float]:
    """OCR-free: how well the screenshot matches the buffer, cell by cell. A glyph cell (a
    character that is not blank nor a solid block) must show more than one colour (ink on its
    background), a blank cell one colour alone. Returns (share of glyph cells with ink, share of
    blank cells that are plain), both near 1.0 when the canvas draws what the buffer holds."""
    import numpy as np
    from PIL import Image

    image = np.asarray(Image.open(png).convert("RGB")).astype(int)
    rows, cols = len(grid["rows"]), grid["cols"]
    cw, ch = grid["width"] / cols, grid["height"] / rows
    inked = glyphs = plain = blanks = 0
    for y, row in enumerate(grid["rows"]):
        for x, char in enumerate(row):
            if is_solid(char) or (char == "" and x and not is_blank(row[x - 1])):
                continue  # a block, or the right half of a wide character
            # The cell's inside (a pixel off each edge: neighbours' antialiasing).
            top, left = int(grid["y"] + y * ch) + 1, int(grid["x"] + x * cw) + 1
            cell = image[top:int(grid["y"] + (y + 1) * ch) - 1, left:int(grid["x"] + (x + 1) * cw) - 1]
            if cell.size == 0:
                continue
            spread = int((cell.max(axis=(0, 1)) - cell.min(axis=(0, 1))).max())
            if is_blank(char):
                blanks += 1
                plain += spread <= 24
            else:
                glyphs += 1
                inked += spread > 24
    return inked / max(glyphs, 1), plain / max(blanks, 1)


class Forward:
    """127.0.0.1:<port> to 127.0.0.1:<target>: what ``ssh -L 9000:127.0.0.1:8000`` is on a laptop
    (another local port than the server's)."""

    def __init__(self, target: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target = target
        self.sent = 0  # bytes from the server to the browser, as they went over the wire
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                near, _ = self.listener.accept()
                far = socket.create_connection(("127.0.0.1", self.target))
                for a, b in ((near, far), (far, near)):
                    threading.Thread(target=self._pump, args=(a, b, a is far), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, count: bool) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
                self.sent += len(data) if count else 0
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()


class Served:
    """``tuimon serve ARGS --port 0`` in a process group of its own, as a shell runs it (Ctrl-C
    in a terminal reaches the foreground group: the server and its tabs)."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tuimon", "serve", *args, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     cwd=cwd, start_new_session=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 30
        while not (line := next((x for x in self.lines if x.startswith("serving on ")), None)):
            assert self.proc.poll() is None and time.monotonic() < deadline, self.output
            time.sleep(0.05)
        self.url = line.split()[-1]
        self.port = int(re.search(r":(\d+)/$", self.url).group(1))

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def tabs(self) -> list[psutil.Process]:
        """The viewer processes (one per open tab)."""
        return [p for p in psutil.Process(self.proc.pid).children(recursive=True)
                if p.status() != psutil.STATUS_ZOMBIE]

    def ctrl_c(self, timeout: float = 30) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
