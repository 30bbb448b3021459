"""``tuimon compare``: real sessions (recipes and scripts) diffed, the regression guard's exit
codes, what differs named first; its matching and its intervals on synthetic sessions; bad input.

The real runs are in tests/e2e/test_compare_runs.py."""

from __future__ import annotations

import json
import math
import random
import statistics
import sys
from pathlib import Path

import pytest
from conftest import TEST_RECIPES

from tuimon import cli, events
from tuimon.analysis.compare import compare_sessions, open_session
from tuimon.analysis.stats import RunStats
from tuimon.analysis.stats.change import median_change, spread_change
from tuimon.analysis.stats.noise import ASSUMED, FLOOR_SD, Noise, pooled
from tuimon.analysis.stats.records import Timing
from tuimon.report.compare_text import guard_lines as guard
from tuimon.report.compare_text import note_text

SLOW = str(TEST_RECIPES / "slow_steps.py")
PY = sys.executable


# ---- synthetic sessions: matching, intervals, the guard -----------------------------------------
def fake_session(path: Path, runs: dict, settings: dict | None = None, meta: dict | None = None,
                 replicate: dict | None = None) -> Path:
    """A session directory as tuimon writes one: ``runs`` maps run id -> (mode, precision, axes,
    step times in ms); ``replicate``: run id -> its round, for a --repeats session."""
    path.mkdir(parents=True)
    evs = []
    for run, (mode, precision, axes, times) in runs.items():
        rounds = {"replicate": replicate[run], "repeats": 3} if replicate else {}
        evs.append(events.make(events.RUN_QUEUED, run, mode=mode, precision=precision, **rounds,
                               **({"axes": axes} if axes else {})))
        evs.append(events.make(events.RUN_STARTED, run, mode=mode, precision=precision, device="cpu",
                               device_name="cpu", torch="2.14.1", threads=2, extra={}))
        evs.append(events.make(events.PHASE, run, phase="steady"))
        t = 1000.0
        for i, ms in enumerate(times):
            t += ms / 1000.0
            evs.append({"type": "step", "run": run, "t": t, "i": i, "ms": ms, "data_ms": 0.0, "n": 8,
                        "loss": 1.0 / (i + 1), "phase": "steady" if i else "warmup"})
        evs.append(events.make(events.FINISHED, run, reason="steps", compiles=0))
    (path / "events.jsonl").write_text("".join(events.encode(e) for e in evs))
    (path / "meta.json").write_text(json.dumps({"name": path.name, "host": "vm", "torch": "2.14.1",
                                                "settings": settings or {"steps": len(times)},
                                                "status": "done", **(meta or {})}))
    return path


def times(median: float, n: int = 200, spread: float = 0.02, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [median * math.exp(rng.gauss(0.0, spread)) for _ in range(n)]


def test_variants_match_by_mode_precision_and_varying_axes(tmp_path):
    a = fake_session(tmp_path / "a", {
        "eager-fp32-w1": ("eager", "fp32", {"width": "256"}, times(10)),
        "eager-fp32-w2": ("eager", "fp32", {"width": "512"}, times(20, seed=1)),
        "default-fp32-w1": ("default", "fp32", {"width": "256"}, times(8, seed=2))})
    b = fake_session(tmp_path / "b", {
        "eager-fp32-w1": ("eager", "fp32", {"width": "256"}, times(10, seed=3)),
        "eager-fp32-w2": ("eager", "fp32", {"width": "512"}, times(30, seed=4)),
        "default-amp-w1": ("default", "amp", {"width": "256"}, times(5, seed=5))},
        meta={"torch": "2.15.0"})
    c = compare_sessions([open_session(a, "A"), open_session(b, "B")])
    assert [v.label for v in c.variants] == ["eager/fp32 · width=256", "eager/fp32 · width=512"]
    assert [note_text(n) for n in c.left_out] == ["default/fp32 · width=256: only in A",
                                                  "default/amp · width=256: only in B"]
    assert ("torch", ["2.14.1", "2.15.0"]) in c.differences
    same, slower = (v.median[1] for v in c.variants)
    assert not same.significant and abs(same.pct) < 2
    assert slower.significant and slower.pct == pytest.approx(50, abs=2)
    failures, cannot, unjudged = guard(c, 10.0, None)
    assert len(failures) == 1 and "width=512" in failures[0] and not unjudged
    # +50 % is beyond noise, but one process a side cannot rule out +60 %: neither pass nor fail.
    failures, cannot, unjudged = guard(c, 60.0, None)
    assert failures == [] and unjudged == [] and len(cannot) == 1 and "width=512" in cannot[0]
    assert "cannot tell whether the median step got more than 60 % slower" in cannot[0]
    assert guard(c, 200.0, None) == ([], [], [])


def test_an_axis_held_at_one_value_is_a_setting_not_a_key(tmp_path):
    # A plain --set width=512 in B: B's variant still matches A's; the width is a difference.
    a = fake_session(tmp_path / "a", {"eager-fp32": ("eager", "fp32", {}, times(10))},
                     settings={"set": ["width=256"]})
    b = fake_session(tmp_path / "b", {"eager-fp32": ("eager", "fp32", {"width": "512"}, times(10, seed=1))},
                     settings={"set": ["width=512"]})
    c = compare_sessions([open_session(a, "A"), open_session(b, "B")])
    assert [v.label for v in c.variants] == ["eager/fp32"]
    assert ("--set", ["width=256", "width=512"]) in c.differences


def test_repeats_sessions_compare_their_combined_rows(tmp_path):
    def repeats(name: str, medians: list[float]) -> Path:
        runs = {f"eager-fp32-{k}": ("eager", "fp32", {}, times(m, seed=k)) for k, m in enumerate(medians, 1)}
        return fake_session(tmp_path / name, runs, replicate={run: k for k, run in enumerate(runs, 1)})

    sessions = [open_session(repeats("a", [10.0, 10.3, 9.8]), "A"),
                open_session(repeats("b", [13.0, 12.6, 13.3]), "B")]
    c = compare_sessions(sessions, session_sd=0.0)  # the spread between processes alone
    (v,) = c.variants
    assert v.rows[0].processes and v.rows[1].processes  # the --repeats rows, not one process
    m = v.median[1]
    assert m.significant and 1.2 < m.lo < m.ratio < m.hi < 1.45  # Student's t over 3 processes
    # By default a session's own level (5 %, assumed) widens it; still beyond noise at +30 %.
    (v,) = compare_sessions(sessions).variants
    assert v.median[1].significant and v.median[1].lo < m.lo and v.median[1].hi > m.hi


def test_the_change_interval_combines_both_sessions_intervals():
    a = RunStats("a", "eager", "fp32", timing=Timing(median_ms=10.0, median_ci_lo=9.8, median_ci_hi=10.2))
    b = RunStats("b", "eager", "fp32", timing=Timing(median_ms=10.5, median_ci_lo=10.29, median_ci_hi=10.71))
    steps_only = Noise(0.0, 0)  # as if fresh processes always landed alike
    m = median_change(a, b, steps_only)
    # Each interval is ±1.96 standard errors of the log median; the two errors add in quadrature.
    half = 1.959964 * math.hypot(math.log(10.2 / 9.8), math.log(10.71 / 10.29)) / (2 * 1.959964)
    assert m.ratio == pytest.approx(1.05) and m.lo == pytest.approx(1.05 * math.exp(-half))
    assert m.hi == pytest.approx(1.05 * math.exp(half))
    assert m.significant
    wide = RunStats("c", "eager", "fp32", timing=Timing(median_ms=10.5, median_ci_lo=9.0, median_ci_hi=12.0))
    assert median_change(a, wide, steps_only).significant is False
    assert median_change(a, RunStats("d", "eager", "fp32", timing=Timing(median_ms=11.0)),
                         steps_only).significant is None
    # One process a side, nothing measured the spread between processes: the assumed one adds in,
    # once a side, and the same +5 % is no longer beyond noise.
    assumed = median_change(a, b, ASSUMED)
    half = 1.959964 * math.sqrt((half / 1.959964) ** 2 + 2 * FLOOR_SD ** 2)
    assert assumed.lo == pytest.approx(1.05 * math.exp(-half)) and assumed.significant is False
    # One measurement a process: a plain ratio; several: a Welch interval over them.
    assert spread_change([10.0], [12.0]).lo is None
    spread = spread_change([10.0, 10.4, 9.8], [12.0, 12.3, 11.8])
    assert spread.significant and spread.lo > 1.1
    assert spread_change([10.0, 14.0], [11.0, 9.0]).significant is False


def test_a_repeats_session_against_a_single_process_one_keeps_students_t():
    # A: three processes (10.0, 10.6, 9.5 ms: their own 95 % interval is 8.7-11.5 ms); B: one
    # process at 11.0 ms with a tight interval of its steps. B's median lies inside A's interval:
    # the change must not read as slower beyond noise (a normal quantile over three processes did).
    medians = (10.0, 10.6, 9.5)
    logs = [math.log(x) for x in medians]
    a = RunStats("a", "eager", "fp32", timing=Timing(median_ms=math.exp(statistics.fmean(logs)),
                                                     within_log_se=0.001),
                 processes=[{"run": f"a-{k}", "median_ms": x} for k, x in enumerate(medians, 1)])
    b = RunStats("b", "eager", "fp32", timing=Timing(median_ms=11.0, median_ci_lo=10.95, median_ci_hi=11.05))
    noise = pooled([a])
    assert noise.df == 2 and noise.sd == pytest.approx(statistics.stdev(logs))
    for m in (median_change(a, b, noise), median_change(b, a, noise)):
        assert m.significant is False and m.lo < 1.0 < m.hi, m
    assert median_change(a, b, noise).lo < 0.97


def test_every_compare_flag_is_documented():
    from tuimon.cli.compare import compare_parser

    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text()
    flags = {o for a in compare_parser()._actions for o in a.option_strings if o.startswith("--")}
    assert "--fail-if-slower" in flags
    assert [f for f in sorted(flags) if f"`{f}" not in page and f != "--help"] == []


# ---- bad input: one line, exit 2 --------------------------------------------------------------------
@pytest.mark.parametrize("case", ["missing", "not a session", "one session", "none in common", "bad pct"])
def test_bad_input_is_one_line_and_exit_2(case, tmp_path, capsys):
    a = fake_session(tmp_path / "a", {"eager-fp32": ("eager", "fp32", {}, times(10))})
    other = fake_session(tmp_path / "b", {"default-amp": ("default", "amp", {}, times(10))})
    (tmp_path / "plain").mkdir()
    args, expected = {
        "missing": ([a, tmp_path / "nope"], "no such directory"),
        "not a session": ([a, tmp_path / "plain"], "not a tuimon session directory (no events.jsonl)"),
        "one session": ([a], "compare needs two sessions or more, got 1"),
        "none in common": ([a, other], "no variant in common with A"),
        "bad pct": ([a, a, "--fail-if-slower", "lots"], "expected a percentage"),
    }[case]
    assert cli.main(["compare", *map(str, args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tuimon: error: ") and expected in err[0], err
