"""What tuimon's script hooks cost a step (run by hand): .venv/bin/python bench/script_hooks.py

A plain training step as a script writes it (a DataLoader batch, forward, loss.backward(),
optimizer.step(), zero_grad), its forward spinning for ~1 ms or ~10 ms so that only the harness
varies, timed with and without the hooks of ``tuimon run -- python train.py`` in one process:
the hooks are installed as the sitecustomize installs them (events to /dev/null, no control
pipe), and for the bare blocks torch's own functions are put back. Blocks alternate (bare,
hooked, bare, ...), so drift hits both alike; reported: the median over blocks of the per-step
difference, in µs and in % of the step, for ``--runs`` runs and their median.

Set PYTHONPATH to another checkout to measure its tuimon with this script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # appended: a PYTHONPATH tuimon (another checkout) wins

import torch  # noqa: E402
import torch.optim.optimizer as optim  # noqa: E402
import torch.utils.data.dataloader as dataloader  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


def patched_names() -> dict:
    """Every torch attribute the hooks replace, as it is now."""
    return {
        "backward": torch.autograd.backward,
        "next": dataloader._BaseDataLoaderIter.__next__,
        "train": torch.nn.Module.train,
        "optimizer_init": torch.optim.Optimizer.__init__,
        "post_hooks": dict(optim._global_optimizer_post_hooks),
        "pre_hooks": dict(optim._global_optimizer_pre_hooks),
        "module_pre_hooks": dict(torch.nn.modules.module._global_forward_pre_hooks),
        "slots": {},  # module -> its _compiled_call_impl (the forward phase's timer: hooked)
    }


def put(names: dict) -> None:
    torch.autograd.backward = names["backward"]
    dataloader._BaseDataLoaderIter.__next__ = names["next"]
    torch.nn.Module.train = names["train"]
    torch.optim.Optimizer.__init__ = names["optimizer_init"]
    for hooks, key in ((optim._global_optimizer_post_hooks, "post_hooks"),
                       (optim._global_optimizer_pre_hooks, "pre_hooks"),
                       (torch.nn.modules.module._global_forward_pre_hooks, "module_pre_hooks")):
        hooks.clear()
        hooks.update(names[key])
    for module, slot in names["slots"].items():
        module._compiled_call_impl = slot


WITHOUT = ("forward", "data", "backward", "optimizer-pre", "timeline")


def found(bare: dict, hooked: dict, model, without: set[str]) -> None:
    """After a hooked block found the trained module: its timer on when hooked (unless left
    out), off when bare."""
    hooked["slots"][model] = None if "forward" in without else model._compiled_call_impl
    bare["slots"][model] = None
    hooked["module_pre_hooks"] = dict(torch.nn.modules.module._global_forward_pre_hooks)


def leave_out(bare: dict, hooked: dict, without: set[str]) -> None:
    """--without: the hooked blocks run with these parts of the hooks taken out (an ablation:
    what each part costs is the difference to a full run)."""
    if "data" in without:
        hooked["next"] = bare["next"]
    if "backward" in without:
        hooked["backward"] = bare["backward"]
    if "optimizer-pre" in without:
        hooked["pre_hooks"] = dict(bare["pre_hooks"])


def stub_timeline() -> None:
    """--without timeline: the Timeline's enter/leave/end do nothing (before the hooks bind them)."""
    from tuimon.runner.phases import Timeline

    Timeline.enter = lambda self, part: None
    Timeline.leave = lambda self: None
    Timeline.end = lambda self: (None, None, None, None)


def timed_steps(loader, model, opt, ms: float) -> float:
    """µs a step over one pass of ``loader``: a forward spinning ``ms`` first, as scripts step."""
    t0 = time.perf_counter()
    n = 0
    for x, y in loader:
        end = time.perf_counter() + ms / 1000.0
        while time.perf_counter() < end:
            pass
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        n += 1
    return (time.perf_counter() - t0) / n * 1e6


def measure(ms: float, blocks: int, steps: int, bare: dict, hooked: dict,
            without: set[str]) -> list[float]:
    """Per-step µs (hooked - bare), one per pair of blocks."""
    put(hooked)  # first: the optimizer is made hooked (counted, and the forward timer armed)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    data = TensorDataset(torch.zeros(steps * 4, 8), torch.zeros(steps * 4, 1))
    loader = DataLoader(data, batch_size=4)

    def block() -> float:
        return timed_steps(loader, model, opt, ms)

    block()  # warm up both paths once; the forward timer finds the model
    found(bare, hooked, model, without)
    put(bare)
    block()
    diffs = []
    for _ in range(blocks):
        put(bare)
        a = block()
        put(hooked)
        b = block()
        diffs.append(b - a)
    put(hooked)
    return diffs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--without", default="", help=f"parts of the hooks left out, comma-separated: "
                   f"{', '.join(WITHOUT)} (what a part costs: the difference to a full run)")
    args = p.parse_args()
    without = {w for w in args.without.split(",") if w}
    if without - set(WITHOUT):
        p.error(f"--without takes {', '.join(WITHOUT)}")
    torch.set_num_threads(1)
    if "timeline" in without:
        stub_timeline()
    bare = patched_names()
    devnull = os.open(os.devnull, os.O_WRONLY)
    from tuimon.runner.script import hooks

    hooks.start(json.dumps({"run": "bench", "mode": "eager", "precision": "script",
                            "event_fd": devnull, "control_fd": None, "seed": None,
                            "no_step_s": 1e9}))
    hooked = patched_names()
    leave_out(bare, hooked, without)
    print(f"torch {torch.__version__}, {os.cpu_count()} cores; blocks of steps alternating bare / "
          f"hooked, {args.blocks} pairs a run" + (f"; without {args.without}" if without else ""))
    for ms, steps in ((1.0, 300), (10.0, 40)):
        medians = []
        for _ in range(args.runs):
            diffs = measure(ms, args.blocks, steps, bare, hooked, without)
            medians.append(statistics.median(diffs))
        mid = statistics.median(medians)
        runs = ", ".join(f"{m:+.1f}" for m in medians)
        print(f"~{ms:g} ms steps: hooks add {mid:+.1f} µs/step ({mid / (ms * 10):+.2f} %), "
              f"runs: {runs} µs")


if __name__ == "__main__":
    main()
