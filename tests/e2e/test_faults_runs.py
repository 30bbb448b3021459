"""The real runs of tests/unit/test_faults.py: the CLI in a child process, real scripts and compiles.
The pure tests of the same feature stay in tests/unit/test_faults.py."""

from __future__ import annotations

import json

from test_faults import ALLOC


def test_a_run_that_maps_fresh_memory_every_step_faults_and_pin_malloc_stops_it(tuimon):
    """64 MiB written at every step: above glibc's largest adaptive threshold each step maps it
    and faults every page in (16 384 pages), as the user's own process would (the default:
    issue 33.10); with --pin-malloc it is reused."""
    args = [ALLOC, "--headless", "--modes", "eager", "--steps", "120", "--warmup", "5", "--no-probes"]
    proc, session = tuimon(*args)
    assert proc.returncode == 0, proc.stderr
    pinned_proc, pinned = tuimon(*args, "--pin-malloc")
    assert pinned_proc.returncode == 0, pinned_proc.stderr
    plain = json.loads((session / "summary.json").read_text())["runs"][0]
    held = json.loads((pinned / "summary.json").read_text())["runs"][0]
    assert plain["load"]["faults_per_step"] > 10_000, plain["load"]
    assert held["load"]["faults_per_step"] < 100, held["load"]
    assert "| page faults per step |" in (session / "summary.md").read_text()
    assert json.loads((pinned / "meta.json").read_text())["settings"]["pin_malloc"] is True
    said = (pinned / "summary.md").read_text(), (session / "summary.md").read_text()
    assert "- allocator: glibc malloc's thresholds pinned alike in every run" in said[0]
    assert "- allocator: as each process had it, as your own would (the default; --pin-malloc" in said[1]
    assert json.loads((session / "meta.json").read_text())["settings"]["pin_malloc"] is False
