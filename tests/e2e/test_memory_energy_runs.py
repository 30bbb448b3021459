"""Memory per phase and energy on a CPU, end to end (issue 35): a real headless session's
summary says n/a for both, keeps RSS, says why RAPL cannot be read once, and nothing raised."""

from __future__ import annotations

import json

from conftest import RECIPES

from tuimon.sessiondir import store

TINY = str(RECIPES / "tiny_mlp.py")


def test_a_cpu_session_says_na_for_memory_per_phase_and_energy(tuimon):
    proc, session = tuimon(TINY, "--headless", "--modes", "eager", "--steps", "600",
                           "--interval", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    evs, bad = store.read_events(session)
    assert bad == 0
    assert not [e for e in evs if e["type"] == "memory_phases"]  # no CUDA: nothing read
    assert not [e for e in evs if e["type"] == "step" and e.get("mem")]  # no step kept apart for it
    info = [e for e in evs if e["type"] == "probe_info" and "gpu_available" in e]
    assert len(info) == 1 and "rapl" in info[0]  # said once: null (readable) or why not
    rapl_readable = info[0]["rapl"] is None
    doc = json.loads((session / "summary.json").read_text())
    (row,) = doc["runs"]
    memory, energy = row["memory"], row["energy"]
    assert memory["mem_na"] == "cpu" and memory["mem_phases"] == {} and memory["batch_fit"] is None
    assert row["words"]["memory"]["phases"].startswith("n/a (CPU")
    assert row["probes"]["peak_rss"] > 0  # RSS as before
    if rapl_readable:  # a machine whose RAPL counters this user can read
        assert energy["energy_source"] == "rapl"
    else:  # this CI machine: no RAPL (or root-only)
        assert energy["energy_source"] is None and energy["joules_per_step"] is None
        assert energy["energy_why"]["code"] == "rapl" and energy["energy_why"]["reason"] == info[0]["rapl"]
        assert row["words"]["energy"]["per_step"] == f"n/a: {info[0]['rapl']}"
        assert row["words"]["energy"]["per_run"] == "n/a"  # the reason said once
        assert proc.stdout.count(f"CPU energy: n/a ({info[0]['rapl']})") == 1  # the headless view
    md = (session / "summary.md").read_text()
    cells = {line.split("|")[1].strip(): line.split("|")[2].strip()
             for line in md.splitlines() if line.startswith("| ")}
    assert cells["memory per phase (allocator peak)"].startswith("n/a (CPU")
    assert cells["peak memory"].endswith("RSS")
    assert "energy per step" in cells and "energy per run" in cells
    assert "memory per phase" in proc.stdout and "energy per step" in proc.stdout  # the headless table
