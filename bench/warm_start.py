"""Warm start (issue 26): what a compile costs cold and warm, per recipe, on this machine.

For each recipe: one session ``--modes eager,default --repeats 3`` (round 1 cold, rounds 2 and 3
warm from round 1's kept cache directory), then one ``--cache-from`` that session with
``--warm-from bundle --repeats 1`` (warm from torch's mega-cache bundle alone). Prints a Markdown
table from the sessions' summary.json: compile per start, cache hits, kernels compiled, artifact
sizes, break-even per start, and the load average before and after (the machine is shared).

    .venv/bin/python bench/warm_start.py OUT_DIR [RECIPE:STEPS ...]

default recipes: recipes/tiny_mlp.py:60 recipes/autoencoder.py:30 bench/timm_resnet18_recipe.py:12
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tuimon.report import schema

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["recipes/tiny_mlp.py:60", "recipes/autoencoder.py:30", "bench/timm_resnet18_recipe.py:12"]


def session(out: Path, *args: str) -> Path:
    before = set(out.glob("*")) if out.exists() else set()
    cmd = [sys.executable, "-m", "tuimon", *args, "--headless", "--out", str(out), "--no-auto-capture"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    (new,) = set(out.glob("*")) - before
    return new


def fmt_s(x) -> str:
    return "–" if x is None else f"{x:.1f} s" if x >= 1 else f"{x * 1000:.0f} ms"


def fmt_b(x) -> str:
    return "–" if x is None else f"{x / 2**20:.1f} MiB" if x >= 2**20 else f"{x / 2**10:.0f} KiB"


def hits(cache: dict, which: str) -> str:
    c = cache.get(which) or {}
    return f"{c.get('hit', 0)}/{sum(c.values())}"


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    specs = sys.argv[2:] or DEFAULT
    print(f"load before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    rows = []
    for spec in specs:
        recipe, steps = spec.rsplit(":", 1)
        a = session(out, recipe, "--modes", "eager,default", "--repeats", "3", "--steps", steps)
        b = session(out, recipe, "--modes", "default", "--repeats", "1", "--steps", steps,
                    "--cache-from", str(a), "--warm-from", "bundle")
        sa, sb = (schema.read(s / "summary.json") for s in (a, b))
        row = next(v for v in sa["variants"] if v["mode"] == "default")
        cold, warm = row["warm"]["starts"].get("cold", {}), row["warm"]["starts"].get("warm", {})
        (bundle,) = [r for r in sb["runs"] if r["mode"] == "default"]
        rows.append((Path(recipe).stem, row, cold, warm, bundle, a.name, sa["verdict"]["line"]))
        print(f"{recipe}: {a.name} {b.name} load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print("| | " + " | ".join(r[0] for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    lines = [
        ("compile, cold (round 1)", lambda r: fmt_s(r[2].get("compile_s"))),
        ("compile, warm from the cache directory (rounds 2–3, median)",
         lambda r: fmt_s(r[3].get("compile_s"))),
        ("compile, warm from the bundle (--warm-from bundle)", lambda r: fmt_s(r[4]["compile"]["compile_s"])),
        ("warm-up overhead cold · warm (dir)", lambda r: f"{fmt_s(r[2].get('overhead_s'))} · "
         f"{fmt_s(r[3].get('overhead_s'))}"),
        ("FX graph hits cold · dir · bundle", lambda r: f"{hits(r[2].get('cache', {}), 'fx')} · "
         f"{hits(r[3].get('cache', {}), 'fx')} · {hits(r[4]['warm']['cache'], 'fx')}"),
        ("kernels compiled cold · dir · bundle", lambda r: f"{r[2].get('cache', {}).get('kernels')} · "
         f"{r[3].get('cache', {}).get('kernels', 0) // max(1, r[3].get('processes', 1))} · "
         f"{r[4]['warm']['cache'].get('kernels')}"),
        ("artifacts: cache directory · bundle",
         lambda r: f"{fmt_b(r[1]['warm']['artifacts'].get('dir_bytes'))} · "
                   f"{fmt_b(r[1]['warm']['artifacts'].get('bundle_bytes'))}"),
        ("median step default · speedup", lambda r: f"{r[1]['timing']['median_ms']:.1f} ms · "
         f"{r[1]['compare']['speedup'] or 0:.2f}×"),
        ("pays off after, cold · warm", lambda r: f"{fmt_s(r[2].get('breakeven_s'))} · "
         f"{fmt_s(r[3].get('breakeven_s'))}" if not r[2].get("breakeven_never") else "never (not faster)"),
    ]
    for name, fn in lines:
        print(f"| {name} | " + " | ".join(fn(r) for r in rows) + " |")
    print()
    for r in rows:
        print(f"- {r[0]} ({r[5]}): {r[6]}")
    print(f"load after: {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
