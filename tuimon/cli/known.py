"""Whether a session runs until its answer is known (--until-known, --budget, --margin, --to-end),
its flags checked, and the design session_started records (analysis/stats/sequential.py; the
supervisor acts on it: control/until_known.py).

It is the default for a script given no length nor --repeats (``tuimon run -- python train.py``;
``--repeats K`` alone still runs it to its end K times): before it,
such a script ran to its own end once a variant, and a two-hour script held the machine four
hours for its answer. A recipe keeps its own steps unless asked (--until-known, or --budget
alone); a sweep's --budget alone still sizes its runs (cli/budget.py)."""

from __future__ import annotations

import argparse

from tuimon.cli.args import UsageError
from tuimon.cli.jobs import several_nodes
from tuimon.fmt import fmt_span
from tuimon.settings import MARGIN_PCT, UNTIL_KNOWN_BUDGET_S


def until_known(args: argparse.Namespace, command: list[str] | None, sweep: bool = False) -> dict | None:
    """session_started's ``until_known`` (the design and ``budget_s``), or None for a session of a
    fixed length; sets ``args.repeats`` (one process a variant a round). UsageError for flags that
    contradict it."""
    budget = getattr(args, "budget", None)
    length = args.steps is not None or args.duration is not None
    if args.to_end and (command is None or length or args.until_known or budget is not None):
        raise UsageError("--to-end runs a script to its own end once a variant: give it to "
                         "'tuimon run -- CMD' without --steps, --duration, --until-known or --budget")
    asked = args.until_known or (budget is not None and not sweep)
    # --warm's one more process a compiled variant is for a script run once to its end
    fixed = length or args.to_end or args.repeats is not None or (sweep and budget is not None) \
        or getattr(args, "warm", False)
    if command is not None and not fixed:
        asked = True  # a script given no length (nor its processes' number): the default
    if not asked:
        if args.margin is not None:
            raise UsageError("--margin is --until-known's: the speedup that counts as the same")
        return None
    if length:
        raise UsageError("--until-known sets each process's length itself (its compiles settled, "
                         "enough steady steps) and --budget caps the session: leave --steps / "
                         "--duration out, or --until-known")
    if args.repeats is not None:
        raise UsageError("--until-known runs rounds of processes until the answer is known: "
                         "--repeats would fix their number; leave one out")
    from tuimon.analysis import known

    args.repeats = 1  # a round at a time
    margin = (MARGIN_PCT if args.margin is None else args.margin) / 100.0
    return {**known.Design(margin=margin).to_dict(), "budget_s": budget or UNTIL_KNOWN_BUDGET_S}


def note(spec: dict) -> str:
    """The first line of an --until-known session on stderr: what it will do."""
    return (f"until the answer is known: rounds of one process a variant, each ended once its "
            f"compiles have settled and it has enough steady steps; from round {spec['min_rounds']} "
            f"it stops as soon as the speedup is known (faster, slower, or the same within "
            f"±{spec['margin'] * 100:g} %: --margin), at most {fmt_span(spec['budget_s'])} of "
            "stepping (--budget)")


def across_nodes(args: argparse.Namespace, script, spec: dict | None) -> dict | None:
    """A job over several nodes runs one tuimon a node, and each would end its rounds at its own
    step (a rank left waiting in a collective): asked for, refused; by default, the script runs to
    its own end there, as before."""
    if spec is None or script is None or not several_nodes(script, getattr(args, "slurm", None)):
        return spec
    if args.until_known or getattr(args, "budget", None) is not None or args.margin is not None:
        raise UsageError("--until-known with a job over several nodes: each node would stop at its "
                         "own step; use --steps (every rank stops at the same step)")
    return None
