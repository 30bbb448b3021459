"""The browser view for README / docs/serve.md, made from the real thing:
.venv/bin/python screenshots/make_browser_screenshot.py

A real tiny_mlp session (eager vs default, in parallel) started detached, `tuimon serve` on it,
and Debian's chromium (headless, through playwright; installed with apt-get when missing, as the
tests do) opening the page once both runs are steady: browser-serve-1280x720.png. The session is
then stopped. Needs chromium and playwright (the dev extra); takes ~1 min (a cold compile).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import browser  # noqa: E402  (tests/browser.py)

from tuimon.control import channel  # noqa: E402
from tuimon.sessiondir import store  # noqa: E402

WIDTH, HEIGHT = 1280, 720
OUT = HERE / f"browser-serve-{WIDTH}x{HEIGHT}.png"


def steady_steps(session: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in store.read_events(session)[0]:
        if e["type"] == "step" and e.get("phase") == "steady":
            counts[e["run"]] = counts.get(e["run"], 0) + 1
    return counts


def main() -> None:
    from playwright.sync_api import sync_playwright

    chromium, why = browser.find_chromium()
    if chromium is None:
        sys.exit(f"no chromium: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sessions"
        tuimon = [sys.executable, "-m", "tuimon"]
        subprocess.run([*tuimon, str(ROOT / "recipes/tiny_mlp.py"), "--modes", "eager,default",
                        "--schedule", "parallel", "--steps", "40000", "--device", "cpu",
                        "--interval", "0.5", "--detach", "--out", str(out),
                        "--cache-dir", str(Path(tmp) / "cache")], check=True, cwd=tmp)
        session = next(out.iterdir())
        while not (len(counts := steady_steps(session)) == 2 and min(counts.values()) > 300):
            time.sleep(1)
        server = browser.Served(str(session), cwd=Path(tmp))  # tuimon serve SESSION --port 0
        try:
            with sync_playwright() as playwright:
                chrome = browser.launch(playwright, chromium)
                page = chrome.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                page.add_init_script(browser.EXPOSE)
                page.goto(server.url)
                while not re.search(r"eager/fp32.*default/fp32", browser.text(page), re.S):
                    page.wait_for_timeout(200)
                page.focus(".xterm-helper-textarea")  # a focused page: the footer shows the keys
                page.wait_for_timeout(4000)  # a few redraws: the charts fill in
                page.screenshot(path=str(OUT))
                chrome.close()
        finally:
            server.proc.terminate()
            server.proc.wait(30)
            client = channel.Client(session)  # stop the runs; wait until the daemon is done
            client.call("close")
            client.wait_closed(120)
            client.close()
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
