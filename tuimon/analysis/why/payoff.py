"""Compile that pays off later than the run lasted: faster per step, but the break-even step
(stats/compare.py) lies beyond the steps this run had."""

from __future__ import annotations

from tuimon.analysis.stats.point import point
from tuimon.analysis.why.finding import MEDIUM, Context, Finding


def payoff(ctx: Context) -> list[Finding]:
    r = ctx.row
    if (not r.compare.breakeven_steps or r.compare.breakeven_steps <= r.timing.steps
            or r.compile.compile_s is None or r.compare.untold is not None):
        return []  # a speedup too wide to tell has no break-even to say (stats/noise.py untold)
    evidence = [point("payoff.compile", compile_s=r.compile.compile_s, overhead_s=r.timing.overhead_s,
                      speedup=r.compare.speedup)]
    phases = {k: v for k, v in r.compile.compile_phases.items() if v}
    if phases:
        main = max(phases, key=phases.__getitem__)
        evidence.append(point("payoff.phase", name=main, s=phases[main]))
    warm = r.warm.starts.get("warm") if "cold" in r.warm.starts else None
    if warm and warm.get("compile_s") is not None:  # measured: what a carried cache buys here
        evidence.append(point("payoff.warm", compile_s=warm["compile_s"], never=warm["breakeven_never"],
                              steps=warm["breakeven_steps"], s=warm["breakeven_s"]))
    advice = [point("payoff.longer", steps=r.compare.breakeven_steps, s=r.compare.breakeven_s),
              point("payoff.warm_start")]
    if r.mode.startswith("max-autotune"):  # its compile benchmarks kernels
        advice.append(point("payoff.autotune"))
    return [Finding("payoff", point("payoff.later", steps=r.compare.breakeven_steps, had=r.timing.steps),
                    evidence, advice, MEDIUM)]
