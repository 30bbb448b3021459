"""What did not compile: a variant that compiled nothing for training (that is the whole story:
its speed is eager's), and the frames that ran eager beside compiled ones because Dynamo could
not compile them (stats/compiles.py). Each with torch's own reason and hints."""

from __future__ import annotations

from tuimon.analysis.stats.compiles import fallback_text, fell_back
from tuimon.analysis.why.finding import HIGH, MEDIUM, Context, Finding

COMPILE_PART = ("compile a part Dynamo can trace: --compile-module NAME compiles the first module of "
                "class NAME called (a block around the unsupported call, or beside it)")


def _hints(failures: list[dict]) -> list[str]:
    hints = dict.fromkeys(h for f in failures for h in f.get("hints") or [])
    return [f"torch's hint: {h}" for h in hints][:2]


def uncompiled(ctx: Context) -> list[Finding]:
    """A compiled variant that compiled nothing ran as eager does: that is the whole story."""
    r = ctx.row
    if not r.nothing_compiled:
        return []
    failures = fell_back(r) or fell_back(r, validation=True)
    if failures:  # Dynamo tried and could not: torch's reason, its hints
        evidence = [f"0 graphs in training: every compile Dynamo tried failed, so {r.label} ran the "
                    "script's own eager code"]
        evidence += [f"{fallback_text(f)} (×{f['count']}"
                     f"{', in a validation pass' if f.get('validation') else ''})" for f in failures[:3]]
        advice = [*_hints(failures), COMPILE_PART,
                  "TORCH_LOGS=graph_breaks prints where Dynamo stopped, with the user's line"]
        return [Finding("uncompiled", f"nothing was compiled — {r.nothing_compiled}", evidence, advice, HIGH)]
    evidence = [f"0 compiles in training: {r.label} ran the script's own eager code"]
    if r.val_compiles:
        evidence.append(f"{r.val_compiles} compile(s) in its validation passes, none in training")
    advice = ["--compile-module NAME compiles the first module of class NAME called (the model's "
              "class, or a block's), optimizer or not",
              "or call torch.compile(model) in the script: each variant then gets its mode"]
    return [Finding("uncompiled", f"nothing was compiled — {r.nothing_compiled}", evidence, advice, HIGH)]


def fallbacks(ctx: Context) -> list[Finding]:
    """Frames of training that Dynamo could not compile ran eager beside the compiled graphs: the
    speedup is of the compiled part only."""
    r = ctx.row
    failures = fell_back(r)
    if not failures or not r.graphs_fwd:
        return []
    n = len(failures)
    title = (f"{n} frame{'s' if n != 1 else ''} ran eager beside {r.graphs_fwd} compiled graph"
             f"{'s' if r.graphs_fwd != 1 else ''}: Dynamo could not compile "
             + ", ".join(f"{f['frame'] or 'a frame'}()" for f in failures[:3]))
    evidence = [f"{fallback_text(f)} (×{f['count']})" for f in failures[:3]]
    advice = [*_hints(failures), "what runs eager gains nothing from compile: move it out of the "
              "hot path, or make it traceable", COMPILE_PART]
    return [Finding("fallback", title, evidence, advice, MEDIUM)]
