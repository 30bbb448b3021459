"""Profiler captures (runner/profiling.py): real torch.profiler windows on CPU, tiny models.

In-process captures through the real training loop (fast: no child start-up), then the same
through the CLI (--profile-at) and through the supervisor's ``profile`` control command.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time

import pytest
import torch
from conftest import RECIPES, TEST_RECIPES
from torch import nn

from tuimon import events
from tuimon import recipe as contract
from tuimon.analysis.stats import is_measured, summarize
from tuimon.cli.args import window_arg
from tuimon.control.supervisor import Plan, Supervisor, check_profile_options
from tuimon.report import table
from tuimon.runner import recipe_loop
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.control_lines import ControlLines
from tuimon.runner.emitter import Emitter
from tuimon.runner.engine import CaptureWindow, StepEngine
from tuimon.runner.profiling import (
    Ev,
    Options,
    Profiler,
    analyse,
    block_modules,
    link,
    nest,
    parse_command,
)
from tuimon.runner.profiling.kineto_log import KinetoLog
from tuimon.runner.trainer import Trainer
from tuimon.sessiondir import store
from tuimon.sessiondir.store import SessionStore
from tuimon.settings import RunSettings
from tuimon.variants import Variant

TINY = RECIPES / "tiny_mlp.py"
VIT = RECIPES / "vit_patchdrop.py"
ITEM = TEST_RECIPES / "item_in_forward.py"


class ListEmitter(Emitter):
    """The runner's emitter, keeping what it would have written."""

    def __init__(self) -> None:
        super().__init__(None, "t")
        self.events: list[dict] = []

    def flush(self) -> None:
        self.events.extend(self._buffer)
        self._buffer.clear()
        self._last_flush = time.perf_counter()


@pytest.fixture
def one_thread():
    # Steady, comparable step times on a small shared machine (restored afterwards).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def build(path, batch_size=16, image_size=32, **extra) -> contract.Recipe:
    module = contract.load_module(str(path))
    cfg = contract.Config(device="cpu", batch_size=batch_size, image_size=image_size, seed=0,
                          extra={k: str(v) for k, v in extra.items()})
    return contract.validate(module.build(cfg), str(path))


def train(recipe, steps, tmp_path=None, at=None, window=(1, 2, 3), backward=False, requests=(),
          control=None, compiled=False):
    """Run the real loop in this process; returns (events, profiler). ``compiled`` only tells the
    profiler the variant is compiled (the model runs eager: no compile in the test process)."""
    trainer = Trainer(recipe, "cpu")
    emitter = ListEmitter()
    profiler = Profiler(device_type="cpu", model=recipe.model, compiled=compiled,
                        defaults=Options(*window, backward), at_step=at,
                        out_dir=str(tmp_path) if tmp_path else None, run="t")
    for options in requests:
        profiler.request(options)
    recipe_loop.train_steps(trainer, emitter, steps, control=control, profiler=profiler)
    emitter.flush()
    return emitter.events, profiler


def of(evs, kind, **match):
    return [e for e in evs if e["type"] == kind and all(e.get(k) == v for k, v in match.items())]


def assert_no_profiler_left(profiler, model) -> None:
    assert profiler.capture is None
    assert not torch.autograd.profiler._is_profiler_enabled
    for m in model.modules():
        assert not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks)


# ---- real captures, in process --------------------------------------------------------------------
def test_tiny_mlp_top_ops_split_trace_and_normal_speed_after(tmp_path, one_thread):
    recipe = build(TINY, batch_size=32)
    evs, profiler = train(recipe, 260, tmp_path, at=120)
    assert_no_profiler_left(profiler, recipe.model)

    started = of(evs, events.PROFILE, state="started")
    done = of(evs, events.PROFILE, state="done")
    assert len(started) == 1 and len(done) == 1
    p = done[0]
    assert started[0]["first_step"] == 120 and started[0]["active_steps"] == [123, 125]
    assert p["recorded_steps"] == [121, 122, 123, 124, 125] and p["active_steps"] == [123, 124, 125]
    assert p["steps_recorded"] == 3 and not p["partial"] and p["activities"] == ["cpu"]
    json.dumps(p)  # the whole event is plain JSON

    # Top ops: real aten ops, plausible times, shares of the step that add up to at most 100 %.
    names = [o["name"] for o in p["top_ops"]]
    assert "aten::addmm" in names and "aten::mm" in names, names
    assert 0 < len(p["top_ops"]) <= 30
    assert not any(n.startswith(("tuimon:", "ProfilerStep", "forward: ")) for n in names)
    for o in p["top_ops"]:
        assert 0 < o["self_ms"] <= o["total_ms"] + 1e-3 and o["calls"] > 0 and 0 < o["share"] <= 1
    assert sum(o["share"] for o in p["top_ops"]) <= 1.0 + 1e-3
    assert 0 < p["step_ms"] < 1000
    split = p["split"]
    parts = [split[k] for k in ("data_ms", "forward_ms", "backward_ms", "optimizer_ms", "other_ms")]
    assert all(x >= 0 for x in parts) and split["forward_ms"] > 0 and split["backward_ms"] > 0
    assert sum(parts) == pytest.approx(p["step_ms"], rel=0.01, abs=0.01)
    # Forward module spans on an eager run (no backward attribution asked).
    assert [m["name"] for m in p["modules"]] == ["first", "rest"]
    assert all(m["forward_ms"] > 0 and m["backward_ms"] is None for m in p["modules"])
    # AdamW reads its step counters with .item() (one per parameter); tuimon's own loss read on
    # CPU is reported apart and not counted.
    syncs = {(s["op"], s["where"]): s for s in p["syncs"]}
    assert syncs[("aten::item", "optimizer")]["count"] == 6
    assert syncs[("aten::item", "loss read")]["ours"] and p["sync_count"] == 6

    # The chrome trace is in the given directory and is valid JSON.
    assert p["trace"] == str(tmp_path / "t-profile1.json") and p["trace_bytes"] > 1000
    trace = json.loads((tmp_path / "t-profile1.json").read_text())
    assert any(e.get("name") == "tuimon: forward" for e in trace["traceEvents"])
    assert p["cost"]["events"] > 100 and p["cost"]["build_s"] < 2

    # Recorded steps are marked and out of the steady state; afterwards the loop is back to speed.
    steps = of(evs, events.STEP)
    assert [s["i"] for s in steps] == list(range(260))
    assert [s["i"] for s in steps if s.get("profiled")] == p["recorded_steps"]
    assert all(s["profiled"] == 1 for s in steps if s.get("profiled"))
    assert not any(is_measured(s) for s in steps if s.get("profiled"))
    before = statistics.median(s["ms"] for s in steps[20:120])
    after = statistics.median(s["ms"] for s in steps[130:230])
    inside = statistics.median(s["ms"] for s in steps if s.get("profiled"))
    print(f"\ntiny_mlp step median: before {before:.3f} ms, inside {inside:.3f} ms, after {after:.3f} ms; "
          f"events {p['cost']['events']}, parse {p['cost']['events_s'] * 1000:.1f} ms, "
          f"tables {p['cost']['build_s'] * 1000:.1f} ms, trace {p['trace_bytes'] / 1024:.0f} KiB")
    assert after < 1.5 * before + 0.2, (before, after)
    summary = summarize([events.make(events.RUN_QUEUED, "t", mode="eager", precision="fp32"),
                         events.make(events.RUN_STARTED, "t", mode="eager", precision="fp32",
                                     warmup="0"),  # as the loop ran: no warm-up to find
                         *[{**e, "run": "t"} for e in evs]])
    r = summary.runs[0]
    assert r.timing.measured == 260 - 5 and r.timing.profiled_steps == 5 and r.timing.warmup_steps == 0
    assert r.profiles[0]["recorded_median_ms"] == pytest.approx(inside)


def test_vit_patchdrop_backward_attribution_labels_each_block(tmp_path, one_thread):
    recipe = build(VIT, batch_size=2, image_size=32)
    evs, profiler = train(recipe, 6, at=1, window=(0, 1, 2), backward=True)
    assert_no_profiler_left(profiler, recipe.model)
    p = of(evs, events.PROFILE, state="done")[0]
    assert p["backward"] is True and p["notes"] == []
    modules = {m["name"]: m for m in p["modules"]}
    blocks = [f"blocks.{i}" for i in range(12)]
    assert set(blocks) <= set(modules) and {"patch_embed", "patch_drop", "head"} <= set(modules)
    assert "norm_pre" not in modules  # an Identity: nothing to label
    for name in blocks:
        assert modules[name]["backward_ms"] > 0 and modules[name]["forward_ms"] > 0
    # The module backward spans fall inside the backward label.
    assert sum(m["backward_ms"] for m in p["modules"]) <= p["split"]["backward_ms"] * 1.05
    assert any(o["name"] == "aten::mm" for o in p["top_ops"])


def test_item_in_forward_is_flagged_at_its_module(tmp_path):
    recipe = build(ITEM)
    evs, _ = train(recipe, 12, tmp_path, at=2)
    p = of(evs, events.PROFILE, state="done")[0]
    mine = [s for s in p["syncs"] if not s["ours"]]
    assert len(mine) == 1, p["syncs"]  # SGD reads no scalars; the loss read is tuimon's
    s = mine[0]
    assert (s["op"], s["kind"], s["phase"], s["module"]) == ("aten::item", "scalar_read", "forward", "probe")
    assert s["where"] == "forward › probe" and s["count"] == 1 and p["sync_count"] == 1


def test_a_hook_that_meets_an_in_place_op_is_dropped_and_the_step_runs_again():
    class InPlaceAfter(nn.Module):  # += on a hooked module's output: backward hooks cannot take it
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.out = nn.Linear(8, 2)

        def forward(self, x):
            y = self.lin(x)
            y += 1
            return self.out(y)

    torch.manual_seed(0)
    model = InPlaceAfter()
    recipe = contract.Recipe(model, torch.optim.SGD(model.parameters(), lr=0.1),
                             nn.functional.cross_entropy, [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))])
    evs, profiler = train(recipe, 8, at=1, window=(0, 1, 2), backward=True)
    assert_no_profiler_left(profiler, model)
    p = of(evs, events.PROFILE, state="done")[0]
    assert any("backward attribution dropped" in n for n in p["notes"]), p["notes"]
    assert all(m["backward_ms"] is None for m in p["modules"])
    assert len(of(evs, events.STEP)) == 8 and of(evs, events.STEP)[-1]["loss"] is not None


def test_requests_queue_and_a_window_cut_short_still_reports():
    recipe = build(ITEM)
    evs, _ = train(recipe, 7, requests=[{"wait": 0, "warmup": 0, "active": 2}, {"active": 5}])
    first, second = of(evs, events.PROFILE, state="done")
    assert first["active_steps"] == [0, 1] and not first["partial"]
    assert second["first_step"] == 2 and second["active_steps"] == [5, 6] and second["partial"]
    assert any("cut short" in n for n in second["notes"])
    assert first["trace"] is None  # no --profile-dir: no trace


def test_the_profilers_own_lines_stay_out_of_the_runs_log(capfd):
    """Kineto writes "USDT:... profiler_start" (and, without a GPU, "gpuGetDeviceCount failed
    with code 35") on fd 2, the script's log; the script's own stderr lines stay there."""
    import sys

    class Loud(ListEmitter):  # a script that writes to stderr at each step
        def emit_step(self, *args, **kw):
            print("the script's own line", file=sys.stderr)
            super().emit_step(*args, **kw)

    recipe = build(ITEM)
    trainer = Trainer(recipe, "cpu")
    profiler = Profiler(device_type="cpu", model=recipe.model, compiled=False, defaults=Options(0, 1, 2))
    profiler.request({})
    recipe_loop.train_steps(trainer, Loud(), 6, profiler=profiler)
    err = capfd.readouterr().err
    assert "profiler_start" not in err and "USDT" not in err and "gpuGetDeviceCount" not in err, err
    assert err.count("the script's own line") == 6
    notes = []  # kineto's warnings and errors become the capture's notes; no GPU is no news
    log = KinetoLog(notes)
    assert log.keep(b"USDT:2026-11-24 10:49:33 13114:13114 SyncActivityProfilerHandler.cpp:39] "
                    b"profiler_start\nERROR:2026-11-24 10:49:33 1:1 DeviceProperties.cpp:56] "
                    b"gpuGetDeviceCount failed with code 35\nmine\nWARNING:2026-11-24 10:49:33 "
                    b"1:1 CuptiActivityApi.cpp:9] CUPTI busy\n") == b"mine\n"
    assert notes == ["torch.profiler: CUPTI busy"]


def test_a_pause_inside_a_window_ends_the_capture_with_what_it_recorded():
    r, w = os.pipe()
    try:
        # Read one line per step boundary: profile at 0, pause (and resume at once) at 1.
        os.write(w, b'profile {"wait": 0, "warmup": 0, "active": 4}\npause\nresume\n')
        evs, profiler = train(build(ITEM), 6, control=ControlLines(r))
    finally:
        os.close(w)
    done = of(evs, events.PROFILE, state="done")
    assert len(done) == 1 and done[0]["partial"] and done[0]["active_steps"] == [0]
    assert done[0]["steps_recorded"] == 1  # not the stub of the step the pause cut off
    phases = [e["phase"] for e in of(evs, events.PHASE)]
    assert "paused" in phases
    assert evs.index(done[0]) < evs.index(next(e for e in evs if e.get("phase") == "paused"))
    assert [s["i"] for s in of(evs, events.STEP) if s.get("profiled")] == [0]
    assert profiler.capture is None


def test_block_modules_skip_identity_in_place_and_what_precedes_it():
    import torchvision

    names = [n for n, _ in block_modules(torchvision.models.resnet18())]
    # bn1 is followed by ReLU(inplace=True), which is skipped too; residual blocks are blocks.
    assert names == ["conv1", "maxpool", "layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0",
                     "layer3.1", "layer4.0", "layer4.1", "avgpool", "fc"]
    seq = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.Identity(), nn.Sigmoid())
    assert [n for n, _ in block_modules(seq)] == ["0", "1", "2", "4"]


# ---- options, control lines, the tables on synthetic events ---------------------------------------
def test_options_and_control_lines():
    assert parse_command("profile") == {}
    assert parse_command('profile {"active": 3, "backward": true}') == {"active": 3, "backward": True}
    assert parse_command("pause") is None
    with pytest.raises(ValueError):
        parse_command("profile {not json")
    o = Options().merged({"active": 5, "backward": "all"})
    assert (o.wait, o.warmup, o.active, o.backward, o.steps) == (1, 2, 5, "all", 8)
    for bad in ({"active": 0}, {"wait": -1}, {"warmup": 1.5}, {"backward": "yes"}, {"steps": 3}):
        with pytest.raises(ValueError):
            Options().merged(bad)
        with pytest.raises(ValueError):
            check_profile_options(bad)
    assert window_arg("0,1,2") == (0, 1, 2)  # --profile-window, parsed once by the CLI
    for bad in ("1,2", "1,2,0", "a,b,c"):
        with pytest.raises(argparse.ArgumentTypeError):
            window_arg(bad)
    emitter = ListEmitter()
    engine = StepEngine(RunSettings.make(), emitter, ControlLines(None), CompileWatch())
    engine.add(CaptureWindow(Profiler(device_type="cpu", model=None, compiled=False))).start(engine)
    engine.profile_request('profile {"active": 0}')
    assert emitter.events[0]["state"] == "failed" and "active" in emitter.events[0]["error"]


def test_gpu_syncs_are_named_by_the_op_and_module_that_caused_them():
    # What a CUDA capture looks like (no GPU here): a .item() on a device tensor in forward, and a
    # blocking device-to-host copy inside a module's backward (the write-up's GatherBackward).
    # Kineto records CUDA runtime calls under the OS thread id and links them (and the kernels)
    # to the op that issued them by correlation id.
    def cpu(name, start, end, corr=0, linked=0, thread=1):
        return Ev(name, start, end, thread=thread, corr=corr, linked=linked)

    def gpu(name, start, end, linked):
        return Ev(name, start, end, thread=7, cpu=False, linked=linked)

    evs = [cpu("ProfilerStep#3", 0, 100), cpu("tuimon: forward", 1, 40), cpu("forward: probe", 2, 30),
           cpu("aten::item", 3, 20, corr=10), cpu("aten::_local_scalar_dense", 4, 19, corr=11),
           cpu("cudaMemcpyAsync", 5, 8, linked=11, thread=4242),
           cpu("cudaStreamSynchronize", 9, 18, linked=11, thread=4242),
           gpu("Memcpy DtoH (Device -> Pageable)", 10, 12, linked=11),
           cpu("tuimon: backward", 41, 90), cpu("backward: blocks.3", 42, 80),
           cpu("autograd::engine::evaluate_function: GatherBackward0", 43, 79, corr=20),
           cpu("GatherBackward0", 43.5, 78, corr=21), cpu("aten::scatter_add_", 44, 47, corr=25),
           cpu("cudaLaunchKernel", 45, 46, linked=25, thread=4242),
           cpu("aten::to", 48, 70, corr=22), cpu("aten::copy_", 49, 69, corr=24),
           cpu("cudaMemcpyAsync", 50, 52, linked=24, thread=4242),
           cpu("cudaStreamSynchronize", 53, 68, linked=24, thread=4242),
           gpu("scatter_add_kernel", 46, 60, linked=25),
           gpu("Memcpy DtoH (Device -> Pageable)", 61, 66, linked=24),
           Ev("tuimon: backward", 41, 90, thread=7, cpu=False, annotation=True)]
    out = analyse(nest(link(evs)), module_names=["probe", "blocks.3"], backward=True)
    syncs = {s["op"]: s for s in out["syncs"]}
    item = syncs["aten::item"]
    assert (item["kind"], item["where"], item["via"], item["context"]) == (
        "device_sync", "forward › probe", "cudaStreamSynchronize", None)
    copy = syncs["aten::copy_"]
    assert (copy["kind"], copy["where"], copy["context"]) == ("blocking_copy", "backward › blocks.3",
                                                              "GatherBackward0")
    assert out["sync_count"] == 2 and len(out["syncs"]) == 2
    assert [o["name"] for o in out["top_device_ops"]] == ["aten::scatter_add_", "aten::copy_",
                                                          "aten::_local_scalar_dense"]
    assert out["top_kernels"][0] == {"name": "scatter_add_kernel", "calls": 1, "self_ms": 0.014,
                                     "total_ms": 0.014, "share": 0.14}
    assert {m["name"]: m["backward_ms"] for m in out["modules"]} == {"probe": None, "blocks.3": 0.038}


# ---- through the CLI and the supervisor -----------------------------------------------------------
def test_compiled_variants_get_no_module_hooks_unless_asked_with_all():
    recipe = build(ITEM)
    evs, profiler = train(recipe, 8, at=1, backward=True, compiled=True)
    p = of(evs, events.PROFILE, state="done")[0]
    assert p["modules"] == [] and "backward attribution skipped on a compiled variant" in p["notes"][0]
    assert p["syncs"][0]["where"] == "forward"  # no module span to name it by
    assert_no_profiler_left(profiler, recipe.model)
    # "all" on a run not started with --profile-backward all: Dynamo would ignore the hooks.
    evs, _ = train(recipe, 8, at=1, backward="all", compiled=True)
    assert "Dynamo ignores module hooks" in of(evs, events.PROFILE, state="done")[0]["notes"][0]


def test_profile_at_through_the_cli(tuimon):
    proc, session = tuimon(str(TINY), "--headless", "--modes", "eager", "--precision", "fp32,amp",
                           "--steps", "40", "--profile-at", "10", "--profile-window", "1,1,2",
                           "--profile-backward", "--warmup", "3")
    assert proc.returncode == 0, proc.stderr
    evs, _ = store.read_events(session)
    summary = json.loads((session / "summary.json").read_text())
    for r in summary["runs"]:
        done = of(evs, events.PROFILE, run=r["run"], state="done")
        assert len(done) == 1 and done[0]["active_steps"] == [12, 13]
        assert (session / "profiles" / f"{r['run']}-profile1.json").is_file()
        assert done[0]["trace"] == str((session / "profiles" / f"{r['run']}-profile1.json").resolve())
        profiled = [s["i"] for s in of(evs, events.STEP, run=r["run"]) if s.get("profiled")]
        assert profiled == [11, 12, 13]
        assert r["timing"]["measured"] == 40 - 3 - 3 and r["timing"]["profiled_steps"] == 3
        assert r["profiles"][0]["top_ops"] and r["profiles"][0]["recorded_median_ms"] > 0
        assert f"{r['label']}: profile 1 (steps 12–13" in proc.stdout
        assert [m["name"] for m in r["profiles"][0]["modules"]] == ["first", "rest"]
        assert all(m["backward_ms"] > 0 for m in r["profiles"][0]["modules"])
        assert r["profiles"][0]["notes"] == []
    md = (session / "summary.md").read_text()
    assert "| profiler captures | 1 capture; top op" in md and "eager-fp32-profile1.json" in md


def test_profile_control_command_through_the_supervisor(tmp_path):
    s = SessionStore.create(tmp_path, "profile")
    got: list[dict] = []
    settings = RunSettings.make(recipe=str(TEST_RECIPES / "slow_steps.py"), device="cpu", warmup="0",
                                steps=100000, knobs=(("sleep_ms", "10"),), auto_profile=False)
    plan = Plan(settings, [Variant("eager", "fp32")], "sequential", interval=None)
    sup = Supervisor(s, plan, got.extend)
    status: list[str] = []
    thread = threading.Thread(target=lambda: status.append(sup.run(keep_open=True)))
    thread.start()
    run = "eager-fp32"

    def wait(pred, why):
        deadline = time.monotonic() + 60
        while not pred():
            assert time.monotonic() < deadline, why
            time.sleep(0.02)

    try:
        wait(lambda: of(list(got), events.STEP, run=run), "first step")
        with pytest.raises(ValueError):
            sup.profile(run, active=0)
        with pytest.raises(KeyError):
            sup.profile("nope")
        sup.profile(run, wait=0, warmup=1, active=2, backward=True)
        wait(lambda: of(list(got), events.PROFILE, run=run, state="done"), "the capture")
        sup.profile(run)  # again, with the run's defaults
        wait(lambda: len(of(list(got), events.PROFILE, run=run, state="done")) == 2, "a second capture")
        sup.stop(run)
        wait(lambda: sup.states()[run] == "stopped", "stopped")
    finally:
        sup.close()
        thread.join(30)
        s.close()
    assert status == ["done"]
    evs, bad = store.read_events(s.path)
    assert bad == 0
    controls = of(evs, events.CONTROL, action="profile")
    assert [c.get("options") for c in controls] == [{"wait": 0, "warmup": 1, "active": 2, "backward": True},
                                                      None]
    first, second = of(evs, events.PROFILE, state="done")
    assert first["source"] == "control" and len(first["active_steps"]) == 2 and first["backward"] is True
    assert second["window"] == {"wait": 1, "warmup": 2, "active": 3} and second["capture"] == 2
    assert (s.path / "profiles" / "eager-fp32-profile2.json").is_file()
    steps = of(evs, events.STEP)
    assert sum(1 for x in steps if x.get("profiled") == 1) == 3
    assert sum(1 for x in steps if x.get("profiled") == 2) == 5
    summary = summarize(evs)
    assert [p["capture"] for p in summary.runs[0].profiles] == [1, 2]
    assert "2 captures" in table.profiles_text(summary.runs[0])


def test_no_capture_costs_one_check_per_step_and_a_profiler_that_cannot_start_fails_alone(monkeypatch):
    from torch.profiler import record_function

    idle = Profiler(device_type="cpu", model=None, compiled=False)
    n = 100000
    t0 = time.perf_counter()
    for i in range(n):
        idle.begin_step(i)
    per_step_us = (time.perf_counter() - t0) / n * 1e6
    t0 = time.perf_counter()
    for _ in range(10000):
        with record_function("tuimon: forward"):
            pass
    label_us = (time.perf_counter() - t0) / 10000 * 1e6
    print(f"\nno capture: {per_step_us:.2f} µs per step; a label would cost {label_us:.1f} µs even "
          "with no profiler running (5 per step), which is why none is left on")
    assert per_step_us < 5

    # A profiler that cannot start (e.g. CUPTI held by another tool): the capture fails alone.
    def refuse(*args, **kwargs):
        raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")

    monkeypatch.setattr(torch.profiler, "profile", refuse)
    recipe = build(ITEM)
    evs, profiler = train(recipe, 6, at=1)
    failed = of(evs, events.PROFILE)
    assert [e["state"] for e in failed] == ["failed"] and "did not start" in failed[0]["error"]
    assert len(of(evs, events.STEP)) == 6 and not any(s.get("profiled") for s in of(evs, events.STEP))
    assert profiler.capture is None
