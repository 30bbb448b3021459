"""Statistics on synthetic event streams with answers known by construction."""

from __future__ import annotations

import json
import statistics

import pytest

from tuimon import events
from tuimon.analysis.stats import percentile, summarize
from tuimon.report import export, table
from tuimon.report.trust_text import unreliable_text


def run_events(run, mode, precision, step_ms, *, warmup=3, first_ms=None, compile_at=(),
               losses=None, n=32, peak_rss=None, replicate=None):
    rounds = {"replicate": replicate, "repeats": 9} if replicate else {}
    out = [events.make(events.RUN_QUEUED, run, mode=mode, precision=precision, **rounds),
           events.make(events.RUN_STARTED, run, mode=mode, precision=precision, device="cpu",
                       device_name="x86_64", params=1000, batch_size=n)]
    for i, ms in enumerate(step_ms):
        if i == 0 and first_ms is not None:
            ms = first_ms
        step = {"i": i, "t": 1000.0 + i, "ms": ms, "data_ms": 0.1, "n": n,
                "loss": None if losses is None else losses[i],
                "phase": "warmup" if i < warmup else "steady"}
        if i in compile_at or (i == 0 and mode != "eager" and first_ms is not None):
            step["compile_ms"] = ms * 0.9
        out.append(events.make(events.STEP, run, **step))
    if peak_rss:
        out.append(events.make(events.MEMORY, run, peak_rss=peak_rss))
    out.append(events.make(events.FINISHED, run, reason="steps",
                           compile_s=(first_ms * 0.9 / 1000) if mode != "eager" and first_ms else 0))
    return out


def by_label(summary):
    return {r.label: r for r in summary.runs}


def test_medians_percentiles_and_throughput_from_steady_steps_only():
    ms = [50.0, 12.0, 11.0] + [10.0 + (i % 5) for i in range(100)]
    s = by_label(summarize(run_events("e", "eager", "fp32", ms)))["eager/fp32"]
    steady = sorted(ms[3:])
    assert s.timing.measured == 100 and s.timing.steps == 103 and s.timing.warmup_steps == 3
    assert s.timing.median_ms == statistics.median(steady)
    assert s.timing.p10_ms == pytest.approx(percentile(steady, 0.1))
    assert s.timing.p90_ms == pytest.approx(percentile(steady, 0.9))
    assert s.timing.throughput == pytest.approx(32 / (s.timing.median_ms / 1000))
    assert s.timing.overhead_s == pytest.approx((50 + 12 + 11 - 3 * s.timing.median_ms) / 1000)
    assert s.compare.speedup == 1.0 and s.compare.baseline == "eager/fp32"


def test_percentile_matches_linear_interpolation():
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 0.1) == 2.0
    assert percentile([7.0], 0.9) == 7.0


def test_known_speedup_and_break_even():
    # eager: 10 ms steady, no extra warm-up; compiled: 8 ms steady after a 1 s first step.
    eager = run_events("eager-fp32", "eager", "fp32", [10.0] * 200)
    comp = run_events("default-fp32", "default", "fp32", [8.0] * 200, first_ms=1008.0)
    r = by_label(summarize(eager + comp))
    c = r["default/fp32"]
    assert c.compare.speedup == pytest.approx(1.25)
    assert c.timing.overhead_s == pytest.approx(1.0)  # 1008 ms first step, 8 ms would have done
    assert c.compare.breakeven_steps == 500  # 1 s extra / 2 ms saved per step
    assert c.compare.breakeven_s == pytest.approx(1.0 + 500 * 0.008)
    assert c.compile.compile_s == pytest.approx(1008 * 0.9 / 1000)
    assert "500 steps" in table.breakeven_text(c)


def test_slower_compiled_variant_never_pays_off():
    eager = run_events("eager-amp", "eager", "amp", [10.0] * 50)
    comp = run_events("default-amp", "default", "amp", [11.0] * 50, first_ms=500.0)
    c = by_label(summarize(eager + comp))["default/amp"]
    assert c.compare.speedup == pytest.approx(10 / 11)
    assert c.compare.breakeven_never and table.breakeven_text(c).startswith("never")


def test_baseline_is_eager_of_the_same_precision():
    evs = (run_events("eager-fp32", "eager", "fp32", [20.0] * 30)
           + run_events("eager-amp", "eager", "amp", [10.0] * 30)
           + run_events("default-amp", "default", "amp", [5.0] * 30, first_ms=100.0))
    r = by_label(summarize(evs))
    assert r["default/amp"].compare.baseline == "eager/amp"
    assert r["default/amp"].compare.speedup == pytest.approx(2.0)
    assert r["eager/amp"].compare.speedup == pytest.approx(1.0)


def test_recompile_steps_are_kept_out_of_the_steady_state():
    ms = [10.0] * 50
    ms[30] = 900.0  # a recompile in the middle of the run
    s = by_label(summarize(run_events("d", "default", "fp32", ms, compile_at=(30,))))["default/fp32"]
    assert s.timing.measured == 46 and s.timing.median_ms == 10.0 and s.timing.p90_ms == 10.0


def test_loss_agreement_between_variants():
    base = [2.0 - 0.01 * i for i in range(40)]
    other = list(base)
    other[17] += 0.003
    evs = (run_events("eager-fp32", "eager", "fp32", [5.0] * 40, losses=base)
           + run_events("default-fp32", "default", "fp32", [4.0] * 30, losses=other[:30]))
    c = by_label(summarize(evs))["default/fp32"]
    assert c.loss.final_loss == other[29]
    assert c.loss.common_steps == 30
    assert c.loss.max_loss_diff == pytest.approx(0.003)


def test_failed_run_and_unfinished_run_are_reported():
    evs = run_events("eager-fp32", "eager", "fp32", [5.0] * 10)
    evs += [events.make(events.RUN_QUEUED, "default-fp32", mode="default", precision="fp32"),
            events.make(events.FAILED, "default-fp32", stage="step", error="RuntimeError",
                        message="boom")]
    r = by_label(summarize(evs))
    assert r["default/fp32"].status == "failed"
    assert r["default/fp32"].failure.error == "RuntimeError: boom"
    assert r["default/fp32"].timing.median_ms is None and r["default/fp32"].compare.speedup is None
    header, rows = export.table(summarize(evs))
    assert header == ["", "eager/fp32", "default/fp32"]
    assert rows[0][2] == "failed: RuntimeError: boom"


def test_markdown_and_csv_exports():
    evs = (run_events("eager-fp32", "eager", "fp32", [10.0] * 20, losses=[1.0] * 20,
                      peak_rss=300 * 2**20)
           + run_events("default-fp32", "default", "fp32", [8.0] * 20, first_ms=400.0,
                        losses=[1.0] * 20))
    summary = summarize(evs)
    md = export.to_markdown({"name": "s", "recipe": "r.py", "argv": ["tuimon", "r.py"]}, summary)
    assert "| median step (p10–p90) | 10.0 ms (10.0 ms–10.0 ms) | 8.00 ms (8.00 ms–8.00 ms) |" in md
    # One process a variant: the spread between processes is not measured, so the interval holds
    # the assumed one (stats/noise.py FLOOR_SD) around identical steps.
    assert "| speedup vs eager | 1.00× | 1.25× (95 % CI 0.95–1.65), within noise |" in md
    assert "spread between processes not measured (one process a variant): ±11 % assumed" in md
    assert "1.0000 (max Δ 0 vs eager/fp32 over 20 steps)" in md
    assert "300.0 MiB RSS" in md
    csv_text = export.to_csv(evs, summary)
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("run,mode,precision,i,t,ms")
    assert len(lines) == 41
    assert lines[1].startswith("eager-fp32,eager,fp32,0,")


def test_bounded_collector_keeps_counts_exact_and_memory_bounded():
    from tuimon.analysis.stats import HEAD, Collector

    ms = [500.0, 20.0, 20.0] + [10.0] * 5000 + [8.0] * 200
    evs = run_events("eager-fp32", "eager", "fp32", ms, losses=[1.0] * len(ms))
    bounded = Collector(keep_steps=200)
    bounded.extend(evs)
    assert len(bounded.steps("eager-fp32")) == 3 + HEAD + 200  # kept apart, head, recent window
    r = bounded.summary().runs[0]
    assert r.timing.steps == 5203 and r.timing.measured == 5200
    assert r.timing.median_ms == 10.0  # over the head and the recent window
    assert r.timing.overhead_s == pytest.approx((500 + 20 + 20 - 3 * 10.0) / 1000)
    full = summarize(evs).runs[0]
    assert full.timing.median_ms == 10.0 and full.timing.steps == 5203
    # Summaries do not disturb the collector: asking twice gives the same answer.
    assert bounded.summary().runs[0] == r


def test_paused_time_is_summed_and_kept_out_of_the_probe_figures():
    evs = run_events("e", "eager", "fp32", [10.0] * 40)  # steps at t = 1000 .. 1039
    finished = evs.pop()
    evs += [events.make(events.CONTROL, "e", action="pause"),  # a user's command: no effect here
            events.make(events.PHASE, "e", phase="paused"), events.make(events.PHASE, "e", phase="steady"),
            finished]
    evs[-3]["t"], evs[-2]["t"] = 1010.5, 1020.5
    for t in range(1000, 1040):  # busy while stepping, idle while paused
        cpu = 5.0 if 1010.5 <= t <= 1020.5 else 100.0
        evs.append(events.make(events.SAMPLE, system={}, runs={"e": {"cpu_percent": cpu}}, devices=[]))
        evs[-1]["t"] = float(t)
    r = summarize(evs).runs[0]
    assert r.paused_s == pytest.approx(10.0)
    assert r.probes.cpu_mean == pytest.approx(100.0) and r.probes.samples == 40 - 10 - 3  # paused, warm-up
    # Two runs of one variant (a restart) get columns that say which is which.
    again = run_events("e-2", "eager", "fp32", [10.0] * 5)
    header, _ = export.table(summarize(evs + again))
    assert header == ["", "eager/fp32 (e)", "eager/fp32 (e-2)"]


def test_bounded_loss_comparison_uses_aligned_step_indices():
    from tuimon.analysis.stats import Collector

    n_eager, n_comp = 20000, 3000  # the eager run is far ahead, as in a live parallel session
    evs = (run_events("eager-fp32", "eager", "fp32", [1.0] * n_eager,
                      losses=[1.0 / (1 + i) for i in range(n_eager)])
           + run_events("default-fp32", "default", "fp32", [1.0] * n_comp,
                        losses=[1.0 / (1 + i) + (0.01 if i == 2048 else 0.0) for i in range(n_comp)]))
    bounded = Collector(keep_steps=256)
    bounded.extend(evs)
    c = next(r for r in bounded.summary().runs if r.run == "default-fp32")
    assert c.loss.common_steps == 3000 // 128 + 1  # every 128th step: the eager track's stride
    assert c.loss.max_loss_diff == pytest.approx(0.01)  # step 2048 sits on every power-of-two stride


def noisy(n, median, sigma=0.05, seed=0, rho=0.0):
    """Log-normal step times around ``median``, AR(1)-correlated in log space when rho > 0."""
    import math
    import random

    rng = random.Random(seed)
    out, z = [], 0.0
    for _ in range(n):
        z = rho * z + math.sqrt(1 - rho * rho) * rng.gauss(0, sigma)
        out.append(median * math.exp(z))
    return out


def test_a_known_speedup_is_recovered_inside_its_interval():
    evs = (run_events("eager-fp32", "eager", "fp32", noisy(2000, 10.0, seed=1))
           + run_events("default-fp32", "default", "fp32", noisy(2000, 8.0, seed=2)))
    c = by_label(summarize(evs))["default/fp32"]
    assert c.compare.speedup_lo < 1.25 < c.compare.speedup_hi
    assert c.compare.breakeven_lo is not None and c.compare.breakeven_hi is None  # it may never pay off
    # Each median alone is tight (2 000 steps); the speedup's interval is as wide as the spread
    # between processes that one process a variant cannot measure (the assumed one).
    for r in summarize(evs).runs:
        assert r.timing.median_ci_hi / r.timing.median_ci_lo < 1.01
    assert c.compare.speedup_hi / c.compare.speedup_lo > 1.6
    # Three processes a variant that land alike measure a small spread: a tight, sure interval.
    s = repeated_session(3, 10.0, 8.0, process_sigma=0.005, seed=3)
    combined = next(v for v in s.variants if v.mode == "default")
    assert combined.compare.speedup_lo < 1.25 < combined.compare.speedup_hi
    vs = combined.compare
    assert vs.speedup_hi - vs.speedup_lo < 0.1 and not vs.within_noise
    assert combined.compare.breakeven_lo is not None and combined.compare.breakeven_hi is not None


def test_no_difference_is_called_noise():
    # The compiled run compiled (its first step): a variant that compiled nothing has no speedup.
    evs = (run_events("eager-fp32", "eager", "fp32", noisy(500, 10.0, sigma=0.2, seed=3))
           + run_events("default-fp32", "default", "fp32", noisy(500, 10.0, sigma=0.2, seed=4),
                        first_ms=900.0))
    c = by_label(summarize(evs))["default/fp32"]
    assert c.compare.within_noise and c.compare.speedup_lo < 1.0 < c.compare.speedup_hi
    assert "within noise" in export.table(summarize(evs))[1][4][2]


def test_correlated_steps_widen_the_interval():
    iid = (run_events("eager-fp32", "eager", "fp32", noisy(2000, 10.0, seed=5))
           + run_events("default-fp32", "default", "fp32", noisy(2000, 8.0, seed=6)))
    ar = (run_events("eager-fp32", "eager", "fp32", noisy(2000, 10.0, seed=5, rho=0.9))
          + run_events("default-fp32", "default", "fp32", noisy(2000, 8.0, seed=6, rho=0.9)))
    a, b = by_label(summarize(iid))["default/fp32"], by_label(summarize(ar))["default/fp32"]
    assert b.timing.autocorr > 0.8 > a.timing.autocorr
    a, b = a.timing, b.timing
    assert (b.median_ci_hi - b.median_ci_lo) > 2 * (a.median_ci_hi - a.median_ci_lo)


def test_a_planted_warm_up_is_found_where_it_was_planted():
    import math

    steady = noisy(1000, 10.0, seed=7)
    warm = [10.0 + 30.0 * math.exp(-i / 8) for i in range(40)]  # settles around step 30–40
    evs = run_events("eager-fp32", "eager", "fp32", warm + steady, warmup=1)
    r = summarize(evs).runs[0]
    assert 25 <= r.timing.steady_from <= 60
    assert r.timing.median_ms == pytest.approx(10.0, rel=0.02)
    fixed = run_events("eager-fp32", "eager", "fp32", warm + steady, warmup=1)
    fixed[1]["warmup"] = "1"  # run_started: a fixed warm-up was asked for
    assert summarize(fixed).runs[0].timing.steady_from == 1


def test_a_recompile_in_steady_state_flags_the_run():
    ms = [10.0] * 300
    ms[200] = 400.0
    r = summarize(run_events("d", "default", "fp32", ms, compile_at=(200,))).runs[0]
    assert [d.code for d in r.doubts] == ["recompiled"] and "step 200" in unreliable_text(r)
    assert "unreliable" in export.to_markdown({}, summarize(run_events("d", "default", "fp32", ms,
                                                                       compile_at=(200,))))


def test_drift_misjudged_in_sequence_is_noise_under_interleaving():
    # Two identical variants on a machine that slows down 20 % over the session.
    n, drift = 2000, 0.2
    base = noisy(2 * n, 10.0, sigma=0.03, seed=8)
    slowed = [x * (1 + drift * k / (2 * n)) for k, x in enumerate(base)]  # in wall-clock order
    sequential = (run_events("eager-fp32", "eager", "fp32", slowed[:n])
                  + run_events("default-fp32", "default", "fp32", slowed[n:]))
    a, b = [], []
    for turn in range(2 * n // 50):  # turns of 50 steps, alternating
        (a if turn % 2 == 0 else b).extend(slowed[turn * 50:(turn + 1) * 50])
    interleaved = (run_events("eager-fp32", "eager", "fp32", a)
                   + run_events("default-fp32", "default", "fp32", b))
    seq = by_label(summarize(sequential))["default/fp32"]
    inter = by_label(summarize(interleaved))["default/fp32"]
    assert seq.compare.speedup < 0.95  # drift read as a slowdown
    # ... and each median is sure of its (drifted) level: only its process's own steps are in it
    assert seq.timing.median_ms / 10.0 > 1.1 and seq.timing.median_ci_lo / 10.0 > 1.1
    assert inter.compare.within_noise and inter.compare.speedup == pytest.approx(1.0, abs=0.02)


def repeated_session(k, eager_ms, compiled_ms, process_sigma, seed):
    """k rounds of eager and compiled processes; each process lands at its own level (log-normal
    around the variant's true median with ``process_sigma``), as fresh processes do on a VM."""
    import math
    import random

    rng = random.Random(seed)
    evs = []
    for i in range(1, k + 1):
        for mode, true_ms in (("eager", eager_ms), ("default", compiled_ms)):
            level = true_ms * math.exp(rng.gauss(0, process_sigma))
            run = f"{mode}-fp32" + (f"-{i}" if i > 1 else "")
            evs += run_events(run, mode, "fp32", noisy(600, level, sigma=0.03, seed=rng.randrange(10**6)),
                              replicate=i)
    return summarize(evs)


def test_repeats_interval_covers_the_spread_between_processes():
    # True speedup 1.25; each process lands ~20 % off its variant's level, past the spread a
    # single process's interval assumes. One pair of processes is then sure of a wrong answer
    # often; the combined rows measure the spread (pooled) and cover the truth.
    single_misses = combined_misses = 0
    for seed in range(40):
        single = repeated_session(1, 10.0, 8.0, process_sigma=0.2, seed=seed)
        first = next(r for r in single.runs if r.run == "default-fp32")
        assert not single.noise.measured
        single_misses += not (first.compare.speedup_lo <= 1.25 <= first.compare.speedup_hi)
        s = repeated_session(5, 10.0, 8.0, process_sigma=0.2, seed=seed)
        combined = next(v for v in s.variants if v.mode == "default")
        combined_misses += not (combined.compare.speedup_lo <= 1.25 <= combined.compare.speedup_hi)
        assert combined.compare.baseline == "eager/fp32" and len(combined.processes) == 5
        assert s.noise.measured and s.noise.df == 8  # 2 variants × (5 - 1)
    assert single_misses >= 8  # the one-process interval assumes a smaller spread
    assert combined_misses <= 4  # about 5 % expected (2 of 40); 4 leaves room for chance


def test_repeats_without_process_spread_stay_as_tight_as_their_steps_allow():
    s = repeated_session(3, 10.0, 8.0, process_sigma=0.0, seed=1)
    combined = next(v for v in s.variants if v.mode == "default")
    assert combined.compare.speedup == pytest.approx(1.25, rel=0.01)
    assert combined.compare.speedup_lo < 1.25 < combined.compare.speedup_hi
    vs = combined.compare
    assert vs.speedup_hi - vs.speedup_lo < 0.15 and not vs.within_noise


def test_repeats_table_has_one_column_per_variant_and_each_process_median():
    s = repeated_session(3, 10.0, 8.0, process_sigma=0.05, seed=2)
    header, rows = export.table(s)
    assert header == ["", "eager/fp32", "default/fp32"]
    per_process = next(r for r in rows if r[0] == "median step per process")
    assert per_process[1].count("ms") == 3
    assert "in 3 processes" in next(r for r in rows if r[0] == "steps measured")[2]
    md = export.to_markdown({}, s)
    assert "Student's t interval" in md
    assert json.loads(export.to_json({}, s))["variants"][1]["processes"][2]["run"] == "default-fp32-3"


def test_student_t_quantiles_and_welch_degrees_of_freedom():
    from tuimon.analysis.stats import Z95, t95, welch_df

    assert t95(1) == pytest.approx(12.706) and t95(4) == pytest.approx(2.776)
    assert t95(4.9) == t95(4) and t95(0.3) == t95(1)
    assert t95(40) == pytest.approx(2.021, abs=0.002) and t95(120) == pytest.approx(1.980, abs=0.002)
    assert Z95 < t95(10**6) < 1.9601
    assert welch_df(1.0, 4, 1.0, 4) == pytest.approx(8.0)  # equal variances: the pooled df
    assert welch_df(1.0, 4, 1e-6, 4) == pytest.approx(4.0)  # one side dominates: its df


def test_summary_json_nests_a_row_as_its_records(tmp_path):
    """A row is its own fields, then a record a group (records.py), then its words; the schema
    (tests/unit/test_summary_schema.py) holds every key."""
    from synthetic_session import session

    from tuimon.analysis.stats.records import GROUPS

    meta, evs, summary = export.load_session(session(tmp_path, "s", gpu=True))
    doc = json.loads(export.to_json(meta, summary))
    row = doc["runs"][1]
    groups = [k for k in row if k in GROUPS]
    assert groups == list(GROUPS) and list(row)[-1] == "words"
    assert row["timing"]["median_ms"] == summary.runs[1].timing.median_ms > 0
    assert row["compile"]["compile_s"] == summary.runs[1].compile.compile_s > 0


def test_a_summary_leaves_the_rows_it_folds_as_they_were(tmp_path):
    """The live view asks for a summary every second or so: each must read the same rows (a
    summary that added its throttle counts into a folded row's dict counted them again each time)."""
    from synthetic_session import session

    from tuimon.analysis.stats import Collector

    path = session(tmp_path, "s", gpu=True) / "events.jsonl"
    evs = [json.loads(line) for line in path.read_text().splitlines()]
    for e in evs:
        for d in e.get("devices", []):
            d["throttle_reasons"] = ["sw_thermal_slowdown"]
    collector = Collector(keep_steps=1000)
    collector.extend(evs)
    first = export.to_json({}, collector.summary())
    assert '"sw_thermal_slowdown": ' in first
    assert export.to_json({}, collector.summary()) == first
