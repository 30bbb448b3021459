"""What tuimon's script hooks cost a step (run by hand): .venv/bin/python bench/script_hooks.py

A plain training step as a script writes it (a DataLoader batch, forward, loss.backward(),
optimizer.step(), zero_grad), its forward spinning for ~1 ms or ~10 ms so that only the harness
varies, timed with and without the hooks of ``tuimon run -- python train.py`` in one process:
the hooks are installed as the sitecustomize installs them (events to /dev/null, no control
pipe), and for the bare blocks torch's own functions are put back. Rounds of blocks (bare, then
hooked), so drift hits both alike; reported: the median over rounds of the per-step
difference, in µs and in % of the step, for ``--runs`` runs and their median.

``--against CHECKOUT`` (e.g. ``git archive bf21998 | tar -x -C /tmp/before``) installs that
tree's hooks too, in the same process, and runs its blocks in the same rounds (the two hooked
blocks in turn first and last): "this tree's over its" is what a change costs, without the drift
between two processes (±5 µs a run at ~1 ms here; an A/A of the same tree reads within ±3).
``--without PART`` takes a part of this tree's hooks out (what it costs: the difference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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


WITHOUT = ("forward", "data", "backward", "optimizer-pre")


def found(names: dict, model, without: set[str] = frozenset()) -> None:
    """After a block under ``names`` found the trained module: its timer (the module's slot, None
    for a tuimon without one, or left out) and the module-finding hook as they are now."""
    names["slots"][model] = None if "forward" in without else model._compiled_call_impl
    names["module_pre_hooks"] = dict(torch.nn.modules.module._global_forward_pre_hooks)


def leave_out(bare: dict, hooked: dict, without: set[str]) -> None:
    """--without: the hooked blocks run with these parts of the hooks taken out (an ablation:
    what each part costs is the difference to a full run)."""
    if "data" in without:
        hooked["next"] = bare["next"]
    if "backward" in without:
        hooked["backward"] = bare["backward"]
    if "optimizer-pre" in without:
        hooked["pre_hooks"] = dict(bare["pre_hooks"])


def install(bare: dict, checkout: str | None = None) -> dict:
    """The hooks of this tuimon (or of the one in ``checkout``, imported apart and forgotten
    again, so two trees' hooks live in one process), installed over torch's own functions as the
    sitecustomize installs them (events to /dev/null): torch's names as they hook them."""
    put(bare)
    if checkout is not None:
        sys.path.insert(0, checkout)
        _forget_tuimon()
    from tuimon.runner.script import hooks

    devnull = os.open(os.devnull, os.O_WRONLY)
    hooks.start(hook_settings(run="bench", mode="eager", precision="script", event_fd=devnull,
                              seed=None, no_step_s=1e9))
    names = patched_names()
    if checkout is not None:
        sys.path.remove(checkout)
        _forget_tuimon()
    return names


def hook_settings(**flat) -> str:
    """A run's settings as the supervisor hands them to the hooks, from the tuimon imported now
    (tuimon/settings.py); an older checkout's hooks read the same names as one flat JSON."""
    try:
        from tuimon.settings import RunSettings
    except ImportError:
        return json.dumps(flat)
    return RunSettings.make(**flat).to_json()


def _forget_tuimon() -> None:
    for name in [n for n in sys.modules if n == "tuimon" or n.startswith("tuimon.")]:
        del sys.modules[name]


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


def arm(sets: dict[str, dict], model, loader, ms: float, without: set[str] = frozenset()):
    """Each hooked set sees the optimizer made (counted, its forward timer armed) and runs a
    warm-up pass, in which its forward timer finds the model; the bare set's slot stays empty.
    Returns the optimizer."""
    opt = None
    for name in [n for n in sets if n != "bare"]:
        sets[name]["slots"][model] = None
        put(sets[name])
        if opt is None:
            opt = torch.optim.SGD(model.parameters(), lr=0.0)
        else:
            torch.optim.SGD.__init__(opt, model.parameters(), lr=0.0)
        timed_steps(loader, model, opt, ms)
        found(sets[name], model, without if name == "hooked" else set())
    sets["bare"]["slots"][model] = None
    put(sets["bare"])
    timed_steps(loader, model, opt, ms)
    return opt


def measure(ms: float, blocks: int, steps: int, sets: dict[str, dict],
            without: set[str]) -> dict[str, list[float]]:
    """Per-step µs of each hooked set against the bare blocks of its round (``sets``: "bare"
    first), one a round; with two hooked sets, also "delta": the second less the first, in the
    same round. A round runs every set once, the hooked ones in turn first and last."""
    model = torch.nn.Linear(8, 1)
    data = TensorDataset(torch.zeros(steps * 4, 8), torch.zeros(steps * 4, 1))
    loader = DataLoader(data, batch_size=4)
    hooked = [name for name in sets if name != "bare"]
    opt = arm(sets, model, loader, ms, without)
    out: dict[str, list[float]] = {name: [] for name in hooked}
    if len(hooked) == 2:
        out["delta"] = []
    for r in range(blocks):
        order = hooked if r % 2 == 0 else hooked[::-1]
        took = {}
        for name in ("bare", *order):
            put(sets[name])
            took[name] = timed_steps(loader, model, opt, ms)
        for name in hooked:
            out[name].append(took[name] - took["bare"])
        if len(hooked) == 2:
            out["delta"].append(took[hooked[1]] - took[hooked[0]])
    put(sets[hooked[-1]])
    return out


def count_calls(sets: dict[str, dict], steps: int = 200) -> dict[str, tuple[float, float]]:
    """Calls a step each hooked set adds to the bare step, (Python functions, C functions), as
    ``sys.setprofile`` sees them: no clock, so the same on every run (what a change adds to the
    hot path, read without the VM's noise)."""
    model = torch.nn.Linear(8, 1)
    data = TensorDataset(torch.zeros(steps * 4, 8), torch.zeros(steps * 4, 1))
    loader = DataLoader(data, batch_size=4)
    opt, counts = arm(sets, model, loader, 0.0), {}
    for name in sets:
        put(sets[name])
        timed_steps(loader, model, opt, 0.0)  # just before: the once-a-second flush is not due
        seen = [0, 0]

        def profile(frame, event, arg, seen=seen):
            if event == "call":
                seen[0] += 1
            elif event == "c_call":
                seen[1] += 1

        sys.setprofile(profile)
        timed_steps(loader, model, opt, 0.0)
        sys.setprofile(None)
        counts[name] = (seen[0] / steps, seen[1] / steps)
    py, c = counts.pop("bare")
    return {name: (a - py, b - c) for name, (a, b) in counts.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--ms", default="1,10", help="step lengths to measure, ms, comma-separated")
    p.add_argument("--against", metavar="CHECKOUT", help="another tree's tuimon (a git archive of "
                   "an older commit), its hooks in the same process, in the same rounds: what "
                   "this tree's hooks add over that one's; each run a process of its own, the two "
                   "trees installed in turn first")
    p.add_argument("--without", default="", help=f"parts of the hooks left out, comma-separated: "
                   f"{', '.join(WITHOUT)} (what a part costs: the difference to a full run)")
    p.add_argument("--calls", action="store_true", help="count the calls a step the hooks add "
                   "(sys.setprofile; no timing, the same on every run)")
    p.add_argument("--child", choices=("against", "hooked"), help=argparse.SUPPRESS)
    args = p.parse_args()
    without = {w for w in args.without.split(",") if w}
    if without - set(WITHOUT):
        p.error(f"--without takes {', '.join(WITHOUT)}")
    if args.calls:
        sets = {"bare": patched_names()}
        if args.against:
            sets["against"] = install(sets["bare"], os.path.abspath(args.against))
        sets["hooked"] = install(sets["bare"])
        for name, (py, c) in count_calls(sets).items():
            who = "its" if name == "against" else "this tree's"
            print(f"{who} hooks add {py:.1f} Python "
                  f"calls and {c:.1f} C calls a step ({py + c:.1f} in all)")
        return
    print(f"torch {torch.__version__}, {os.cpu_count()} cores; rounds of blocks (bare, then the "
          f"hooked ones in turn), {args.blocks} rounds a run" +
          (f"; against {args.against}, a process a run" if args.against else "") +
          (f"; without {args.without}" if without else ""), flush=True)
    apart = args.against and args.child is None
    medians = _runs_apart(args) if apart else _runs_here(args, without)
    if args.child:
        print(json.dumps(medians))
        return
    for ms, by_name in medians.items():
        for name, said in (("against", "its hooks add"), ("hooked", "hooks add"),
                           ("delta", "this tree's over its")):
            if name in by_name:
                mid = statistics.median(by_name[name])
                runs = ", ".join(f"{m:+.1f}" for m in by_name[name])
                print(f"~{ms} ms steps, {said}: {mid:+.1f} µs/step ({mid / (float(ms) * 10):+.2f} %), "
                      f"runs: {runs} µs")


def _runs_here(args, without: set[str]) -> dict[str, dict[str, list[float]]]:
    """{ms: {set: the median of each run's rounds}}, every run in this process."""
    torch.set_num_threads(1)
    bare = patched_names()
    sets = {"bare": bare}
    first = args.child or "against"
    for name in (first, "hooked" if first == "against" else "against"):
        if name == "against" and args.against:
            sets["against"] = install(bare, os.path.abspath(args.against))
        elif name == "hooked":
            sets["hooked"] = install(bare)
            leave_out(bare, sets["hooked"], without)
    sets = {"bare": bare, **{k: sets[k] for k in ("against", "hooked") if k in sets}}
    out: dict[str, dict[str, list[float]]] = {}
    for ms in args.ms.split(","):
        steps = max(40, int(300 / max(float(ms), 1.0)))
        if args.child:  # a process's first rounds read high (its warm-up): not kept
            measure(float(ms), 5, steps, sets, without)
        for _ in range(args.runs if args.child is None else 1):
            for name, diffs in measure(float(ms), args.blocks, steps, sets, without).items():
                out.setdefault(ms, {}).setdefault(name, []).append(statistics.median(diffs))
    return out


def _runs_apart(args) -> dict[str, dict[str, list[float]]]:
    """--against: each run a process of its own (where the code and data land in memory differs
    between processes and shifts a tree's cost by a few µs: an A/A read -4 µs in one process,
    -1 in another), the two trees installed in turn first."""
    out: dict[str, dict[str, list[float]]] = {}
    argv = sys.argv[1:]
    for r in range(args.runs):
        first = ("against", "hooked")[r % 2]
        got = subprocess.run([sys.executable, __file__, *argv, "--child", first],
                             capture_output=True, text=True, check=True)
        one = json.loads(got.stdout.strip().splitlines()[-1])
        for ms, by_name in one.items():
            for name, vals in by_name.items():
                out.setdefault(ms, {}).setdefault(name, []).extend(vals)
        delta = ", ".join(f"~{ms} ms {v['delta'][0]:+.1f}" for ms, v in one.items())
        print(f"  run {r + 1} ({first} installed first): this tree's over its {delta} µs", flush=True)
    return out


if __name__ == "__main__":
    main()
