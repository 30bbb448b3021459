"""tuimon's runner on other torch releases than its own (issue 24): a script run in another
interpreter, and the recipe runner started in it.

The fast tests run everywhere, with this interpreter's torch and with each interpreter named in
TUIMON_COMPAT_PYTHON (several, separated by ``os.pathsep``); the end-to-end ones only with
those. ``make compat TORCH_VERSIONS="2.9.1 2.4.0"`` builds one such interpreter per version and
runs this file against it (the version matrix).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import RECIPES, ROOT, SCRIPTS
from test_end_to_end import runs_of

from tuimon.analysis.stats import RunStats, SessionSummary
from tuimon.report.session_text import runtime_line
from tuimon.runner.compile_trace import TraceListener
from tuimon.runner.compile_watch import CompileWatch
from tuimon.runner.torch_env import absolute_paths

COMPAT = [p for p in os.environ.get("TUIMON_COMPAT_PYTHON", "").split(os.pathsep) if p]
PYTHONS = [sys.executable, *COMPAT]
needs_compat = pytest.mark.skipif(not COMPAT, reason="TUIMON_COMPAT_PYTHON names no other interpreter")


def torch_version(python: str) -> str:
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"], check=True,
                          capture_output=True, text=True).stdout.strip()


# ---- auto-compile: a module whose forward is torch's own ----------------------------------------
AUTO = textwrap.dedent("""
    import sys, torch
    from torch import nn
    import torch._dynamo.utils as du
    from tuimon.runner.script.compile_modes import CompileModes
    said = []
    modes = CompileModes("default", True, lambda text, **fields: said.append(text))
    modes.install()
    compile_ = modes._orig_compile
    modes._orig_compile = lambda fn, **kw: compile_(fn, backend="eager")  # Dynamo alone: fast
    class Mine(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
        def forward(self, x):
            return self.lin(x).relu()
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()) if sys.argv[1] == "builtin" else Mine()
    modes.optimizer_made(torch.optim.SGD(model.parameters(), lr=0.1))
    for i in range(3):
        model(torch.randn(2, 4)).sum().backward()
        if i == 0:
            modes.trained.first_step(1)  # the first step's end: its module compiled from here
    print(du.counters["frames"]["ok"], du.counters["stats"]["unique_graphs"], modes.asked())
""")


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("module", ["builtin", "mine"])
def test_auto_compile_compiles_the_trained_module(python, module):
    """torch 2.9 and older skip every frame of a torch.nn built-in handed to Module.compile()
    (nothing compiled, silently): tuimon's auto-compile gives Dynamo a frame of its own."""
    proc = subprocess.run([python, "-c", AUTO, module], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    frames, graphs, asked = proc.stdout.split()
    assert int(frames) >= 1 and int(graphs) >= 1 and asked == "True", (python, proc.stdout)


# ---- paths, cache counts, the nothing-compiled warning, the summary's header ---------------------
def test_paths_handed_to_torch_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"TORCHINDUCTOR_CACHE_DIR": "sess/x/inductor-cache/run", "TRITON_CACHE_DIR": "/abs/triton",
           "TORCH_TRACE": "", "OTHER": "rel"}
    absolute_paths(env)
    assert env == {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "sess/x/inductor-cache/run"),
                   "TRITON_CACHE_DIR": "/abs/triton", "TORCH_TRACE": "", "OTHER": "rel"}


class Spy:
    def __init__(self):
        self.events = []

    def emit_now(self, type_, **fields):
        self.events.append({"type": type_, **fields})


def record(**metadata) -> logging.LogRecord:
    r = logging.LogRecord("torch.__trace", logging.DEBUG, __file__, 1, "", None, None)
    r.metadata = {"frame_id": 0, "frame_compile_id": 0, **metadata}
    return r


def test_cache_counts_from_artifacts_where_the_metrics_have_none():
    """torch 2.9: no *_local_cache_*_count in the metrics; the artifacts count them."""
    spy = Spy()
    listener = TraceListener(spy)
    for name in ("aotautograd_cache_miss", "fx_graph_cache_miss", "fx_graph_bundled_cache_hit"):
        listener.emit(record(artifact={"name": name}))
    listener.emit(record(compilation_metrics={"compile_id": "0/0", "duration_us": 1e6}))
    listener.emit(record(artifact={"name": "fx_graph_cache_miss"}))
    listener.emit(record(bwd_compilation_metrics={"compile_id": "0/0", "duration_us": 5e5}))
    for name in ("fx_graph_cache_hit", "fx_graph_cache_hit", "aotautograd_cache_hit"):  # warm
        listener.emit(record(artifact={"name": name}))
    listener.emit(record(compilation_metrics={"compile_id": "1/0", "duration_us": 1e5}))
    # torch 2.10+: the metrics' own counts win
    listener.emit(record(artifact={"name": "fx_graph_cache_miss"}))
    listener.emit(record(compilation_metrics={"compile_id": "2/0", "duration_us": 1e5,
                                              "inductor_fx_local_cache_hit_count": 1,
                                              "inductor_fx_local_cache_miss_count": 0}))
    got = [(e["fx_cache_hits"], e["fx_cache_misses"], e["aot_cache_hits"], e["aot_cache_misses"],
            e["cache"]) for e in spy.events if e["type"] == "compile"]
    # and no note (these metrics are torch 2.9's): compiles and their cache lookups alone
    assert {e["type"] for e in spy.events} == {"compile", "cache_lookup"}
    assert got == [(0, 1, 0, 1, "cold"), (0, 1, 0, 0, "cold"), (2, 0, 1, 0, "warm"), (1, 0, 0, 0, "warm")]


def test_a_compiled_variant_that_compiled_nothing_says_so():
    watch = CompileWatch()
    assert watch.nothing_compiled("default") is None  # no callbacks to tell: nothing said
    watch.installed = True
    assert "nothing was compiled: this default variant ran eager" in watch.nothing_compiled("default")
    assert watch.nothing_compiled("eager") is None
    watch._start()
    watch._end()
    assert watch.nothing_compiled("default") is None


def test_the_summary_names_the_torch_each_run_used():
    def run(name, torch, cuda="12.8"):
        return RunStats(name, "eager", "script", torch=torch, python="3.11.7", cuda=cuda)

    meta = {"torch": "2.14.1"}
    one = SessionSummary(runs=[run("a", "2.9.1+cu128"), run("b", "2.9.1+cu128")])
    assert runtime_line(meta, one) == ("torch 2.9.1+cu128 (Python 3.11.7, CUDA 12.8); "
                                       "tuimon itself: torch 2.14.1")
    same = SessionSummary(runs=[run("a", "2.14.1+cpu", None)])
    assert runtime_line(meta, same) == "torch 2.14.1+cpu (Python 3.11.7, CUDA none: a CPU build)"
    two = SessionSummary(runs=[run("a", "2.9.1+cu128"), run("b", "2.14.1+cu130", "13.0")])
    assert " in a; torch 2.14.1+cu130 (Python 3.11.7, CUDA 13.0) in b" in runtime_line(meta, two)
    assert runtime_line(meta, SessionSummary(runs=[RunStats("a", "eager", "fp32")])) == "torch 2.14.1"


# ---- end to end, in another interpreter -------------------------------------------------------
@needs_compat
@pytest.mark.parametrize("python", COMPAT)
def test_a_script_run_in_another_torch_compiles_with_a_relative_out(python, tuimon, tmp_path):
    """`tuimon run --out sess -- OTHER/python plain_loop.py`: tuimon compiles the script's
    nn.Sequential, Inductor's C++ compile finds its (relative) cache, and the summary names the
    torch the script ran."""
    version = torch_version(python)
    proc, _ = tuimon("run", "--headless", "--modes", "eager,default", "--steps", "12", "--out", "sess",
                     "--", python, str(SCRIPTS / "plain_loop.py"), "--workers", "0", "--epochs", "1",
                     "--ckpt", str(tmp_path / "ckpt.pt"), cache=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    session = next((tmp_path / "sess").glob("*"))
    _, runs = runs_of(session)
    compiled = runs["default-script"]
    assert compiled["run_started"][0]["torch"] == version
    assert compiled["run_started"][0]["python"] and "cuda" in compiled["run_started"][0]
    assert compiled["compile"] and sum(c["seconds"] for c in compiled["compile"]) > 0
    assert compiled["step"][1].get("compile_ms", 0) > 0
    texts = [w["text"] for w in compiled.get("warning", [])]
    assert not any("nothing was compiled" in t for t in texts), texts
    if not any("logs less of its compiles" in t for t in texts):  # torch 2.4 says it cannot tell
        assert sum(c["fx_cache_misses"] for c in compiled["compile"]) >= 1  # a fresh cache: cold
    assert not any(p.get("state") == "failed" for p in compiled.get("profile", [])), compiled["profile"]
    md = (session / "summary.md").read_text()
    assert f"torch {version} (Python" in md, md[:800]


@needs_compat
@pytest.mark.parametrize("python", COMPAT)
def test_the_recipe_runner_in_another_torch(python, tmp_path):
    """`python -m tuimon.runner` (what `tuimon RECIPE` starts, with tuimon's own interpreter)
    started in the other one: a compiled variant of tiny_mlp, its events on a pipe, a relative
    Inductor cache."""
    from tuimon.settings import RunSettings

    read, write = os.pipe()
    settings = RunSettings.make(recipe=str(RECIPES / "tiny_mlp.py"), run="default-fp32",
                                mode="default", steps=4, auto_profile=False, event_fd=write)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHINDUCTOR_CACHE_DIR": "cache",
           **settings.environ()}
    proc = subprocess.Popen([python, "-m", "tuimon.runner"],
                            cwd=tmp_path, env=env, pass_fds=(write,), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    os.close(write)
    with os.fdopen(read) as pipe:
        evs = [json.loads(line) for line in pipe]
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out[-3000:]
    kinds = {}
    for e in evs:
        kinds.setdefault(e["type"], []).append(e)
    assert kinds["run_started"][0]["torch"] == torch_version(python)
    assert kinds["compile"] and kinds["finished"][0]["compiles"] >= 1
    assert (tmp_path / "cache").is_dir()
    assert not any("nothing was compiled" in w["text"] for w in kinds.get("warning", []))


def test_torch_2_4_compile_metrics_are_read_and_what_they_lack_is_said():
    """torch 2.4: phase times in seconds under older names; no duration_us, no backward metrics,
    no chromium events or artifacts: the times are read, the rest said once as a note."""
    spy = Spy()
    listener = TraceListener(spy)
    legacy = {"compile_id": "0/0", "entire_frame_compile_time_s": 10.0, "backend_compile_time_s": 9.0,
              "inductor_compile_time_s": 7.0, "code_gen_time_s": 5.0, "co_name": "forward"}
    listener.emit(record(compilation_metrics=legacy))
    listener.emit(record(compilation_metrics={**legacy, "compile_id": "1/0"}))
    notes = [e for e in spy.events if e["type"] == "warning"]
    assert len(notes) == 1 and notes[0]["note"] and "no live phases" in notes[0]["text"]
    compile_ = [e for e in spy.events if e["type"] == "compile"][0]
    assert compile_["seconds"] == 10.0
    assert compile_["phases"] == {"dynamo": 1.0, "aot": 2.0, "inductor": 2.0, "codegen": 5.0}


def test_an_older_torch_is_refused_in_one_line_and_a_newer_one_noted(tmp_path):
    from types import SimpleNamespace

    from tuimon.runner.torch_env import TorchTooOld, check_version

    with pytest.raises(TorchTooOld, match=r"^tuimon needs torch 2\.4 or newer; .* has torch 2\.2\.1\+cpu"):
        check_version(SimpleNamespace(__version__="2.2.1+cpu"))
    assert check_version(SimpleNamespace(__version__="2.4.0")) is None
    assert check_version(SimpleNamespace(__version__="2.14.1+cu130")) is None
    assert "newer than tuimon was tested with (2.4 to 2.14)" in check_version(
        SimpleNamespace(__version__="2.16.0.dev20270101"))
    # A script whose interpreter has an older torch: one line and exit code 2, no traceback.
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("__version__ = '2.1.0'\n")
    script = tmp_path / "train.py"
    script.write_text("import torch\nprint('trained')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}"}
    proc = subprocess.run([sys.executable, "-m", "tuimon", "run", "--headless", "--out", str(tmp_path / "s"),
                           "--", sys.executable, str(script)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "tuimon needs torch 2.4 or newer" in proc.stderr and "Traceback" not in proc.stderr
