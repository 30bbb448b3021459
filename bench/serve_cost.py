"""What ``tuimon serve`` costs, run by hand: .venv/bin/python bench/serve_cost.py [--tabs N]

A detached session of two runs of tests/recipes/slow_steps.py (--set sleep_ms=5: ~150 steps/s
each, in parallel), ``tuimon serve`` on it, and N tabs (default 3) of headless Debian chromium
(tests/browser.py) opened one after the other. For each tab: the time from opening the page to
both panels on its screen; then, over 20 s with every tab open: each viewer process's CPU and
RSS, the server's CPU, and the bytes per second the server sends each tab: on the wire (each tab
goes through a loopback forwarder that counts them, as ``ssh -L`` would carry them: websocket
frames are deflate-compressed when the browser agrees) and as the terminal's output (the
frames' payload after decompression). Chromium's own cost is not counted.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import browser  # noqa: E402  (tests/browser.py)

from tuimon.control import channel  # noqa: E402
from tuimon.sessiondir import store  # noqa: E402

SECONDS = 20.0


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--tabs", type=int, default=3)
    tabs = ap.parse_args().tabs
    chromium, why = browser.find_chromium()
    if chromium is None:
        sys.exit(f"no chromium: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        tuimon = [sys.executable, "-m", "tuimon"]
        out = Path(tmp) / "sessions"
        subprocess.run([*tuimon, str(ROOT / "tests/recipes/slow_steps.py"), "--modes", "eager",
                        "--precision", "fp32,amp", "--schedule", "parallel", "--steps", "1000000",
                        "--set", "sleep_ms=5", "--warmup", "0", "--detach", "--out", str(out)],
                       check=True, cwd=tmp, capture_output=True)
        session = next(out.iterdir())
        server = browser.Served(str(session), cwd=Path(tmp))  # tuimon serve SESSION --port 0
        try:
            with sync_playwright() as playwright:
                chrome = browser.launch(playwright, chromium)
                pages, received, first, tunnels = [], [], [], []
                for k in range(tabs):
                    tunnels.append(browser.Forward(server.port))
                    page = chrome.new_page(viewport={"width": 1280, "height": 720})
                    page.add_init_script(browser.EXPOSE)
                    received.append(0)
                    page.on("websocket", lambda ws, k=k: ws.on(
                        "framereceived", lambda frame, k=k: received.__setitem__(
                            k, received[k] + len(frame if isinstance(frame, bytes) else frame.encode()))))
                    t0 = time.perf_counter()
                    page.goto(f"http://127.0.0.1:{tunnels[k].port}/")
                    while not re.search(r"eager/fp32.*eager/amp", browser.text(page), re.S):
                        page.wait_for_timeout(20)
                    first.append(time.perf_counter() - t0)
                    page.focus(".xterm-helper-textarea")
                    pages.append(page)
                serving = psutil.Process(server.proc.pid)
                viewers = serving.children()
                procs = [serving, *viewers]
                for p in procs:
                    p.cpu_percent()
                sent0, wire0, t0 = list(received), [t.sent for t in tunnels], time.perf_counter()
                while time.perf_counter() - t0 < SECONDS:
                    pages[0].wait_for_timeout(250)  # let playwright count frames meanwhile
                elapsed = time.perf_counter() - t0
                cpu = [p.cpu_percent() for p in procs]
                rss = [p.memory_info().rss / 2**20 for p in viewers]
                rate = [(received[k] - sent0[k]) / elapsed / 1024 for k in range(tabs)]
                wire = [(tunnels[k].sent - wire0[k]) / elapsed / 1024 for k in range(tabs)]
                steps = sum(1 for e in store.read_events(session)[0] if e["type"] == "step")
                chrome.close()
        finally:
            server.proc.terminate()
            server.proc.wait(30)
            client = channel.Client(session)
            client.call("close")
            client.wait_closed(120)
            client.close()
    print(f"{tabs} tabs on a session of {steps} steps so far (2 runs, ~150 steps/s each)")
    print("page open -> panels on screen: " + ", ".join(f"{t:.2f} s" for t in first))
    print(f"viewer CPU: {', '.join(f'{c:.1f} %' for c in cpu[1:])} "
          f"(median {statistics.median(cpu[1:]):.1f} % of a core); server CPU: {cpu[0]:.1f} %")
    print(f"viewer RSS: {', '.join(f'{r:.0f} MiB' for r in rss)}")
    print(f"sent to each tab, on the wire: {', '.join(f'{r:.1f} KiB/s' for r in wire)}; "
          f"terminal output: {', '.join(f'{r:.1f} KiB/s' for r in rate)}")


if __name__ == "__main__":
    main()
