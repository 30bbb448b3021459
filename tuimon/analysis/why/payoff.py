"""Compile that pays off later than the run lasted: faster per step, but the break-even step
(stats/compare.py) lies beyond the steps this run had."""

from __future__ import annotations

from tuimon.analysis.why.finding import MEDIUM, Context, Finding
from tuimon.fmt import fmt_s


def payoff(ctx: Context) -> list[Finding]:
    r = ctx.row
    if not r.breakeven_steps or r.breakeven_steps <= r.steps or r.compile_s is None:
        return []
    evidence = [f"compile {fmt_s(r.compile_s)}, warm-up overhead {fmt_s(r.overhead_s)} in all; "
                f"{r.speedup:.2f}× per step"]
    phases = {k: v for k, v in r.compile_phases.items() if v}
    if phases:
        main = max(phases, key=phases.get)
        evidence.append(f"most of the compile: {main} {fmt_s(phases[main])}")
    warm = r.starts.get("warm") if "cold" in r.starts else None
    if warm and warm.get("compile_s") is not None:  # measured: what a carried cache buys here
        evidence.append(f"warm from its compile artifacts: compile {fmt_s(warm['compile_s'])}, "
                        + ("never pays off" if warm["breakeven_never"] else
                           f"pays off after {warm['breakeven_steps']:,} steps "
                           f"(≈ {fmt_s(warm['breakeven_s'])})" if warm["breakeven_steps"] is not None
                           else "break-even unknown"))
    advice = [f"for a run longer than {r.breakeven_steps:,} steps (≈ {fmt_s(r.breakeven_s)}) compile "
              "pays off",
              "a warm start cuts the compile: keep TORCHINDUCTOR_CACHE_DIR between runs, or carry this "
              "session's artifacts/ to the next (tuimon --cache-from SESSION measures it; "
              "docs/compile.md#warm-start)"]
    if r.mode.startswith("max-autotune"):
        advice.append("max-autotune spends its compile benchmarking kernels: mode default compiles faster")
    return [Finding("payoff", f"pays off after {r.breakeven_steps:,} steps; this run had {r.steps}",
                    evidence, advice, MEDIUM)]
