"""What a failed run died of: a kind and one line a user can act on.

The runner classifies the exceptions it catches (it sees them); the supervisor classifies a
runner that exited without a result (only the parent sees its exit status). Imports neither
torch nor textual, so both sides share it.
"""

from __future__ import annotations

import re
import signal

EXCEPTION, OOM_HOST, OOM_CUDA, SIGNAL, EXIT = "exception", "oom-host", "oom-cuda", "signal", "exit"
SMALLER = "try a smaller --batch-size"

# Why a runner gets each signal, in the words a user would search for.
SIGNALS = {
    "SIGABRT": "aborted (SIGABRT): abort() in native code, e.g. a failed C++ assertion",
    "SIGSEGV": "segmentation fault (SIGSEGV): a crash in native code (torch, an extension, a driver)",
    "SIGKILL": "killed (SIGKILL): by the kernel's OOM killer or another user/process — see dmesg",
    "SIGBUS": "bus error (SIGBUS): bad memory access, e.g. /dev/shm full or a truncated mmap'ed file",
    "SIGFPE": "floating-point exception (SIGFPE): e.g. an integer division by zero in native code",
    "SIGILL": "illegal instruction (SIGILL): native code built for another CPU",
    "SIGTERM": "terminated (SIGTERM): by another process or the system (shutdown, job scheduler)",
}
# faulthandler writes this (and the Python stacks) to the log on SIGSEGV, SIGABRT, SIGBUS, ...
FAULTHANDLER = "Fatal Python error"
# Terminal escapes in an error's text (a coloured log line or exception message: "\x1b[1m...");
# CSI sequences and OSC ones (a hyperlink), ended by BEL or ST.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def plain(text: str) -> str:
    """``text`` without terminal escapes: what a failure's message or log tail is read as."""
    return ANSI.sub("", text) if "\x1b" in text else text


def build_oom(e: dict) -> bool:
    """A ``failed`` event of a run that ran out of memory while building (before any step)."""
    return e.get("stage") == "build" and e.get("kind") in (OOM_HOST, OOM_CUDA)


def of_exception(exc: BaseException, cuda_memory: dict | None = None) -> dict:
    """{"kind", "what", and "tried_bytes" when known} for an exception the runner caught.

    ``cuda_memory``: the allocator's peaks (read by the runner, which has torch), said with a
    CUDA OOM."""
    name = type(exc).__name__
    text = plain(str(exc)).strip()
    first = text.splitlines()[0][:500] if text else ""
    if "CUDA out of memory" in text or "CUDA error: out of memory" in text or (
            name == "OutOfMemoryError" and "MPS" not in text):
        m = re.search(r"Tried to allocate ([\d.]+ ?[KMGT]?i?B)", text)
        what = "out of GPU memory (CUDA OOM)" + (f": tried to allocate {m.group(1)}" if m else "")
        memory = cuda_memory or {}
        if memory.get("cuda_max_allocated") is not None:
            what += (f"; peak {fmt_bytes(memory['cuda_max_allocated'])} allocated, "
                     f"{fmt_bytes(memory.get('cuda_max_reserved'))} reserved")
            if memory.get("cuda_total"):
                what += f" of {fmt_bytes(memory['cuda_total'])}"
        return {"kind": OOM_CUDA, "what": f"{what} — {SMALLER}"}
    tried = re.search(r"you tried to allocate (\d+) bytes", text)
    if isinstance(exc, MemoryError) or (tried and "CPUAllocator" in text):
        source = "RuntimeError from torch's CPU allocator" if tried else name
        what = f"out of host memory ({source})"
        out: dict[str, str | int] = {"kind": OOM_HOST}
        if tried:
            out["tried_bytes"] = tried_bytes = int(tried.group(1))
            what += f": tried to allocate {fmt_bytes(tried_bytes)}"
        return {**out, "what": f"{what} — {SMALLER}, or check ulimit -v / the container's memory limit"}
    return {"kind": EXCEPTION, "what": f"{name}: {first}".rstrip(": ")}


def of_exit(returncode: int, log_tail: str = "") -> dict:
    """{"kind", "what", and "signal" when one killed it} for a runner that exited without a
    failed or finished event (a negative return code: killed by that signal)."""
    if returncode >= 0:
        return {"kind": EXIT, "what": f"runner exited with code {returncode} without a result"
                " (os._exit() or exit() in native code; see the log tail)"}
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    what = SIGNALS.get(name) or f"killed by {name} ({signal.strsignal(-returncode) or 'unknown'})"
    if FAULTHANDLER in log_tail:
        what += "; Python stacks in the log tail"
    return {"kind": SIGNAL, "signal": name, "what": what}


def clue(tail: str, frames: int = 3) -> list[str]:
    """The few lines of a crashed runner's log tail worth printing: faulthandler's first line and
    the innermost frames of the crashing thread (it lists the most recent call first), else the
    last lines."""
    lines = plain(tail).splitlines()
    if not any(x.startswith(FAULTHANDLER) for x in lines):
        return lines[-5:]
    fatal = next(i for i, x in enumerate(lines) if x.startswith(FAULTHANDLER))
    current = next((i for i, x in enumerate(lines) if x.startswith("Current thread")), fatal)
    stack = [x for x in lines[current + 1:] if x.startswith("  File ")][:frames]
    return [lines[fatal], *(x.strip() for x in stack)]


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return "?"
