"""`tuimon export --trace` in chrome://tracing's viewer, for README / docs/sessions.md, made from the
real thing: .venv/bin/python screenshots/make_trace_screenshot.py [SESSION]

The trace of a recorded session (default: tests/data/session_ranks_tiny_mlp, a 2-rank DDP job,
eager against default: each rank's phases, steps with their parts, the compile inside step 0 with
its aot / codegen), copied to a temporary directory first (an events.jsonl.gz unpacked), opened
offline in Catapult's trace viewer (chrome://tracing's, from xprof's static files:
tests/trace_viewer.py) in Debian's headless chromium: trace-1600x1000.png. Takes ~10 s.
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
import trace_viewer  # noqa: E402  (tests/trace_viewer.py)

WIDTH, HEIGHT = 1600, 1000
OUT = HERE / f"trace-{WIDTH}x{HEIGHT}.png"
DEFAULT = ROOT / "tests" / "data" / "session_ranks_tiny_mlp"


def main() -> None:
    from playwright.sync_api import sync_playwright

    chromium, why = browser.find_chromium()
    viewer, why_not = trace_viewer.find()
    if chromium is None or viewer is None:
        sys.exit(f"cannot draw it: {why or why_not}")
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        session = Path(shutil.copytree(source, Path(tmp) / source.name))
        if (packed := session / "events.jsonl.gz").exists():
            (session / "events.jsonl").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
        out = Path(tmp) / "trace.json"
        subprocess.run([sys.executable, "-m", "tuimon", "export", str(session), "--trace", str(out)],
                       check=True, cwd=ROOT)
        with sync_playwright() as playwright:
            b = browser.launch(playwright, chromium)
            page, left, errors = trace_viewer.open_offline(b, viewer, WIDTH, HEIGHT)
            model = page.evaluate(trace_viewer.IMPORT, out.read_text())
            page.evaluate(trace_viewer.SHOW)
            page.wait_for_timeout(1500)
            page.screenshot(path=str(OUT))
            b.close()
    if left or errors or model["warnings"]:
        sys.exit(f"fetched {left}, threw {errors}, import warnings {model['warnings']}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
