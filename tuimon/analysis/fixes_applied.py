"""What became of each run's ``tuimon try`` fixes (issue 34), from its events: the fixes it was
asked for (``run_started``'s ``fixes``) and the runner's notes on each (a ``warning`` with
``note``, ``fix`` and ``applied``: runner/fixes.py). Pure; the reasons are the runner's own
words, as every run note's are; report/ chooses how to show them."""

from __future__ import annotations

from dataclasses import dataclass

from tuimon import events as ev


@dataclass(frozen=True)
class FixOutcome:
    applied: bool  # any note said it applied (a DataLoader of two, say)
    texts: tuple[str, ...] = ()  # the runner's notes on it, in order, without "fix NAME: "
    asked: bool = True  # in the run's fixes (False: a note on a fix the run did not list)

    @property
    def reason(self) -> str | None:
        """Why it did not apply: its last note; None when it applied, or nothing was said."""
        return None if self.applied or not self.texts else self.texts[-1]


def fixes_applied(events) -> dict[str, dict[str, FixOutcome]]:
    """Per run that was asked for fixes or said anything of one: per fix, its outcome. A fix
    asked and never said (a run that failed while building) is not applied, with no text."""
    asked: dict[str, list[str]] = {}
    said: dict[str, dict[str, list]] = {}
    for e in events:
        run = e.get("run")
        if run is None:
            continue
        if e.get("type") == ev.RUN_STARTED and e.get("fixes"):
            asked[run] = [str(name) for name in e["fixes"]]
        elif e.get("type") == ev.WARNING and e.get("fix"):
            name = str(e["fix"])
            entry = said.setdefault(run, {}).setdefault(name, [False, []])
            entry[0] = entry[0] or bool(e.get("applied"))
            text = str(e.get("text") or "").removeprefix(f"fix {name}: ")
            if text not in entry[1]:
                entry[1].append(text)
    out: dict[str, dict[str, FixOutcome]] = {}
    for run in [*asked, *(r for r in said if r not in asked)]:
        names, notes = asked.get(run, []), said.get(run, {})
        out[run] = {}
        for name in [*names, *(n for n in notes if n not in names)]:
            applied, texts = notes.get(name, (False, []))
            out[run][name] = FixOutcome(applied, tuple(texts), asked=name in names)
    return out
