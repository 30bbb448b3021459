"""Warm start without a real compile: cold and warm compile figures kept apart in a variant run in
several processes, break-even and verdict for both starts, --start over a horizon, compare (cold
with cold, warm with warm), the sweep's budget, the reasons of a miss from cache keys, the
supervisor's seeding and keeping of artifacts, the runner's bundle with a torch that lacks the
API or reads a corrupt file, the cache-lookup parser and doctor's cache lines."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_stats import run_events

from tuimon import events
from tuimon.analysis import compare_sessions
from tuimon.analysis.compare.sessions import Session
from tuimon.analysis.stats import cache_miss, summarize
from tuimon.cli import budget, doctor_caches
from tuimon.control.warm import ARTIFACTS, BUNDLE, CACHE, WarmStarts
from tuimon.envvars import ARTIFACTS as ARTIFACTS_ENV
from tuimon.report.compare_text import guard_lines as guard
from tuimon.report.miss_text import miss_text
from tuimon.report.table import table
from tuimon.report.verdict_text import line
from tuimon.runner.cache_trace import CacheTrace
from tuimon.runner.warm_start import WarmStart
from tuimon.variants import Variant

STEPS = 300
LOSS = [2.0 * 0.995 ** i for i in range(STEPS)]


def steps(ms: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [ms * (1 + 0.03 * rng.random()) for _ in range(STEPS)]


def rounds(mode: str, ms: float, cold_s: float, warm_s: float, k: int = 3) -> list[dict]:
    """A variant in ``k`` processes: round 1 compiles cold for ``cold_s``, the others warm."""
    evs = []
    for n in range(1, k + 1):
        compile_s = (cold_s if n == 1 else warm_s) if mode != "eager" else 0
        first = ms + compile_s * 1000 / 0.9 if compile_s else None
        process = run_events(f"{mode}-fp32-{n}", mode, "fp32", steps(ms * (1 + 0.01 * n), 10 * n + len(mode)),
                             first_ms=first, losses=LOSS, replicate=n)
        if mode != "eager":
            seed = {"seed": f"{mode}-fp32-1"} if n > 1 else {}
            process[0].update(start="cold" if n == 1 else "warm", **seed)
        evs += process
    return evs


def warm_session(cold_s: float = 40.0, warm_s: float = 4.0, **started) -> list[dict]:
    return ([events.make(events.SESSION_STARTED, schedule="interleave", **started)]
            + rounds("eager", 10.0, 0, 0) + rounds("default", 8.0, cold_s, warm_s))


def compiled_row(s):
    return next(v for v in s.variants if v.mode == "default")


def test_cold_and_warm_compiles_are_kept_apart_in_a_variants_row():
    s = summarize(warm_session())
    row = compiled_row(s)
    # The median of the three processes would be a warm figure (4 s): the row's own is cold.
    assert row.compile.compile_s == pytest.approx(40.0, rel=0.01)
    assert set(row.warm.starts) == {"cold", "warm"}
    cold, warm = row.warm.starts["cold"], row.warm.starts["warm"]
    assert cold["processes"] == 1 and warm["processes"] == 2
    assert warm["compile_s"] == pytest.approx(4.0, rel=0.05)
    assert cold["overhead_s"] > 35 > 5 > warm["overhead_s"]
    # ~2 ms a step saved: 40 s cold pays off near step 20,000, 4 s warm near 2,000.
    assert cold["breakeven_steps"] == pytest.approx(20_000, rel=0.1)
    assert warm["breakeven_steps"] == pytest.approx(2_000, rel=0.15)
    assert row.compare.breakeven_steps == cold["breakeven_steps"]
    header, rows = table(s)
    cells = {r[0]: r[header.index("default/fp32")] for r in rows}
    both = cells["compile / warm-up time"]
    assert both.startswith("cold: ") and " · warm: " in both
    assert cells["compile pays off after"].startswith("cold: ")


def test_the_verdict_gives_the_break_even_for_both_starts_and_start_weighs_the_horizon():
    v = summarize(warm_session()).verdict
    assert v.kind == "use" and v.winner == "default/fp32"
    assert v.breakeven_warm_s < 30 < 200 < v.breakeven_s  # wall time: overhead, then steps
    assert "cold, " in line(v) and line(v).split("compile pays off after ")[1].split(";")[0].endswith(" warm")
    # 5,000 steps: a cold compile (40 s) does not pay off, a warm one (4 s) does.
    cold = summarize(warm_session(horizon={"steps": 5000})).verdict
    assert cold.kind == "stay" and line(cold).startswith("Verdict: stay eager for 5,000 steps:")
    warm = summarize(warm_session(horizon={"steps": 5000}, start="warm")).verdict
    assert warm.kind == "use" and warm.winner == "default/fp32"
    assert "5,000 steps of training, starting warm" in line(warm)


def test_summary_start_overrides_the_sessions_own(tmp_path):
    from tuimon.analysis.stats.collect import Collector

    c = Collector(answer={"horizon": {"steps": 5000}, "start": "warm"})
    c.extend(warm_session())
    assert c.summary().verdict.kind == "use"


def _session(tmp_path: Path, name: str, evs: list[dict]) -> Session:
    path = tmp_path / name
    path.mkdir()
    (path / "meta.json").write_text(json.dumps({"name": name}))
    (path / "events.jsonl").write_text("".join(events.encode(e) for e in evs))
    from tuimon.analysis import open_session

    return open_session(path, "AB"[len(list(tmp_path.iterdir())) - 1])


def test_compare_weighs_cold_with_cold_and_warm_with_warm(tmp_path):
    a = _session(tmp_path, "a", warm_session(40.0, 4.0))
    b = _session(tmp_path, "b", warm_session(40.0, 12.0))  # only the warm compile got slower
    c = compare_sessions([a, b])
    v = next(x for x in c.variants if x.key[0] == "default")
    assert v.compile[1].ratio == pytest.approx(1.0, rel=0.05)
    assert v.warm_compile[1].ratio == pytest.approx(3.0, rel=0.1)
    failures, _, _ = guard(c, None, 50)
    assert len(failures) == 1 and "warm compile time" in failures[0]


def test_the_budget_counts_later_rounds_warm():
    variants = [Variant("eager", "fp32"), Variant("default", "fp32")]
    seen = {("default", "fp32"): [40.0], ("default", "fp32", "warm"): [4.0]}
    assert budget.share(600, variants, 3, 2, seen, warm_rounds=True)["compile_s"] == pytest.approx(48.0)
    assert budget.share(600, variants, 3, 2, seen)["compile_s"] == pytest.approx(120.0)  # --cold
    guessed = budget.share(600, variants, 3, 2, {("default", "fp32"): [40.0]}, warm_rounds=True)
    assert guessed["compile_s"] == pytest.approx(40.0 * (1 + 2 * budget.WARM_SHARE))


def lookup(compile_id="0/0", cache="fx", state="miss", key="k1", width=256, config="c1", **more):
    return {"compile_id": compile_id, "cache": cache, "state": state, "key": key,
            "parts": {"gm": f"g{width}", "example_inputs[0]": f"i{width}", "torch_version": "t"},
            "briefs": {"example_inputs[0]": f"float32[{width}, 64] cpu"}, "config": config,
            "config_parts": {"inductor_config[max_autotune]": config}, **more}


def miss_reasons(*args) -> list[str]:
    """Why a warm start missed, in report/miss_text.py's words."""
    return [miss_text(p) for p in cache_miss.miss_reasons(*args)]


def test_a_miss_is_explained_by_the_key_parts_and_the_facts_that_differ():
    reasons = miss_reasons([lookup(width=512, key="k2")], [lookup(state="hit")],
                           {"params": 300, "extra": {"width": "512"}, "device": "cpu"},
                           {"params": 100, "extra": {"width": "256"}, "device": "cpu"},
                           {"torch": "2.14.1"}, {"torch": "2.9.1"}, {"kind": "dir"}, {"fx": {"miss": 1}})
    assert reasons[0] == "torch: 2.9.1 there, 2.14.1 here"
    assert "--set width: 256 there, 512 here" in reasons
    assert "input shapes or dtypes differ: float32[256, 64] cpu there, float32[512, 64] cpu here" in reasons
    assert "the graph itself (the model's code or structure) differs" in reasons
    # The same key, yet a miss: the artifacts did not hold it.
    (same,) = miss_reasons([lookup()], [lookup(state="hit")], {}, {}, None, None, {}, {})
    assert "the same key as the source's" in same
    # Another compile mode's options: the config entry is named.
    config = miss_reasons([lookup(key="k3", config="c2")], [lookup(state="hit")], {}, {}, None, None, {}, {})
    assert config == ["Inductor config differs: inductor_config[max_autotune] (a compile mode's options, "
                      "or the code's own)"]
    # A compile the source never made.
    (none,) = miss_reasons([lookup(compile_id="1/0")], [lookup(state="hit")], {}, {}, None, None, {}, {})
    assert "no such lookup in the source" in none
    # The bundle on a CPU: graphs hit, kernels compiled again.
    cache = {"fx": {"hit": 1}, "kernels": 8, "kernel_s": 9.0}
    (kernels,) = miss_reasons([lookup(state="hit")], [lookup(state="hit")], {"device": "cpu"}, {},
                              None, None, {"kind": "bundle"}, cache)
    assert kernels.startswith("8 C++ kernel compiles again (9.0 s): torch's bundle holds the graphs")


def test_the_supervisor_seeds_warm_starts_only_from_artifacts_and_keeps_the_first_runs(tmp_path):
    v = Variant("default", "fp32")
    warm = WarmStarts(tmp_path)
    assert warm.plan("default-fp32", v, 1) == {"start": "cold"}
    assert warm.plan("default-fp32-2", v, 2) == {"start": "warm", "seed": "default-fp32"}
    assert warm.plan("eager-fp32", Variant("eager", "fp32"), 1) == {}
    cache, env, said = warm.prepare("default-fp32", v)
    assert said == [] and json.loads(env[ARTIFACTS_ENV])["save"] is True
    (cache / "fxgraph").mkdir(parents=True)
    (cache / "fxgraph" / "entry").write_text("graph")
    (cache / "locks").mkdir()
    kept = warm.finish("default-fp32", True)
    assert kept["action"] == "kept" and kept["dir_bytes"] == 5 and not cache.exists()
    assert (tmp_path / ARTIFACTS / "default-fp32" / CACHE / "fxgraph" / "entry").is_file()
    cache2, env2, (seeded,) = warm.prepare("default-fp32-2", v)
    assert seeded["action"] == "seeded" and seeded["kind"] == "dir" and seeded["seed"] == "default-fp32"
    assert (cache2 / "fxgraph" / "entry").read_text() == "graph" and not (cache2 / "locks").exists()
    assert json.loads(env2[ARTIFACTS_ENV])["save"] is False
    assert warm.finish("default-fp32-2", True) is None and not cache2.exists()  # a warm run keeps nothing
    # --warm-from bundle: an empty cache, the runner loads the bundle.
    (tmp_path / ARTIFACTS / "default-fp32" / BUNDLE).write_bytes(b"bundle")
    bundled = WarmStarts(tmp_path, warm_from="bundle")
    bundled.plan("default-fp32", v, 1)
    bundled.plan("default-fp32-3", v, 3)
    cache3, env3, (said3,) = bundled.prepare("default-fp32-3", v)
    assert said3["kind"] == "bundle" and json.loads(env3[ARTIFACTS_ENV])["load"].endswith(BUNDLE)
    assert list(cache3.iterdir()) == []


def test_missing_artifacts_make_a_cold_start_said_in_one_line(tmp_path):
    v = Variant("default", "fp32")
    warm = WarmStarts(tmp_path)
    warm.plan("default-fp32", v, 1)
    warm.plan("default-fp32-2", v, 2)
    assert warm.finish("default-fp32", False) is None  # it never compiled: nothing kept
    _, env, (said,) = warm.prepare("default-fp32-2", v)
    assert said["action"] == "unusable" and "\n" not in said["text"]
    assert said["text"].startswith("no compile artifacts in ") and said["text"].endswith("compiles cold")
    assert warm.starts["default-fp32-2"][0] == "cold" and "load" not in json.loads(env[ARTIFACTS_ENV])
    s = summarize([events.make(events.RUN_QUEUED, "default-fp32-2", mode="default", precision="fp32",
                               start="warm", seed="default-fp32"), {**said, "run": "default-fp32-2"}])
    assert s.runs[0].warm.start == "cold" and s.runs[0].warm.artifact_notes == [said["text"]]


class Emitter:
    def __init__(self):
        self.said = []

    def emit_now(self, type_, **fields):
        self.said.append({"type": type_, **fields})


def test_the_runner_says_when_torch_has_no_bundle_api_or_cannot_read_the_file(tmp_path):
    old = SimpleNamespace(__version__="2.4.0", compiler=SimpleNamespace())
    e = Emitter()
    WarmStart(e, {"load": str(tmp_path / "x.bin"), "save": True, "dir": str(tmp_path)}).load(old)
    WarmStart(e, {"save": True, "dir": str(tmp_path)}).save(old)
    assert e.said[0]["action"] == "unusable" and "torch 2.4.0 has no torch.compiler.load_cache_artifacts" \
        in e.said[0]["text"]
    assert e.said[1]["action"] == "saved" and "the cache directory alone is kept" in e.said[1]["text"]
    (tmp_path / BUNDLE).write_bytes(b"not a bundle")
    new = SimpleNamespace(__version__="2.14.1", compiler=SimpleNamespace(
        load_cache_artifacts=lambda data: None,
        save_cache_artifacts=lambda: (b"bytes", SimpleNamespace(artifacts={"inductor": ["a", "b"]}))))
    e = Emitter()
    WarmStart(e, {"load": str(tmp_path / BUNDLE)}).load(new)
    WarmStart(e, {"load": str(tmp_path / "missing.bin")}).load(new)
    assert [x["action"] for x in e.said] == ["unusable", "unusable"]
    assert "torch could not read" in e.said[0]["text"] and "compiles cold" in e.said[0]["text"]
    assert "missing.bin: No such file or directory: this run compiles cold" in e.said[1]["text"]
    WarmStart(e, {"save": True, "dir": str(tmp_path / "out")}).save(new)
    assert e.said[-1] == {"type": "artifacts", "action": "saved", "kind": "bundle", "bytes": 5,
                          "entries": {"inductor": 2}}
    assert (tmp_path / "out" / BUNDLE).read_bytes() == b"bytes"


def test_cache_lookups_carry_their_key_parts_and_the_config_once():
    e = Emitter()
    trace = CacheTrace(e)
    payload = {"cache_state": "miss", "key": "fabc", "components": [
        "[aaaaaaaaaaaa] gm: GraphModule()\n\ndef forward(self, x): ...",
        "[bbbbbbbbbbbb] example_inputs[0]: TensorMetadata(dtype=torch.float32, shape=torch.Size([32, 64]), "
        "stride=(64, 1), device=device(type='cpu'), layout=torch.strided)",
        "[cccccccccccc] cpp_runtime_thread_count: 2",
        "[dddddddddddd] inductor_config[max_autotune]: False"]}
    trace.lookup("fx_graph_cache_miss", json.dumps(payload), "0/0")
    trace.lookup("fx_graph_cache_hit", json.dumps({**payload, "cache_state": "hit"}), "1/0")
    first, second = e.said
    assert first["cache"] == "fx" and first["state"] == "miss" and first["key"] == "fabc"
    assert first["parts"] == {"gm": "aaaaaaaaaa", "example_inputs[0]": "bbbbbbbbbb",
                              "cpp_runtime_thread_count": "cccccccccc"}
    assert first["briefs"] == {"example_inputs[0]": "float32[32, 64] cpu", "cpp_runtime_thread_count": "2"}
    assert first["config_parts"] == {"inductor_config[max_autotune]": "dddddddddd"}
    assert "config_parts" not in second and second["config"] == first["config"]


def test_doctor_says_where_the_caches_are_and_whether_a_remote_one_is_on(tmp_path):
    (tmp_path / "ind" / "fxgraph").mkdir(parents=True)
    (tmp_path / "ind" / "fxgraph" / "x").write_bytes(b"12345")
    facts = {"version": "2.4.0", "caches": {
        "inductor": str(tmp_path / "ind"), "inductor_from": "torch's default",
        "triton": str(tmp_path / "none"), "mega_cache": False,
        "remote": {"FX graph": True, "autotuning": False}, "remote_env": {"TORCHINDUCTOR_REDIS_HOST": "r"}}}
    rows = dict(doctor_caches.cache_rows(doctor_caches.caches_report(facts)))
    assert rows["torch's Inductor cache"].startswith(f"{tmp_path / 'ind'}: 5 B, 1 files, writable")
    assert rows["Triton cache"] == f"{tmp_path / 'none'}: absent, writable"
    assert rows["remote caches"].startswith("on: FX graph (TORCHINDUCTOR_REDIS_HOST=r)")
    assert rows["warm start"].startswith("torch 2.4.0 has no torch.compiler.save_cache_artifacts")
    assert dict(doctor_caches.cache_rows({}))["compile caches"].startswith("n/a")


def test_the_compile_pane_shows_the_start_and_the_variants_cold_and_warm():
    from rich.console import Console

    from tuimon.ui.model import RunLive
    from tuimon.ui.widgets.compile_pane import render, variant_of

    s = summarize(warm_session())
    warm = next(r for r in s.runs if r.run == "default-fp32-2")
    row = variant_of(s.variants, "default-fp32-2")
    live = RunLive("default-fp32-2", "default", "fp32")
    live.compiles.append({"compile_id": "0/0", "forward": True, "frame": "forward", "seconds": 4.0,
                          "phases": {"aot": 3.0}, "cache": "warm"})
    console = Console(width=160, record=True)
    console.print(render(live, warm, row))
    text = console.export_text()
    assert "start: warm from default-fp32-1's artifacts" in text
    assert "default/fp32, 3 processes: compile cold: 40.0 s · warm: 4.0 s; pays off after cold: " in text


def test_warm_adds_a_warm_round_of_the_compiled_variants_when_a_variant_runs_in_one_process():
    from tuimon.control.runs import Plan
    from tuimon.control.warm import initial_rounds
    from tuimon.settings import RunSettings

    eager, default = Variant("eager", "fp32"), Variant("default", "fp32")
    plan = Plan(RunSettings.make(recipe="r.py"), [eager, default], warm={"extra": True})
    assert initial_rounds(plan) == [(eager, 1), (default, 1), (default, 2)]
    plan.warm = {}
    assert initial_rounds(plan) == [(eager, None), (default, None)]
    plan.settings = plan.settings.but(repeats=2)
    assert initial_rounds(plan) == [(eager, 1), (default, 1), (eager, 2), (default, 2)]


def carried_session(**started) -> list[dict]:
    """Every compiled process warm from an earlier session S0, whose cold compile (40 s) the
    cache_source event carries: a second session of the same script, started by default."""
    cold = {"processes": 1, "compile_s": 40.0, "overhead_s": 44.0, "first_step_ms": 44_000.0,
            "phases": {"dynamo": 1.0}, "cache": {}, "session": "S0"}
    source = events.make(events.CACHE_SOURCE, session="S0", path="/x/S0", auto=True,
                         runs={"default-fp32": {"mode": "default", "precision": "fp32", "axes": {},
                                                "lookups": [], "cold": cold}})
    compiled = []
    for n in range(1, 4):
        process = run_events(f"default-fp32-{n}", "default", "fp32", steps(8.0 * (1 + 0.01 * n), 10 * n + 7),
                             first_ms=8.0 + 4.0 * 1000 / 0.9, losses=LOSS, replicate=n)
        process[0].update(start="warm", seed="S0")
        process.insert(1, events.make(events.ARTIFACTS, f"default-fp32-{n}", action="seeded", kind="dir",
                                      seed="S0", seed_run="default-fp32"))
        compiled += process
    return ([events.make(events.SESSION_STARTED, schedule="interleave", **started), source]
            + rounds("eager", 10.0, 0, 0) + compiled)


def test_a_session_started_warm_from_another_carries_its_cold_compile():
    s = summarize(carried_session())
    assert s.cache_source == "S0" and s.cache_auto
    row = compiled_row(s)
    assert list(row.warm.starts) == ["cold", "warm"]
    assert row.warm.starts["cold"]["session"] == "S0" and row.warm.starts["cold"]["compile_s"] == 40.0
    assert row.warm.starts["warm"]["processes"] == 3
    assert row.compile.compile_s == pytest.approx(4.0, rel=0.05)  # the row's own: measured here
    v = s.verdict
    # The break-even weighs the carried cold compile, the warm one beside it.
    assert v.breakeven_warm_s < 30 < 200 < v.breakeven_s
    header, rows = table(s)
    cells = {r[0]: r[header.index("default/fp32")] for r in rows}
    assert cells["compile / warm-up time"].startswith("cold (earlier): ")
    # --start cold (the default) over 5,000 steps: the carried cold compile does not pay off.
    assert summarize(carried_session(horizon={"steps": 5000})).verdict.kind == "stay"


def test_a_starts_compile_phases_keep_their_order_whatever_the_hash_seed():
    """summary.json's ``phases`` of a start were a set's order, so a session's summary.json
    changed from one `tuimon summary` to the next (the process's string hash seed)."""
    import subprocess
    import sys

    code = ("from tuimon.analysis.stats.rows import RunStats;"
            "from tuimon.analysis.stats.warm import _figures;"
            "from tuimon.analysis.stats.records import Compiles;"
            "r = RunStats(run='a', mode='default', precision='fp32');"
            "r.compile = Compiles(compile_phases={'dynamo': 1.0, 'aot': 2.0, 'inductor': 3.0, 'codegen': 4.0,"
            " 'backward': 5.0}); print(list(_figures([r])['phases']))")
    said = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                           capture_output=True, text=True, check=True).stdout for seed in range(6)}
    assert said == {"['dynamo', 'aot', 'inductor', 'codegen', 'backward']\n"}
