"""Compile that pays off later than the run lasted: faster per step, but the break-even step
(stats/compare.py) lies beyond the steps this run had."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import MEDIUM, Context, Finding


def payoff(ctx: Context) -> list[Finding]:
    r = ctx.row
    if not r.breakeven_steps or r.breakeven_steps <= r.steps or r.compile_s is None:
        return []
    evidence = [point("payoff.compile", compile_s=r.compile_s, overhead_s=r.overhead_s, speedup=r.speedup)]
    phases = {k: v for k, v in r.compile_phases.items() if v}
    if phases:
        main = max(phases, key=phases.get)
        evidence.append(point("payoff.phase", name=main, s=phases[main]))
    warm = r.starts.get("warm") if "cold" in r.starts else None
    if warm and warm.get("compile_s") is not None:  # measured: what a carried cache buys here
        evidence.append(point("payoff.warm", compile_s=warm["compile_s"], never=warm["breakeven_never"],
                              steps=warm["breakeven_steps"], s=warm["breakeven_s"]))
    advice = [point("payoff.longer", steps=r.breakeven_steps, s=r.breakeven_s), point("payoff.warm_start")]
    if r.mode.startswith("max-autotune"):  # its compile benchmarks kernels
        advice.append(point("payoff.autotune"))
    return [Finding("payoff", point("payoff.later", steps=r.breakeven_steps, had=r.steps),
                    evidence, advice, MEDIUM)]
