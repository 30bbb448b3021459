"""The achievable peak: FLOP/s of a short GEMM benchmark per dtype on this machine, cached per
machine, device, torch version and thread count (``python -m tuimon.runner.peak_bench``, a child
of ``tuimon doctor``; a run's FLOP count reads it, runner/flops.py's caller).

What it measures: square matmuls (``torch.mm``) at a few sizes, each timed over repeats, the
best of them (a peak is what the machine can do, so the fastest repeat is the figure: a
neighbour's load only slows repeats down, which keeps the best stable). On the CPU fp32 and bf16;
on CUDA fp32 (TF32 off), tf32, bf16, fp16 and, where ``torch._scaled_mm`` runs, fp8. The whole
benchmark takes a few seconds, once: its result is kept in the user's cache
(``$XDG_CACHE_HOME/tuimon/peaks.json``, or ``TUIMON_PEAK_CACHE``), one entry per key, and a
second process that needs it while one measures waits for it (a file lock) rather than
measuring beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import socket
import time

from tuimon.envvars import PEAK_CACHE

CPU_SIZES = (256, 512)
CUDA_SIZES = (4096, 8192)
BUDGET_S = 0.15  # per dtype, size and round, at most (a slow dtype, a CPU's bf16 without AMX, stops early)
REPEATS = 5  # timed repeats a size, at least (the best counts)
# passes over every dtype and size, more while the best is not reached twice; at least three, so
# that a slowdown must outlast ~3 s to become the figure (CI: two slowed rounds agreed at 174
# GFLOP/s right after the parallel tests, where the two runs after read 208 and 209)
MIN_ROUNDS, MAX_ROUNDS = 3, 6
AGREE = 0.03  # two rounds within 3 % of each other agree


def cache_path() -> str:
    env = os.environ.get(PEAK_CACHE)
    if env:
        return env
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "tuimon", "peaks.json")


def machine_key(torch, device: str) -> str:
    """Which entry: this host, the device (a GPU's name; the CPU's model), torch's version and,
    on a CPU, the threads a GEMM gets (a run's --threads changes its peak)."""
    if device.startswith("cuda"):
        what = torch.cuda.get_device_name(torch.device(device))
    else:
        what = f"cpu {_cpu_model()} threads {torch.get_num_threads()}"
    return f"{socket.gethostname()} | {what} | torch {torch.__version__}"


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def dtypes_for(torch, device: str) -> list[str]:
    if not device.startswith("cuda"):
        return ["fp32", "bf16"]
    out = ["fp32", "tf32", "fp16"]
    if torch.cuda.is_bf16_supported():
        out.insert(2, "bf16")
    if hasattr(torch, "float8_e4m3fn") and torch.cuda.get_device_capability(device) >= (8, 9):
        out.append("fp8")
    return out


def _time_mm(torch, device: str, dtype_name: str, n: int) -> float | None:
    """The best FLOP/s of an n×n×n matmul in ``dtype_name``; None when it cannot run here."""
    on_cuda = device.startswith("cuda")
    dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
             "fp16": torch.float16, "fp8": torch.float32}[dtype_name]
    # Its own generator: this runs inside a user's run (runner/flop_event.py, the first run on
    # a machine), and a draw from the global one would change what that run trains on after
    # (a script's next epoch shuffled otherwise than its other variants': issue 32's CI)
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
    b = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
    if dtype_name == "fp8":
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.tensor(1.0, device=device)

        def mm():
            return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        def mm():
            return torch.mm(a, b)
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    try:
        mm()  # warm-up: kernels chosen, memory allocated
        sync()
    except (RuntimeError, TypeError):
        return None
    best = float("inf")
    spent = 0.0
    inner = 10 if on_cuda else 1
    for k in range(10_000):
        t0 = time.perf_counter()
        for _ in range(inner):
            mm()
        sync()
        took = (time.perf_counter() - t0) / inner
        best = min(best, took)
        spent += took * inner
        if k + 1 >= REPEATS and spent >= BUDGET_S:
            break
    return 2.0 * n ** 3 / best


def measure(torch, device: str) -> dict:
    """{peaks: {dtype: FLOP/s}, ...} of this device, the best over the sizes (dtypes that cannot
    run here left out), with ``seconds`` spent, ``sizes`` and ``rounds``.

    On a CPU the GEMM is also timed on one thread, and the peak is the larger of the all-thread
    best and the one-thread best times the threads: a GEMM on all of a shared machine's cores
    stalls whenever one of its threads is descheduled (on this project's 2-core VM under a load
    of 8 the all-thread best read 5 to 166 GFLOP/s from one run to the next, the one-thread best
    103 ± 0.2), while a one-thread GEMM finds a quiet slice within a few hundred repeats. GEMM
    scales close to linearly with cores, so the product is an achievable peak a run's MFU is
    weighed against conservatively (never above what the cores can do together).

    Every dtype and size is timed in rounds spread over a few seconds, and the best round
    counts once a second round came within ``AGREE`` of it: a slowdown that outlasts one round
    (a VM's host busy, its clock lowered: CI read one run 12 % under two others) no longer
    becomes the figure, which is kept for good and weighs every later run's MFU."""
    t0 = time.perf_counter()
    on_cuda = device.startswith("cuda")
    sizes = CUDA_SIZES if on_cuda else CPU_SIZES
    threads = None if on_cuda else torch.get_num_threads()
    tf32 = torch.backends.cuda.matmul.allow_tf32 if on_cuda else None
    names = dtypes_for(torch, device)
    rounds: list[dict[str, tuple[float, float | None]]] = []
    try:
        while len(rounds) < MAX_ROUNDS:
            rounds.append(_round(torch, device, names, sizes, threads, tf32 is not None))
            if len(rounds) >= MIN_ROUNDS and _settled(rounds, threads):
                break
    finally:
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        if on_cuda:
            # measured inside a run (its first on this machine): the GEMMs' ~1 GB of blocks back
            # to the device, or that run's VRAM would read higher than its other variants'
            torch.cuda.empty_cache()
    peaks, per_thread, all_threads = {}, {}, {}
    for name in names:
        seen = [r[name] for r in rounds if name in r]
        if not seen:
            continue
        all_threads[name] = max(a for a, _ in seen)
        ones = [o for _, o in seen if o is not None]
        if ones:
            per_thread[name] = max(ones)
        peaks[name] = max(_figure(r, threads) for r in seen)
    out = {"peaks": peaks, "sizes": list(sizes), "rounds": len(rounds),
           "seconds": round(time.perf_counter() - t0, 3),
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if per_thread:
        out.update(threads=threads, per_thread=per_thread, all_threads=all_threads)
    return out


def _round(torch, device, names, sizes, threads, cuda_tf32) -> dict[str, tuple[float, float | None]]:
    """One pass over every dtype: {dtype: (all-thread best, one-thread best or None)}."""
    found = {}
    for name in names:
        if cuda_tf32:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        every = [f for n in sizes if (f := _time_mm(torch, device, name, n)) is not None]
        if not every:
            continue
        one = None
        if threads and threads > 1:
            torch.set_num_threads(1)
            try:
                ones = [f for n in sizes if (f := _time_mm(torch, device, name, n)) is not None]
            finally:
                torch.set_num_threads(threads)
            one = max(ones) if ones else None
        found[name] = (max(every), one)
    return found


def _figure(pair: tuple[float, float | None], threads: int | None) -> float:
    every, one = pair
    return max(every, one * threads) if one is not None and threads else every


def _settled(rounds: list[dict], threads: int | None) -> bool:
    """Whether each dtype's best round was reached again, within ``AGREE``, by another."""
    for name in {n for r in rounds for n in r}:
        figures = sorted((_figure(r[name], threads) for r in rounds if name in r), reverse=True)
        if len(figures) < 2 or figures[1] < (1 - AGREE) * figures[0]:
            return False
    return True


def _read(path: str) -> dict:
    with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as f:
        found = json.load(f)
        if isinstance(found, dict):
            return found
    return {}


def cached(torch, device: str) -> dict | None:
    """This machine's entry, if measured before (no measuring)."""
    return _read(cache_path()).get(machine_key(torch, device))


def peak(torch, device: str, fresh: bool = False) -> dict:
    """This machine's entry ({peaks, sizes, seconds, measured_at, key, cached}): from the cache,
    or measured now and kept (``fresh``: measured again whatever is kept)."""
    path, key = cache_path(), machine_key(torch, device)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process measuring: wait for its figure
        try:
            entry = None if fresh else _read(path).get(key)
            if entry is not None:
                return {**entry, "key": key, "cached": True}
            entry = measure(torch, device)
            every = _read(path)
            every[key] = entry
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(every, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
            return {**entry, "key": key, "cached": False}
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tuimon.runner.peak_bench")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--fresh", action="store_true", help="measure again, whatever is cached")
    p.add_argument("--cached-only", action="store_true", help="never measure: the cache or null")
    args = p.parse_args(argv)
    try:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        if args.cached_only:
            entry = cached(torch, args.device)
            out = None if entry is None else {**entry, "key": machine_key(torch, args.device),
                                              "cached": True}
        else:
            out = peak(torch, args.device, fresh=args.fresh)
    except Exception as exc:  # noqa: BLE001 - one line for the doctor, whatever failed
        out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
