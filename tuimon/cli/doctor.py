"""``tuimon doctor``: what this machine gives tuimon, in the lines a bug report needs.

Versions (tuimon, Python, torch, torchvision, timm, textual, ...), CUDA as torch sees it, the
GPUs and the driver through NVML (the probe's own wrapper, `tuimon.probes.gpu.GpuProbe`), the C++
compiler Inductor will use on CPU and Triton on GPU, cores and memory, where sessions go and
whether that is writable, and the persistent Inductor cache of ``--warm-cache``.

This module never imports torch itself: what only torch knows is asked of a child process
(``python -m tuimon.runner.torch_facts``, which prints one JSON object), so a broken torch install is a line
in the report, not a crash, and ``tuimon --help`` stays as fast as ever.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from tuimon import __version__
from tuimon.cli.args import DEFAULT_CACHE, DEFAULT_OUT, Parser
from tuimon.cli.doctor_caches import cache_rows, caches_report
from tuimon.cli.doctor_peaks import peak_report, peak_rows
from tuimon.exit_codes import EXIT_OK
from tuimon.failures import fmt_bytes

PACKAGES = ("torch", "torchvision", "timm", "textual", "rich", "psutil", "nvidia-ml-py", "triton")
TORCH_TIMEOUT_S = 180.0  # importing torch and asking CUDA: seconds, minutes on a cold disk


def doctor_parser() -> Parser:
    p = Parser(prog="tuimon doctor",
                description="Say what this machine gives tuimon: versions, CUDA, GPUs and NVML, "
                "the compiler Inductor uses, cores, memory, where sessions go, the Inductor "
                "cache. Paste it into a bug report.")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: a table on a terminal, plain lines otherwise; json: one object "
                   "(default: text)")
    p.add_argument("--peak", action="store_true",
                   help="measure this machine's GEMM peak per dtype (a few seconds) and keep it "
                   "for the runs' MFU (default: show the kept one)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="the session directory to check, as given to a run (default: the run's "
                   "default, ./tuimon-sessions)")
    return p


def doctor_command(args: argparse.Namespace) -> int:
    """The ``doctor`` subcommand (bad flags were one line and exit 2 already, in `Parser`)."""
    report = collect(out=args.out or DEFAULT_OUT, cache=DEFAULT_CACHE, measure=args.peak)
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        show(report)
    return EXIT_OK


# --- collecting -----------------------------------------------------------------------------


def collect(*, out: str, cache: Path, nvml: Any = None, torch: dict | None = None,
            measure: bool = False, peak: dict | None = None) -> dict:
    """Everything doctor reports, JSON-serialisable. `nvml` (a pynvml module), `torch` (the
    child's answer) and `peak` (the peak child's) can be injected for tests."""
    torch = torch if torch is not None else torch_report()
    return {
        "tuimon": {"version": __version__, "path": str(Path(__file__).resolve().parent)},
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "platform": platform.platform()},
        "packages": {name: _version(name) for name in PACKAGES},
        "torch": torch,
        "nvml": nvml_report(nvml),
        "cpu": cpu_report(),
        "sessions": sessions_report(out),
        "cache": cache_report(cache),
        "caches": caches_report(torch),  # torch.compile's own caches (doctor_caches.py)
        "peak": peak if peak is not None else peak_report(torch, measure),  # doctor_peaks.py
    }


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def torch_report(timeout: float = TORCH_TIMEOUT_S) -> dict:
    """What torch says, asked of a child (`python -m tuimon.runner.torch_facts`): never torch here."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)  # the child finds this very tuimon
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.run([sys.executable, "-m", "tuimon.runner.torch_facts"], capture_output=True,
                              text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"asking torch took over {timeout:g} s (killed)"}
    except OSError as exc:
        return {"ok": False, "error": f"cannot start {sys.executable}: {exc.strerror or exc}"}
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {"ok": False, "error": f"asking torch failed: {tail}"}


def nvml_report(nvml: Any = None) -> dict:
    """GPUs, memory and driver through the probe's NVML wrapper (failures are values)."""
    from tuimon.probes.gpu import GpuProbe

    with GpuProbe(nvml) as probe:
        report: dict[str, Any] = {"available": probe.available, "reason": probe.reason,
                                  "driver": None, "cuda_driver": None, "devices": []}
        if probe.available:
            # _query is the one door to NVML: a missing or failing function is None, not a raise
            report["driver"] = _text(probe._query(-1, "driver", "nvmlSystemGetDriverVersion"))
            cuda = probe._query(-1, "cuda_driver", "nvmlSystemGetCudaDriverVersion")
            if isinstance(cuda, int) and cuda > 0:
                report["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
            for d in probe.sample()["devices"]:
                report["devices"].append({"index": d["index"], "name": d["name"], "uuid": d["uuid"],
                                          "memory": d["mem_total"], "memory_used": d["mem_used"],
                                          "temp_c": d["temp_c"]})
    return report


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value if isinstance(value, str) else None


def cpu_report() -> dict:
    import psutil

    mem = psutil.virtual_memory()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {"model": _cpu_model(), "physical": psutil.cpu_count(logical=False),
            "logical": psutil.cpu_count(logical=True), "usable": usable,
            "memory": mem.total, "memory_available": mem.available}


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def sessions_report(out: str) -> dict:
    """Where `tuimon RECIPE --out DIR` writes, and whether it can."""
    path = Path(out).expanduser().absolute()
    exists = path.is_dir()
    probe = path
    while not probe.exists() and probe != probe.parent:  # the directory a run would create
        probe = probe.parent
    writable = probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
    why = None
    if path.exists() and not path.is_dir():
        writable, why = False, "exists and is not a directory"
    elif not writable:
        why = f"{probe} is not writable" if probe.is_dir() else f"{probe} is not a directory"
    free = None
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(probe).free
    count = sum(1 for p in path.iterdir() if p.is_dir()) if exists and os.access(path, os.R_OK) else 0
    return {"path": str(path), "exists": exists, "writable": writable, "why_not": why,
            "free": free, "sessions": count}


def cache_report(cache: Path) -> dict:
    """The persistent Inductor cache of --warm-cache: absent, cold (no compiled graph) or warm."""
    path = Path(cache)
    report: dict[str, Any] = {"path": str(path), "exists": path.is_dir(), "size": 0, "files": 0,
                              "fx_graphs": 0, "state": "absent"}
    if not report["exists"]:
        return report
    for root, _, files in os.walk(path):
        for name in files:
            report["files"] += 1
            with contextlib.suppress(OSError):
                report["size"] += os.lstat(os.path.join(root, name)).st_size
            if Path(root).relative_to(path).parts[:1] == ("fxgraph",):
                report["fx_graphs"] += 1
    report["state"] = "warm" if report["fx_graphs"] else "cold"
    return report


# --- showing --------------------------------------------------------------------------------


def _size(n: int | None) -> str:
    return "n/a" if n is None else fmt_bytes(n)


def rows(r: dict) -> list[tuple[str, str]]:
    """(what, value) lines, in the order a reader wants them."""
    pk, t, nv, cpu, s, c = r["packages"], r["torch"], r["nvml"], r["cpu"], r["sessions"], r["cache"]
    out = [("tuimon", f"{r['tuimon']['version']} ({r['tuimon']['path']})"),
           ("python", f"{r['python']['version']} ({r['python']['executable']})"),
           ("platform", r["python"]["platform"])]
    out += [(name, pk[name] or "not installed") for name in PACKAGES
            if name not in ("nvidia-ml-py", "triton")]
    if not t.get("ok"):
        out.append(("torch says", t.get("error") or "n/a"))
    else:
        cuda = "yes" if t["cuda_available"] else f"no: {t['cuda_why_not']}"
        out.append(("CUDA available", cuda))
        built = f"CUDA {t['built_cuda']}" if t["built_cuda"] else "no CUDA"
        if t.get("built_hip"):
            built += f", ROCm {t['built_hip']}"
        out.append(("torch built with", f"{built}, cuDNN {t['cudnn'] or 'n/a'}"))
        for d in t["cuda_devices"]:
            text = d.get("error") or f"{d['name']}, {_size(d['memory'])}, compute {d['capability']}"
            out.append((f"torch cuda:{d['index']}", text))
        cxx = t["cpp_compiler"]
        if cxx["name"]:
            text = f"{cxx['path']} ({cxx['version'] or 'version unknown'})"
            if cxx["error"]:
                text += f"; torch's lookup failed: {cxx['error']}"
        else:
            text = f"none found ({cxx['error']}): compiled variants fail on CPU"
        out.append(("Inductor C++ (CPU)", text))
        tr = t["triton"]
        out.append(("Triton (GPU)", f"{tr['version'] or 'not installed'}"
                    + (", usable" if tr["usable"] else f", not usable: {tr['why_not']}")))
        out.append(("torch threads", str(t["threads"])))
    out.append(("nvidia-ml-py", pk["nvidia-ml-py"] or "not installed"))
    if nv["available"]:
        out.append(("NVML", f"works: driver {nv['driver'] or 'n/a'}, CUDA driver "
                    f"{nv['cuda_driver'] or 'n/a'}, {len(nv['devices'])} GPU(s)"))
        for d in nv["devices"]:
            out.append((f"GPU {d['index']}", f"{d['name'] or 'n/a'}, {_size(d['memory'])}"
                        + (f", {d['uuid']}" if d["uuid"] else "")))
    else:
        out.append(("NVML", f"does not work: {nv['reason']} (GPU metrics will read n/a)"))
    cores = f"{cpu['physical'] or 'n/a'} physical, {cpu['logical'] or 'n/a'} logical"
    if cpu["usable"] is not None and cpu["usable"] != cpu["logical"]:
        cores += f", {cpu['usable']} usable by this process"
    out.append(("CPU", f"{cpu['model'] or 'n/a'}: {cores}"))
    out.append(("memory", f"{_size(cpu['memory'])} ({_size(cpu['memory_available'])} available)"))
    where = "writable" if s["writable"] else f"NOT writable: {s['why_not']}"
    made = f"{s['sessions']} sessions" if s["exists"] else "created by the first run"
    out.append(("sessions (--out)", f"{s['path']}: {where}, {made}, {_size(s['free'])} free"))
    if c["state"] == "absent":
        cache = f"{c['path']}: absent (cold: the first --warm-cache run fills it)"
    else:
        cache = (f"{c['path']}: {c['state']} ({c['fx_graphs']} FX graphs, {c['files']} files, "
                 f"{_size(c['size'])})")
    out.append(("Inductor cache", cache))
    return out + cache_rows(r.get("caches") or {}) + peak_rows(r.get("peak") or {}, nv["devices"])


def show(report: dict) -> None:
    lines = rows(report)
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(title="tuimon doctor", show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        for what, value in lines:
            table.add_row(what, value)
        Console().print(table)
        return
    width = max(len(what) for what, _ in lines)
    for what, value in lines:
        print(f"{what:<{width}}  {value}")

