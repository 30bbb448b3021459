"""``tuimon doctor``'s compile caches: where torch.compile's caches live for a process started here
(Inductor's FX graphs, AOTAutograd entries and compiled kernels, Triton's kernels), how large
they are, whether they can be written, whether a remote cache is configured, and whether this
torch bundles its caches (the mega-cache that ``--warm-from bundle`` and other machines use).
The paths come from torch, asked in the doctor's child (runner/torch_facts.py); sizes are
walked here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tuimon.failures import fmt_bytes


def directory(path: str | None) -> dict[str, Any]:
    """{path, exists, size, files, writable} of one cache directory."""
    out: dict[str, Any] = {"path": path, "exists": False, "size": 0, "files": 0, "writable": None}
    if not path:
        return out
    p = Path(path)
    out["exists"] = p.is_dir()
    if out["exists"]:
        for root, _, names in os.walk(p):
            for name in names:
                out["files"] += 1
                try:
                    out["size"] += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    continue
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent  # the first existing parent decides whether it can be made
    out["writable"] = os.access(probe, os.W_OK | os.X_OK)
    return out


def caches_report(torch: dict) -> dict:
    """The caches torch names, measured; {} when torch could not be asked."""
    found = (torch or {}).get("caches")
    if not found:
        return {}
    return {"inductor": {**directory(found.get("inductor")), "from": found.get("inductor_from")},
            "triton": directory(found.get("triton")),
            "remote": found.get("remote") or {}, "remote_env": found.get("remote_env") or {},
            "mega_cache": bool(found.get("mega_cache")), "torch": torch.get("version")}


def _dir_text(d: dict) -> str:
    if not d.get("path"):
        return "n/a"
    state = (f"{fmt_bytes(d['size'])}, {d['files']:,} files" if d["exists"] else "absent")
    can = "writable" if d["writable"] else "NOT writable"
    return f"{d['path']}: {state}, {can}"


def cache_rows(c: dict) -> list[tuple[str, str]]:
    if not c:
        return [("compile caches", "n/a (torch could not be asked)")]
    out = [("torch's Inductor cache", _dir_text(c["inductor"]) + f" ({c['inductor'].get('from')}; "
            "tuimon's runs get a fresh one each)"),
           ("Triton cache", _dir_text(c["triton"]))]
    on = [name for name, value in c["remote"].items() if value]
    env = ", ".join(f"{k}={v}" for k, v in c["remote_env"].items())
    if on:
        out.append(("remote caches", f"on: {', '.join(on)}" + (f" ({env})" if env else "")
                    + "; tuimon cannot see their hit rate beyond torch's counts"))
    else:
        out.append(("remote caches", "none configured" + (f" ({env} set, no cache enabled)" if env else "")))
    out.append(("warm start", "torch.compiler.save_cache_artifacts: yes (mega-cache bundles: "
                "--warm-from bundle)" if c["mega_cache"] else
                f"torch {c.get('torch') or '?'} has no torch.compiler.save_cache_artifacts: warm "
                "starts from the kept cache directory only"))
    return out
