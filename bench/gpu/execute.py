"""The GPU programme's executor: a step's process under its own time limit, and $OUT packed
within what the device tool brings back (at most 8 files, 16 MiB each, 2 folders down).

A step runs in its own process group. At its limit it gets SIGINT, as Ctrl-C would: tuimon stops
its runs at a step boundary and writes the summary of what they measured, pytest writes its
report; then SIGTERM and SIGKILL if it lingers. So one hang costs its step's limit, never the
stage.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path

GRACE_S = (30.0, 10.0, 5.0)  # after SIGINT, SIGTERM, SIGKILL: how long each is given
MAX_FILES = 8  # the device tool brings back at most 8 files from $OUT
MAX_FILE = 15 * 2**20  # each under its 16 MiB limit
MAX_MEMBER = 6 * 2**20  # a file larger than this stays out of the archive (listed as left out)
LOG_TAIL = 200_000  # bytes of each step's log in STAGE.log
# large, rebuilt, or not ours to keep (files: a script run's view of the working directory and
# what it wrote there, a checkpoint say; its summary lists them)
SKIP_DIRS = {"inductor-cache", "torch-trace", "__pycache__", "files"}


def run(argv: list[str], *, timeout_s: float, log: Path, env: dict[str, str], cwd: Path,
        stdout_to: Path | None = None) -> dict:
    """{rc, timed_out, wall_s, signals} of one command; rc None when it could not be started or
    outlived SIGKILL."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "wb") as err, contextlib.ExitStack() as stack:
        out = stack.enter_context(open(stdout_to, "wb")) if stdout_to else err
        err.write(f"$ {' '.join(argv)}\n".encode())
        err.flush()
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                    cwd=cwd, start_new_session=True)
        except OSError as exc:
            return {"rc": None, "timed_out": False, "wall_s": 0.0, "error": f"cannot start: {exc}"}
        sent: list[str] = []
        try:
            rc = proc.wait(timeout=max(timeout_s, 0.1))
        except subprocess.TimeoutExpired:
            rc = stop(proc, sent)
    return {"rc": rc, "timed_out": bool(sent), "wall_s": round(time.monotonic() - start, 1),
            "signals": sent}


def stop(proc: subprocess.Popen, sent: list[str]) -> int | None:
    for sig, wait in zip((signal.SIGINT, signal.SIGTERM, signal.SIGKILL), GRACE_S, strict=True):
        sent.append(sig.name)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            return proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return None


def tail(path: Path, limit: int = LOG_TAIL) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return text if size <= limit else f"[... {size - limit} bytes left out ...]\n{text}"


def members(paths: list[Path], base: Path) -> list[tuple[Path, str]]:
    """(file, name in the archive) for every file under ``paths``, the most useful first:
    summaries and results, then steps and events, then logs."""
    found: list[tuple[Path, str]] = []
    for p in paths:
        if p.is_file():
            found.append((p, _arcname(p, base)))
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                # a script run's view of the user's files is symlinks to them: not ours to pack
                if f.is_file() and not f.is_symlink() and not SKIP_DIRS & set(f.relative_to(p).parts):
                    found.append((f, _arcname(f, base)))

    def rank(item: tuple[Path, str]) -> int:
        name = item[0].name
        if name.endswith((".json", ".md", ".xml", ".svg")):
            return 0
        if name in ("steps.csv", "events.jsonl"):
            return 1
        return 2

    return sorted(dict.fromkeys(found), key=rank)


def _arcname(f: Path, base: Path) -> str:
    try:
        return str(f.relative_to(base))
    except ValueError:
        return f.name


def pack(tar_path: Path, paths: list[Path], base: Path, limit: int = MAX_FILE) -> dict:
    """A .tar.gz of ``paths`` under ``limit`` bytes: files are added most useful first, each only
    if the archive stays under the limit even if it did not compress at all; one that would not
    (or is over MAX_MEMBER) is left out and listed."""
    kept, left = [], []
    with open(tar_path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as gz, \
                tarfile.open(fileobj=gz, mode="w") as tar:
        for f, name in members(paths, base):
            try:
                size = f.stat().st_size
            except OSError:
                continue
            if size > MAX_MEMBER or raw.tell() + size + 2**20 > limit:
                left.append(f"{name} ({size} bytes)")
                continue
            with contextlib.suppress(OSError):
                tar.add(f, arcname=name, recursive=False)
                kept.append(name)
    return {"file": tar_path.name, "bytes": tar_path.stat().st_size, "members": len(kept),
            "left_out": left}


def write_text(path: Path, text: str) -> None:
    """Written whole and renamed, so a call killed mid-write leaves the previous version."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def out_ok(out: Path) -> list[str]:
    """What the device tool would not bring back from ``out`` (empty when all of it comes)."""
    problems = []
    files = [p for p in out.rglob("*") if p.is_file()]
    if len(files) > MAX_FILES:
        problems.append(f"{len(files)} files (at most {MAX_FILES} come back)")
    for f in files:
        rel = f.relative_to(out)
        if f.stat().st_size > 16 * 2**20:
            problems.append(f"{rel}: {f.stat().st_size} bytes (16 MiB at most)")
        if len(rel.parts) > 3:
            problems.append(f"{rel}: more than 2 folders down")
        if not all(ch.isalnum() or ch in "._-" for part in rel.parts for ch in part):
            problems.append(f"{rel}: a name with characters other than letters, digits, . _ -")
    return problems
