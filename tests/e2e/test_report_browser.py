"""tuimon report's page in a real headless browser (issue 35): Debian's chromium driven by
playwright (tests/browser.py; skipped, with the reason, only when it cannot be had), on a recipe
session, a script session and a torchrun (ranks) session recorded in tests/data. Every request
the page makes is routed: anything that is not the file itself or a data: URL fails the test, so
the page is shown to load with the network cut off. Each figure must be drawn (an <svg> with a
size on screen) and the screenshot must show it (not a blank page)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import browser
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SESSIONS = {  # what each is, and the figures its page must draw
    "recipe": ("session_recipe_tiny_mlp", {"payoff", "step-time", "distributions", "phases", "compiles"}),
    "script": ("session_script_vae", {"payoff", "step-time", "distributions", "phases", "compiles"}),
    "ranks": ("session_ranks_tiny_mlp", {"payoff", "step-time", "distributions", "phases", "compiles"}),
    # a script's compiled variant started cold and warm: two break-evens on one figure
    "script-warm": ("session_script_fabric_lm", {"payoff", "step-time", "distributions", "phases",
                                                 "compiles"}),
}
LOCAL = ("file:", "data:", "about:")


@pytest.fixture(scope="module")
def chrome():
    path, why = browser.find_chromium()
    if path is None:
        pytest.skip(why)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with sync_api.sync_playwright() as playwright:
        b = browser.launch(playwright, path)
        yield b
        b.close()


def open_offline(chrome, url: str):
    """A tab on ``url`` with every request but the file's own refused and recorded."""
    page = chrome.new_page(viewport={"width": 1100, "height": 900})
    left: list[str] = []

    def route(r):
        if r.request.url.startswith(LOCAL):
            r.continue_()
        else:
            left.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(url, wait_until="load")
    return page, left


def test_the_offline_check_sees_a_request_that_would_leave(chrome, tmp_path):
    """The harness itself: a page that does fetch from elsewhere is caught."""
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!doctype html><img src="http://example.invalid/x.png"><p>x</p>')
    page, left = open_offline(chrome, leaky.as_uri())
    page.close()
    assert left == ["http://example.invalid/x.png"]


@pytest.mark.parametrize("kind", sorted(SESSIONS))
def test_the_report_opens_offline_with_every_figure_drawn(chrome, kind, tmp_path):
    name, figures = SESSIONS[kind]
    session = Path(shutil.copytree(DATA / name, tmp_path / name))
    if (packed := session / "events.jsonl.gz").exists():  # kept small in the repository
        (session / "events.jsonl").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    proc = subprocess.run([sys.executable, "-m", "tuimon", "report", str(session)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"tuimon: wrote {session / 'report.html'} (") and not proc.stderr
    page, left = open_offline(chrome, (session / "report.html").as_uri())
    try:
        drawn = page.evaluate("""() => [...document.querySelectorAll('figure')].map(f => {
            const box = f.querySelector('svg').getBoundingClientRect();
            return [f.id.slice(4), Math.round(box.width), Math.round(box.height)]; })""")
        verdict = page.inner_text(".verdict")
        payoff = page.inner_text("#fig-payoff")
        title = page.title()
        shot = tmp_path / f"report-{kind}.png"
        page.screenshot(path=str(shot), full_page=True)
    finally:
        page.close()
    assert left == []  # nothing left the machine
    assert {f for f, _, _ in drawn} == figures
    assert all(w > 500 and h > 100 for _, w, h in drawn), drawn
    assert verdict.startswith("Verdict:")
    if kind == "script-warm":
        assert "break-even cold: step 192" in payoff and "break-even warm: step 51" in payoff
    assert title == f"tuimon report: {json.loads((session / 'meta.json').read_text())['name']}"
    assert not blank(shot)


def blank(png: Path) -> bool:
    """A screenshot of one colour (nothing drawn), or one the figures' colours are missing from."""
    from PIL import Image

    im = Image.open(png).convert("RGB")
    small = im.resize((im.width // 4, im.height // 4))
    colours = {c for _, c in small.getcolors(small.width * small.height)}
    blue = any(b > 120 and r < 60 and 80 < g < 150 for r, g, b in colours)  # the palette's #0072B2
    return len(colours) < 50 or not blue
