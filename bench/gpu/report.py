"""The GPU programme's results as the bench/RESULTS.md section and the compass:

    python bench/gpu/report.py DIR [DIR ...] [--out FILE] [--json FILE]

Each DIR is a folder the device tool brought back from one call (or any folder above them): the
STAGE.json files in it (bench/gpu/programme.py) are read, the latest of each stage kept. Prints
Markdown: the machine, the seed's table, the checks, the compass (each claim: expected, measured,
holds / does not hold / not measured) and every step with its time. Reads the JSON only; the
archives (STAGE.tar.gz) hold the sessions for a closer look (`tuimon summary`, `tuimon replay`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]

from claims import CLAIMS, HOLDS, NOT, Results, compass  # noqa: E402
from essential import SEED_MODEL  # noqa: E402
from report_essential import section  # noqa: E402
from stages import MODELS, ORDER  # noqa: E402

from tuimon.fmt import fmt_bytes, fmt_ms, fmt_s  # noqa: E402

FORMAT = "tuimon-gpu-programme/1"
MODES = ("eager", "default", "reduce-overhead", "max-autotune")
TABLE_STAGES = ("amp", "fp32", "modes", "modes-fp32")


def load(dirs: list[Path]) -> tuple[dict[str, dict], list[str]]:
    """(stage -> its latest document, notes on what was set aside)."""
    docs: dict[str, dict] = {}
    notes = []
    for d in dirs:
        for path in sorted(d.rglob("*.json")) if d.is_dir() else [d]:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                continue
            old = docs.get(doc["stage"])
            if old is not None:
                keep, drop = (doc, old) if doc["started"] >= old["started"] else (old, doc)
                notes.append(f"stage {doc['stage']} ran more than once: the run of {keep['started']} "
                             f"is reported, not the one of {drop['started']}")
                doc = keep
            docs[doc["stage"]] = doc
    return docs, notes


def machine(docs: dict[str, dict]) -> str:
    facts = next((d["facts"] for d in docs.values() if d.get("facts")), {})
    t, smi = facts.get("torch") or {}, (facts.get("nvidia_smi") or {}).get("gpus") or []
    gpus = ", ".join(f"{g.get('name')} ({g.get('memory.total')} MiB)" for g in smi) or \
        ", ".join(d["name"] for d in t.get("devices") or []) or "no GPU"
    driver = smi[0].get("driver_version") if smi else None
    pk = facts.get("packages") or {}
    triton = (pk.get("triton") or {}).get("version")
    commit = next((d.get("commit") for d in docs.values() if d.get("commit")), None)
    count = len(smi) or t.get("device_count", 0)
    return (f"{count} × {gpus}, driver {driver or 'n/a'}, torch {t.get('version')} "
            f"(CUDA {t.get('cuda')}, cuDNN {t.get('cudnn')}), Triton {triton}, Python "
            f"{facts.get('python')}, {facts.get('cpus')} cores; tuimon at {commit or 'an unknown commit'}")


def table(r: Results) -> list[str]:
    """Every row of the seed's table: model × precision × mode, measured or why not."""
    head = ("| model | variant | median step (p10–p90) | speedup vs eager | compile (by phase) | "
            "pays off after | peak VRAM (allocator / process) | GPU util | max °C | mean W |")
    lines = [head, "|" + "---|" * 10]
    for model in MODELS:
        for precision in ("amp", "fp32"):
            for mode in MODES:
                home = _home(mode, precision)
                places = [(stage, model) for stage in (home, *TABLE_STAGES)]
                if model == SEED_MODEL:  # the essential call's seed session, when amp did not run
                    places.append(("essential", "seed"))
                row = next((x for place in places if (x := r.run(*place, mode, precision)) is not None),
                           None)
                lines.append(_row(model, row) if row else
                             f"| {model} | {mode}/{precision} | not measured: "
                             f"{_cell(r.no_run(home, model, mode, precision))} | | | | | | | |")
    return lines


def _home(mode: str, precision: str) -> str:
    """The stage whose sessions hold this variant by design."""
    base = precision if mode in ("eager", "default") else "modes"
    return "modes-fp32" if base == "modes" and precision == "fp32" else base


def _row(model: str, x: dict) -> str:
    variant = f"{x['mode']}/{x['precision']}"
    if x.get("status") != "done" or not x.get("median_ms"):
        why = x.get("error") or x.get("status")
        return f"| {model} | {variant} | {why} | | | | | | | |"
    median = f"{fmt_ms(x['median_ms'])} ({fmt_ms(x.get('p10_ms'))}–{fmt_ms(x.get('p90_ms'))})"
    speed = "1.00×" if x["mode"] == "eager" else (
        f"{x['speedup']:.2f}× ({x['speedup_lo']:.2f}–{x['speedup_hi']:.2f})"
        if x.get("speedup") and x.get("speedup_lo") and x.get("speedup_hi") else
        f"{x['speedup']:.2f}×" if x.get("speedup") else "–")
    phases = " · ".join(f"{k} {fmt_s(v)}" for k, v in (x.get("compile_phases") or {}).items()
                        if isinstance(v, (int, float)))
    compile_ = "–" if not x.get("compile_s") else \
        f"{fmt_s(x['compile_s'])}{' (' + phases + ')' if phases else ''}"
    pays = ("never" if x.get("breakeven_never") else "–" if not x.get("breakeven_steps") else
            f"{x['breakeven_steps']:,} steps ({fmt_s(x.get('breakeven_s'))})")
    vram = f"{fmt_bytes(x.get('cuda_peak_allocated'))} / {fmt_bytes(x.get('gpu_proc_mem_max'))}"
    util = f"{x['gpu_util_mean']:.0f} %" if x.get("gpu_util_mean") is not None else "n/a"
    temp = f"{x['temp_max']:.0f}" if x.get("temp_max") is not None else "n/a"
    power = f"{x['power_mean']:.0f}" if x.get("power_mean") is not None else "n/a"
    cells = (model, variant, median, speed, compile_, pays, vram, util, temp, power)
    return "| " + " | ".join(cells) + " |"


def commands(docs: dict[str, dict]) -> list[str]:
    out = []
    for stage in ORDER:
        d = docs.get(stage)
        if d is None:
            continue
        out.append(f"- `bash bench/gpu/all.sh {stage}` ({d['what']}): {fmt_s(d.get('wall_s'))} "
                   f"of its {fmt_s(d['budget_s'])} budget")
    return out


def steps(docs: dict[str, dict]) -> list[str]:
    lines = ["| stage | step | limit | wall | status |", "|---|---|---|---|---|"]
    for stage in ORDER:
        for s in (docs.get(stage) or {}).get("steps", []):
            wall = fmt_s(s["wall_s"]) if s.get("wall_s") is not None else "–"
            lines.append(f"| {stage} | {s['name']} | {fmt_s(s.get('limit_s') or s['timeout_s'])} | {wall} | "
                         f"{s['status']} |")
    return lines


def render(docs: dict[str, dict], notes: list[str]) -> tuple[str, list[dict]]:
    r = Results(docs)
    rows = compass(r)
    dry = any(d.get("dry_run") for d in docs.values())
    started = min(d["started"] for d in docs.values())[:10]
    held = sum(x["verdict"] == HOLDS for x in rows)
    unmeasured = sum(x["verdict"] == NOT for x in rows)
    out = [f"## {started} — on a real GPU: the seed's table, NVML, syncs, overhead (issues 27, 43)", ""]
    if dry:
        out += ["**DRY RUN** (`--dry-run`: the CPU, tiny sizes, a fake NVML): nothing below is a GPU "
                "measurement; it shows that the programme and this report run end to end.", ""]
    out += [f"Machine: {machine(docs)}. Stages, each one call of the device tool:", "",
            *commands(docs), "", *[f"Note: {n}" for n in notes],
            *section(docs, rows),
            "### The seed's table", "",
            "`tuimon recipes/MODEL.py --headless --device cuda --modes ... --precision P --schedule "
            "sequential --steps N` (stages amp, fp32, modes). The seed (docs: FIELD.md, one V100): "
            "Swin-B AMP ~30 % faster, ConvNeXt-L AMP ~6 %, Swin-T slower over a few epochs, VRAM "
            "−10 %.", "", *table(r), "",
            f"### What holds ({held} of {len(CLAIMS)} hold, {unmeasured} not measured)", "",
            "| claim | expected | measured | verdict |", "|---|---|---|---|",
            *[f"| {x['claim']} | {x['expected']} | {_cell(x['measured'])} | **{x['verdict']}** |"
              for x in rows],
            "", "### Every step", "", *steps(docs), ""]
    return "\n".join(out), rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the GPU programme's $OUT folders as RESULTS.md text")
    p.add_argument("dirs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, help="write the Markdown here too")
    p.add_argument("--json", type=Path, help="write the compass as JSON here")
    a = p.parse_args(argv)
    missing = [str(d) for d in a.dirs if not d.exists()]
    if missing:
        print(f"report.py: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    docs, notes = load(a.dirs)
    if not docs:
        print(f"report.py: no stage results (STAGE.json of bench/gpu/programme.py) under "
              f"{', '.join(map(str, a.dirs))}", file=sys.stderr)
        return 2
    text, rows = render(docs, notes)
    print(text)
    if a.out:
        a.out.write_text(text + "\n", encoding="utf-8")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
