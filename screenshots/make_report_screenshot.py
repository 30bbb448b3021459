"""The report page for README / docs/commands.md, made from the real thing:
.venv/bin/python screenshots/make_report_screenshot.py [SESSION]

`tuimon report` on a recorded session (default: tests/data/session_script_fabric_lm, Lightning
Fabric's language-model example under `tuimon run`, its compiled variant started cold and warm:
compile pays off after 192 steps cold, 51 warm), copied to a temporary directory first (its
events.jsonl.gz unpacked), then Debian's chromium (headless, through playwright; installed with
apt-get when missing, as the tests do) opening report.html with every request but the file's own refused:
report-1280x1000.png, the top of the page (the verdict and "is compile worth it"). Takes ~10 s.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import browser  # noqa: E402  (tests/browser.py)

WIDTH, HEIGHT = 1280, 1000
OUT = HERE / f"report-{WIDTH}x{HEIGHT}.png"
DEFAULT = ROOT / "tests" / "data" / "session_script_fabric_lm"


def main() -> None:
    from playwright.sync_api import sync_playwright

    chromium, why = browser.find_chromium()
    if chromium is None:
        sys.exit(f"no chromium: {why}")
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        session = Path(shutil.copytree(source, Path(tmp) / source.name))
        if (packed := session / "events.jsonl.gz").exists():  # kept small in the repository
            (session / "events.jsonl").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
        subprocess.run([sys.executable, "-m", "tuimon", "report", str(session)], check=True, cwd=tmp)
        left: list[str] = []

        def route(r):
            if r.request.url.startswith(("file:", "data:")):
                r.continue_()
            else:
                left.append(r.request.url)
                r.abort()

        with sync_playwright() as playwright:
            chrome = browser.launch(playwright, chromium)
            page = chrome.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.route("**/*", route)
            page.goto((session / "report.html").as_uri(), wait_until="load")
            page.screenshot(path=str(OUT))
            chrome.close()
        if left:
            sys.exit(f"the page asked for {left}: it must fetch nothing")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
