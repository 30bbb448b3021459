"""What a GPU programme step left, read into the stage's JSON: a session's summary (compacted to
what the report and the compass read), a JUnit report, a JSON file, doctor's answer, screenshots.

Each reader returns (result, paths to keep in the stage's archive) and never raises: a result it
cannot read is ``{"collect_error": ...}``.
"""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

# The run fields the report and the compass read (summary.json's runs[]), and the families of
# issues 25 and 26 whose field names are theirs to choose: kept whatever they are called.
RUN_KEYS = (
    "run", "mode", "precision", "status", "device", "device_name", "batch_size", "params", "steps",
    "measured", "median_ms", "p10_ms", "p90_ms", "median_ci_lo", "median_ci_hi", "throughput",
    "throughput_unit", "speedup", "speedup_lo", "speedup_hi", "within_noise", "unreliable",
    "compile_s", "overhead_s", "compile_phases", "compiles", "graphs_fwd", "graphs_bwd",
    "recompiles", "fx_cache_hits", "fx_cache_misses", "breakeven_steps", "breakeven_s",
    "breakeven_never", "peak_rss", "cuda_peak_allocated", "cuda_peak_reserved", "vram_max",
    "gpu_proc_mem_max", "gpu_util_mean", "temp_max", "power_mean", "throttled_share",
    "throttle_reasons", "samples", "warnings", "cudagraphs", "error", "failure_kind",
    "final_loss", "max_loss_diff", "wall_s", "ranks", "axes", "fixes")
NEW_FIELDS = re.compile(r"phase|warm|cold|artifact|mem_|graph_pool|batch_fit|energy|joules",
                        re.IGNORECASE)  # issue 35's memory per phase and energy too
GRAPH_OPS = re.compile(r"cudaGraphLaunch|CUDAGraph|cudagraph", re.IGNORECASE)
# Groups kept whole under their own key: flops' ``precision``, ``error`` and ``phases`` would
# otherwise overwrite the run's precision (amp vs the FLOPs' bf16), its failure and step phases.
NESTED = ("flops",)


def read(kind: str, step, work: Path, py: str) -> tuple[dict, list[Path]]:
    try:
        return READERS[kind](step, work, py)
    except Exception as exc:  # a reader's failure is a value in the JSON, never the stage's end
        return {"collect_error": f"{type(exc).__name__}: {exc}"}, []


def none(step, work, py) -> tuple[dict, list[Path]]:
    return {}, []


def json_file(step, work, py) -> tuple[dict, list[Path]]:
    path = step.artifact
    if path is None or not path.is_file():
        return {"collect_error": f"{path} was not written"}, []
    return json.loads(path.read_text(encoding="utf-8")), [path]


def doctor(step, work, py) -> tuple[dict, list[Path]]:
    text = step.stdout_to.read_text(encoding="utf-8") if step.stdout_to and step.stdout_to.is_file() else ""
    start = text.find("{")
    if start < 0:
        return {"collect_error": "doctor printed no JSON"}, []
    return json.loads(text[start:]), [step.stdout_to]


def junit(step, work, py) -> tuple[dict, list[Path]]:
    path = step.artifact
    if path is None or not path.is_file():
        return {"collect_error": f"no JUnit report at {path}"}, []
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                text = (node.get("message") or node.text or "").strip()
                message = text.splitlines()[0][:300] if text else ""
                break
        tests.append({"name": f"{case.get('classname', '')}::{case.get('name', '')}",
                      "outcome": outcome, "time_s": float(case.get("time") or 0), "message": message})
    counts = {k: sum(t["outcome"] == k for t in tests) for k in ("passed", "failed", "error", "skipped")}
    return {"counts": counts, "tests": tests}, [path]


def session(step, work, py) -> tuple[dict, list[Path]]:
    folder = _session_dir(step)
    if folder is None:
        return {"collect_error": "no session was written"}, []
    summary = folder / "summary.json"
    if not summary.is_file() and (folder / "events.jsonl").is_file():
        # a session cut short before its summary: tuimon summary recomputes it from the events
        subprocess.run([py, "-m", "tuimon", "summary", str(folder), "--format", "json", "--force"],
                       capture_output=True, timeout=60, check=False)
    if not summary.is_file():
        return {"collect_error": f"{folder.name}: no summary.json", "dir": folder.name}, [folder]
    from tuimon.report import schema  # summary.json in today's shape, whichever tuimon wrote it

    return compact(schema.read(summary), folder.name), [folder]


def screens(step, work, py) -> tuple[dict, list[Path]]:
    shots = sorted(step.artifact.glob("*.svg")) if step.artifact and step.artifact.is_dir() else []
    result, keep = session(step, work, py)
    result["screenshots"] = [{"file": s.name, "bytes": s.stat().st_size,
                              "gpu_rows": "GPU" in s.read_text(encoding="utf-8", errors="replace")}
                             for s in shots]
    return result, keep + shots


def _session_dir(step) -> Path | None:
    out = out_dir(step.argv)
    if out is None or not out.is_dir():
        return None
    found = sorted(p for p in out.iterdir() if p.is_dir())
    return found[-1] if found else None


def out_dir(argv: list[str]) -> Path | None:
    for flag in ("--out", "--sessions"):
        if flag in argv:
            return Path(argv[argv.index(flag) + 1])
    return None


def flat(row: dict) -> dict:
    """A summary.json row (nested by record, schema version 2) as the stage's JSON keeps it: its
    own fields and its records' side by side, and its words' ``unreliable``."""
    from tuimon.analysis.stats.records import GROUPS

    out = {k: v for k, v in row.items() if k not in GROUPS and k != "words"}
    for group in GROUPS:
        if group not in NESTED:
            out.update(row.get(group) or {})
    nested = {g: row[g] for g in NESTED if isinstance(row.get(g), dict)}
    return out | nested | {"unreliable": (row.get("words") or {}).get("unreliable")}


def compact(summary: dict, name: str) -> dict:
    """The part of a summary.json the report reads; the whole file travels in the archive."""
    meta = summary.get("meta") or {}
    runs = []
    for nested in summary.get("runs") or []:
        r = flat(nested)
        row = {k: r.get(k) for k in RUN_KEYS if k in r}
        row.update({k: v for k, v in r.items() if NEW_FIELDS.search(k) and k not in row})
        row["graph_breaks"] = len(r.get("graph_breaks") or [])
        row["graph_evidence"] = sorted({op.get("name", "") for p in r.get("profiles") or []
                                        for op in p.get("top_ops") or []
                                        if GRAPH_OPS.search(op.get("name", ""))})
        row["graph_launches"] = graph_launches(r.get("profiles") or [])
        if "flops" in r:
            row["flops"] = r["flops"]
        runs.append(row)
    new_top = {k: v for k, v in summary.items() if NEW_FIELDS.search(k)}
    return {
        "dir": name, "recipe": meta.get("recipe"), "argv": meta.get("argv"),
        "schedule": (meta.get("settings") or {}).get("schedule"), "torch": meta.get("torch"),
        "triton": meta.get("triton"), "devices": meta.get("devices"), "gpu": meta.get("gpu"),
        "status": meta.get("status"), "verdict": (summary.get("verdict") or {}).get("line"),
        "gpu_available": summary.get("gpu_available"), "gpu_reason": summary.get("gpu_reason"),
        "unsupported": summary.get("unsupported"), "warnings": summary.get("warnings"),
        "wall_s": summary.get("wall_s"), "runs": runs, **new_top,
        "why": [{"run": w.get("run"), "titles": [f.get("title") for f in w.get("findings") or []]}
                for w in summary.get("why") or []],
        # tuimon try (issue 34): what each raced fix did, in the summary's words
        "tried": [{"fix": t.get("fix"), "code": t.get("code"), "line": t.get("line")}
                  for t in summary.get("tried") or []],
        "files": files(summary.get("files")),
    }


def graph_launches(profiles: list[dict]) -> float | None:
    """CUDA graph launches a step in the run's captures (the most any capture saw; None: no
    capture). torch.profiler's CPU ops name each replay cudaGraphLaunch."""
    if not profiles:
        return None
    return max(sum(op.get("calls") or 0 for op in p.get("top_ops") or []
                   if "cudaGraphLaunch" in op.get("name", "")) for p in profiles)


def files(got: dict | None) -> dict | None:
    """A script session's files kept apart (analysis/files.py), without the long lists: what each
    run wrote in its own view, what escaped it, what changed in the user's directories."""
    if not got:
        return None
    return {"outputs": [{"label": o.get("label"), "count": o.get("count"), "bytes": o.get("bytes"),
                         "files": [f.get("path") for f in (o.get("files") or [])[:5]]}
                        for o in got.get("outputs") or []],
            "outside": len(got.get("outside") or []), "watched": got.get("watched"),
            "changed": got.get("changed"), "changes": [c.get("path") for c in (got.get("changes") or [])[:5]]}


READERS = {"none": none, "json": json_file, "doctor": doctor, "junit": junit, "session": session,
           "screens": screens}
