"""tuimon export --trace's file in chrome://tracing's own trace viewer (issue 44): Catapult's
importer and timeline, offline in Debian's headless chromium (tests/trace_viewer.py says where the
viewer comes from; skipped, with the reason, only when it or chromium cannot be had). On the
recorded sessions (a recipe, a script with validation compiles, a torchrun job): no import
warning, every run a process named as the run, each step a top-level slice of its track with its
parts nested, compiles with their phases, the counters; then the timeline drawn and screenshot
(not blank)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import browser
import pytest
import trace_viewer

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SESSIONS = {"recipe": "session_recipe_tiny_mlp", "script": "session_script_fabric_lm",
            "ranks": "session_ranks_tiny_mlp"}


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


@pytest.fixture(scope="module")
def viewer():
    page, why = trace_viewer.find()
    if page is None:
        pytest.skip(why)
    return page


def exported(name: str, tmp_path: Path) -> tuple[Path, list[dict]]:
    session = Path(shutil.copytree(DATA / name, tmp_path / name))
    if (packed := session / "events.jsonl.gz").exists():  # kept small in the repository
        (session / "events.jsonl").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "tuimon", "export", str(session), "--trace", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0 and proc.stdout.startswith(f"tuimon: wrote {out} ("), proc.stderr
    evs = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    return out, evs


@pytest.mark.parametrize("kind", sorted(SESSIONS))
def test_the_trace_opens_in_chrome_tracings_viewer(chrome, viewer, kind, tmp_path):
    out, evs = exported(SESSIONS[kind], tmp_path)
    page, left, errors = trace_viewer.open_offline(chrome, viewer)
    try:
        model = page.evaluate(trace_viewer.IMPORT, out.read_text())
        width, height = page.evaluate(trace_viewer.SHOW)
        page.wait_for_timeout(1500)
        shot = tmp_path / f"trace-{kind}.png"
        page.screenshot(path=str(shot))
    finally:
        page.close()
    assert left == [] and errors == []  # nothing fetched, nothing thrown
    assert model["warnings"] == []  # the importer found nothing to fix or drop
    runs = {e["run"] for e in evs if e["type"] == "run_queued"}
    by_name = {p["name"]: p for p in model["processes"]}
    assert runs <= set(by_name) and "session" in by_name
    for run in runs:
        steps = [e for e in evs if e["type"] == "step" and e["run"] == run]
        threads = {t["name"]: t for t in by_name[run]["threads"]}
        for rank in sorted({e.get("rank") for e in steps}, key=str):
            track = threads["steps" if rank is None else f"rank {rank} · steps"]
            own = [e for e in steps if e.get("rank") == rank]
            assert track["top"] == len(own)  # each step a top-level slice, its parts inside it
            assert track["slices"] > track["top"] and {"step", "forward", "backward"} <= set(track["names"])
        assert {"CPU", "RSS"} <= {c.split(".")[-1] for c in by_name[run]["counters"]}
    compiled = [t for p in model["processes"] for t in p["threads"] if t["name"].endswith("compiles")]
    assert compiled and all("dynamo" in t["names"] for t in compiled)
    if kind == "script":
        threads = {t["name"] for p in model["processes"] for t in p["threads"]}
        assert "compiles: validation passes" in threads
    assert width > 1000 and height > 500
    assert not blank(shot)


def blank(png: Path) -> bool:
    """A screenshot with few colours: the timeline's slices were not drawn."""
    from PIL import Image

    im = Image.open(png).convert("RGB")
    small = im.resize((im.width // 4, im.height // 4))
    return len(small.getcolors(small.width * small.height) or []) < 50
