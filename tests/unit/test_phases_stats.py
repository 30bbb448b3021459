"""Issue 25, reading side: per-phase statistics and speedups (analysis/stats/phases.py) on
synthetic sessions whose steps carry a known split."""

from __future__ import annotations

import math
import random

import pytest

from tuimon import events
from tuimon.analysis import summarize

PARTS = ("data", "forward", "backward", "optimizer")


def phased_events(run: str, mode: str, parts: dict[str, float], *, other: float = 0.2,
                  steps: int = 300, seed: int = 0, sigma: float = 0.03, missing: tuple = (),
                  replicate: int | None = None, warmup: int = 3, level: float = 1.0) -> list[dict]:
    """A run whose steps split into ``parts`` (ms medians; log-normal noise), ``other`` the rest;
    the phases in ``missing`` are not seen (None: their time stays in the step)."""
    rng = random.Random(seed)
    rounds = {"replicate": replicate, "repeats": 9} if replicate else {}
    out = [events.make(events.RUN_QUEUED, run, mode=mode, precision="fp32", **rounds),
           events.make(events.RUN_STARTED, run, mode=mode, precision="fp32", device="cpu",
                       device_name="x86_64", params=1000, batch_size=32)]
    for i in range(steps):
        ph = [parts.get(p, 0.0) * level * math.exp(rng.gauss(0, sigma)) for p in PARTS]
        ms = sum(ph) + other * level * math.exp(rng.gauss(0, sigma))
        step = {"i": i, "t": 1000.0 + i, "ms": round(ms, 4), "data_ms": round(ph[0], 4), "n": 32,
                "loss": None, "phase": "warmup" if i < warmup else "steady",
                "ph": [None if p in missing else int(v * 1000 + 0.5) for p, v in zip(PARTS, ph,
                                                                                      strict=True)]}
        out.append(events.make(events.STEP, run, **step))
    out.append(events.make(events.FINISHED, run, reason="steps"))
    return out


EAGER = {"data": 1.0, "forward": 6.0, "backward": 4.0, "optimizer": 2.0}
# What compile did to each phase: forward 1.62× faster, backward 1.21×, the rest untouched.
COMPILED = {"data": 1.0, "forward": 6.0 / 1.62, "backward": 4.0 / 1.21, "optimizer": 2.0}


def row(summary, mode: str):
    return next(r for r in (summary.variants or summary.runs) if r.mode == mode)


def test_each_phase_gets_its_median_spread_and_share_of_the_step():
    s = summarize(phased_events("eager-fp32", "eager", EAGER, other=0.5))
    r = row(s, "eager")
    assert list(r.phases.step_phases) == ["data", "forward", "backward", "optimizer", "other"]
    for name, ms in (*EAGER.items(), ("other", 0.5)):
        p = r.phases.step_phases[name]
        assert p["median_ms"] == pytest.approx(ms, rel=0.02)
        assert p["p10_ms"] < p["median_ms"] < p["p90_ms"]
        assert p["ci_lo"] <= p["median_ms"] <= p["ci_hi"]
    assert sum(p["share"] for p in r.phases.step_phases.values()) == pytest.approx(1.0, abs=1e-6)
    assert r.phases.step_phases["forward"]["share"] == pytest.approx(6.0 / 13.5, rel=0.02)
    assert r.phases.phases_missing == []


def test_a_phase_not_seen_is_said_and_its_time_stays_in_other():
    s = summarize(phased_events("eager-fp32", "eager", EAGER, other=0.5, missing=("forward",)))
    r = row(s, "eager")
    assert r.phases.phases_missing == ["forward"]
    assert "forward" not in r.phases.step_phases
    assert r.phases.step_phases["other"]["median_ms"] == pytest.approx(6.5, rel=0.03)  # never a guess


def test_steps_without_a_split_leave_no_phases():
    evs = [e for e in phased_events("eager-fp32", "eager", EAGER)]
    for e in evs:
        e.pop("ph", None)
    r = row(summarize(evs), "eager")
    assert r.phases.step_phases == {} and r.phases.phases_missing == []


def test_compiles_speedup_per_phase_is_recovered_inside_its_interval():
    evs = (phased_events("eager-fp32", "eager", EAGER, seed=1)
           + phased_events("default-fp32", "default", COMPILED, seed=2))
    s = summarize(evs)
    c = row(s, "default")
    sp = {name: p.get("speedup") for name, p in c.phases.step_phases.items()}
    assert sp["forward"] == pytest.approx(1.62, rel=0.03)
    assert sp["backward"] == pytest.approx(1.21, rel=0.03)
    assert sp["optimizer"] == pytest.approx(1.0, rel=0.03)
    assert sp["data"] == pytest.approx(1.0, rel=0.03)
    for name, true in (("forward", 1.62), ("backward", 1.21), ("optimizer", 1.0), ("data", 1.0)):
        p = c.phases.step_phases[name]
        assert p["speedup_lo"] < true < p["speedup_hi"], (name, p)
        # One process a variant: the assumed spread between processes is in every interval, as
        # in the step's own (never narrower than the step's speedup interval, relatively).
        assert p["speedup_hi"] / p["speedup_lo"] >= 0.99 * c.compare.speedup_hi / c.compare.speedup_lo
    assert "speedup" not in row(s, "eager").phases.step_phases["forward"]  # the baseline itself


def test_several_processes_give_phase_speedups_the_measured_spread():
    evs = []
    rng = random.Random(5)
    for k in (1, 2, 3):
        for mode, parts in (("eager", EAGER), ("default", COMPILED)):
            level = math.exp(rng.gauss(0, 0.005))  # processes that land alike
            evs += phased_events(f"{mode}-fp32-{k}", mode, parts, seed=rng.randrange(10**6),
                                 replicate=k, level=level)
    s = summarize(evs)
    assert s.noise.measured
    c = row(s, "default")
    assert c.processes and len(c.phases.step_phases["forward"]["process_medians"]) == 3
    fwd, opt = c.phases.step_phases["forward"], c.phases.step_phases["optimizer"]
    assert fwd["speedup_lo"] > 1.5 and fwd["speedup_hi"] < 1.75  # a measured, tight spread
    assert opt["speedup_lo"] < 1.0 < opt["speedup_hi"]


def test_a_speck_of_a_phase_gets_no_speedup():
    tiny = {"data": 0.001, "forward": 6.0, "backward": 4.0, "optimizer": 2.0}
    evs = (phased_events("eager-fp32", "eager", tiny, seed=1)
           + phased_events("default-fp32", "default", {**tiny, "forward": 3.0}, seed=2))
    c = row(summarize(evs), "default")
    assert "speedup" not in c.phases.step_phases["data"]
    assert c.phases.step_phases["forward"]["speedup"] == pytest.approx(2.0, rel=0.03)


def test_phases_are_in_summary_json(tmp_path):
    evs = (phased_events("eager-fp32", "eager", EAGER, seed=1)
           + phased_events("default-fp32", "default", COMPILED, seed=2))
    d = summarize(evs).to_dict()
    runs = {r["run"]: r for r in d["runs"]}
    phases = runs["default-fp32"]["phases"]["step_phases"]
    assert set(phases) == {"data", "forward", "backward", "optimizer", "other"}
    assert phases["forward"]["speedup"] > 1.5
