"""Headless mode: a live rich progress display per variant, then the summary table.

On a terminal each variant gets a progress row; when stdout is not a terminal (CI, a pipe, a
log file) it prints one line per milestone instead, so logs stay readable.
"""

from __future__ import annotations

from collections import deque

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tuimon import events, failures
from tuimon.analysis import SessionSummary, is_measured, known, recent_median
from tuimon.fmt import fmt_bytes, fmt_ms, fmt_s
from tuimon.report import known_text, sections
from tuimon.report.compile_text import VALIDATION, compile_line
from tuimon.report.document import (
    FACT,
    FINDING,
    NOTE,
    TEXT,
    TRIED,
    UNRELIABLE,
    WARNING,
    Section,
    named,
    plain,
)
from tuimon.report.table import top_ops_text
from tuimon.sessiondir.run_state import SessionState
from tuimon.variants import Variant

UNTIL = "\0until-known"  # the row of --until-known's progress (no run id looks like it)


class HeadlessView:
    """A supervisor sink: call it with each batch of events."""

    def __init__(self, labels: dict[str, str], total_steps: int | None,
                 console: Console | None = None) -> None:
        self.console = console or Console()
        self.labels = labels  # run id -> "mode/precision"
        self.live = self.console.is_terminal
        self._recent: dict[str, deque] = {run: deque(maxlen=50) for run in labels}
        self._breaks: dict[str, set] = {}  # graph-break locations already said, per run
        self._said_compiling: set[str] = set()
        self._said_known: tuple = ()  # what the last --until-known line said
        self._lead: dict[str, int] = {}  # a torchrun job: the rank whose progress is shown
        self.state = SessionState()  # what the events say of each run (sessiondir/run_state.py)
        self._progress = Progress(
            TextColumn("[bold]{task.description:<28}"),
            TextColumn("{task.fields[phase]:<10.28}"),
            BarColumn(),
            TextColumn("{task.completed:>6.0f} steps"),
            TextColumn("{task.fields[median]:>10} median"),
            TextColumn("loss {task.fields[loss]:>8}"),
            TextColumn("{task.fields[system]}"),
            TimeElapsedColumn(),
            console=self.console,
            refresh_per_second=4,
        )
        self._total = total_steps
        self._tasks: dict[str, int] = {}
        for run, label in labels.items():
            self._add_task(run, label)

    def _add_task(self, run: str, label: str) -> None:
        self.labels[run] = label
        self._recent.setdefault(run, deque(maxlen=50))
        self._tasks[run] = self._progress.add_task(label, total=self._total, start=False, phase="queued",
                                                   median="–", loss="–", system="")

    def __enter__(self) -> HeadlessView:
        if self.live:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self._progress.stop()

    def __call__(self, batch: list[dict]) -> None:
        last_step: dict[str, dict] = {}
        for e in batch:
            self.state.add(e)
            run = e.get("run")
            kind = e["type"]
            if e.get("rank") is not None and not self._lead_rank(run, e):
                continue
            if kind == events.SAMPLE:
                self._sample(e)
                continue
            if kind == events.KNOWN:  # --until-known: how far the answer is
                self._known(e)
                continue
            if kind == events.RUN_QUEUED and e.get("replicate"):  # --repeats: one row per process
                label = f"{Variant.from_fields(e).label} #{e['replicate']}"
                if run in self._tasks:
                    self.labels[run] = label
                    self._progress.update(self._tasks[run], description=label)
                else:
                    self._add_task(run, label)
            if run not in self._tasks:
                if kind in (events.PROBE_INFO, events.WARNING):
                    self._session_note(e)
                continue
            if kind == events.STEP:
                last_step[run] = e
                if is_measured(e):
                    self._recent[run].append(e["ms"])
            else:
                self._milestone(run, e)
        for run, e in last_step.items():  # one display update per run per batch
            recent = self._recent[run]
            loss = e.get("loss")
            self._progress.update(self._tasks[run], completed=e["i"] + 1,
                                  median=fmt_ms(recent_median(recent)) if recent else "–",
                                  loss=f"{loss:.4g}" if loss is not None else "–")

    def _known(self, e: dict) -> None:
        """--until-known: its row says what is missing and the time left, live; a line is printed
        when what it waits for changes (the estimate, or the process it names, move the row only)."""
        if not e.get("known"):
            return
        k = known.Known.from_dict(e["known"])
        text = known_text.stop_text(k) if k.stopped else known_text.progress_text(k)
        if UNTIL not in self._tasks:
            self._tasks[UNTIL] = self._progress.add_task("until known", total=None, phase="", median="",
                                                         loss="", system="")
        self._progress.update(self._tasks[UNTIL], phase=k.code, system=text.removeprefix("until known: "))
        said = (k.code, k.round, k.stopped)
        if said != self._said_known and e.get("action") != "design":
            self._said_known = said
            self._say(text, style="bold" if k.stopped or e.get("action") == "look" else "dim")

    def _lead_rank(self, run: str, e: dict) -> bool:
        """A torchrun job's row follows its local rank 0 (under DDP every rank steps alike; the
        summary compares them); the job's own finished / failed events end the row."""
        if e["type"] == events.RUN_STARTED and e.get("local_rank") == 0 and run not in self._lead:
            self._lead[run] = e["rank"]
            if run in self._tasks:
                self._progress.start_task(self._tasks[run])
        return self._lead.get(run) == e["rank"] and e["type"] not in (events.FINISHED, events.FAILED)

    def _sample(self, e: dict) -> None:
        devices = {d["index"]: d for d in e.get("devices", [])}
        for run, v in e.get("runs", {}).items():
            if run not in self._tasks or v.get("cpu_percent") is None:
                continue
            text = f"cpu {v['cpu_percent']:.0f}%"
            for i in v.get("gpus", []):
                d = devices.get(i, {})
                if d.get("util_gpu") is not None:
                    text += f" gpu{i} {d['util_gpu']}%"
                if d.get("temp_c") is not None:
                    text += f" {d['temp_c']}°C"
            self._progress.update(self._tasks[run], system=text)

    def _session_note(self, e: dict) -> None:
        if e["type"] == events.WARNING:
            self._say(f"warning: {e.get('text')}", style="yellow")
        elif e.get("gpu_available") is False:
            self._say(f"GPU metrics: n/a ({e.get('reason')})", style="dim")
            if e.get("rapl"):  # a CPU session's energy: why not, once (probes/rapl.py)
                self._say(f"CPU energy: n/a ({e['rapl']})", style="dim")
        elif e.get("gpu_available"):
            names = ", ".join(f"{d['index']}: {d['name']}" for d in e.get("devices", []))
            self._say(f"GPU metrics from NVML: {names}", style="dim")
        elif e.get("unsupported"):
            self._say(f"GPU metrics not reported by this device: {', '.join(e['unsupported'])}",
                      style="dim")

    def _artifacts(self, label: str, e: dict) -> None:
        """A warm start's seed, a cold run's kept artifacts, or why there are none (one line)."""
        action = e.get("action")
        if action == "seeded":
            self._say(f"{label}: starts warm from {e.get('seed_run') or e.get('seed')}'s compile artifacts "
                      f"({'its cache directory' if e.get('kind') == 'dir' else 'the bundle'}, "
                      f"{fmt_bytes(e.get('bytes'))})", style="dim")
        elif action == "kept":
            bundle = f", bundle {fmt_bytes(e['bundle_bytes'])}" if e.get("bundle_bytes") else ""
            self._say(f"{label}: keeps its compile artifacts (cache {fmt_bytes(e.get('dir_bytes'))}"
                      f"{bundle})", style="dim")
        if e.get("text"):
            self._say(f"{label}: {e['text']}", style="yellow")

    def _milestone(self, run: str, e: dict) -> None:
        task = self._tasks[run]
        label = self.labels[run]
        kind = e["type"]
        if kind == events.PHASE:
            if e["phase"] == "building":
                self._progress.start_task(task)
            self._progress.update(task, phase=e["phase"])
            if e["phase"] == "compiling" and "compile_id" not in e and run not in self._said_compiling:
                self._said_compiling.add(run)  # said again on resuming a turn: once is enough
                self._say(f"{label}: compiling (the first step includes torch.compile)")
        elif kind == events.RUN_STARTED:
            if e.get("steps"):
                self._progress.update(task, total=e["steps"])
            # A script's model and batch are not known up front: said when known, else nothing.
            known = ([f"{e['params'] / 1e6:.1f}M params"] if e.get("params") else []) + (
                [f"batch {e['batch_size']}"] if e.get("batch_size") else [])
            if e.get("world_size"):
                known.append(f"rank {e['rank']} of {e['world_size']} "
                             f"({e.get('backend') or 'no process group'})")
            self._say(f"{label}: started on {e.get('device')} ({e.get('device_name')})"
                      + "".join(f", {x}" for x in known))
            for note in e.get("notes") or []:
                self._say(f"{label}: note: {note}", style="yellow")
        elif kind == events.FINISHED:
            stopped = e.get("reason") == "stopped"
            self._progress.update(task, phase="stopped" if stopped else "done")
            if stopped and self.state.runs[run].hung_s is not None:
                self._say(f"{label}: stopped while hung", style="yellow")
                return
            if e.get("seconds") is None:
                self._say(f"{label}: stopped before its first step")
                return
            extra = f", compile {fmt_s(e['compile_s'])}" if e.get("compile_s") else ""
            self._say(f"{label}: finished ({e.get('reason')}) in {fmt_s(e.get('seconds'))}{extra}")
        elif kind == events.WARNING:
            self._say(f"{label}: warning: {e.get('text')}", style="yellow")
        elif kind == events.COMPILE_PHASE:
            back = " backward" if e.get("backward") else ""
            self._progress.update(task, phase=f"{e.get('compile_id')}{back} {e.get('phase')}")
        elif kind == events.COMPILE:
            self._say(f"{label}: {compile_line(e)}", style="dim")
        elif kind == events.ARTIFACTS:
            self._artifacts(label, e)
        elif kind == events.GRAPH_BREAK:
            where = f"{e.get('file')}:{e.get('line')}"
            if where not in self._breaks.setdefault(run, set()):
                self._breaks[run].add(where)
                self._say(f"{label}: graph break at {where}: {e.get('reason')}", style="yellow")
        elif kind == events.RECOMPILE:
            whose = (VALIDATION if e.get("validation") else
                     " (training's first compile, after a validation pass's)" if e.get("after_validation")
                     else "")
            self._say(f"{label}: recompile {e.get('compile_id')}{whose}: "
                      f"{'; '.join(e.get('reasons') or [])}", style="dim" if whose else "yellow")
        elif kind == events.PROFILE:
            self._profile(run, label, e)
        elif kind == events.FAILED:
            self._progress.update(task, phase="failed")
            if e.get("stage") == "build":
                return  # the command ends with one line about it
            what = failures.plain(e.get("what") or f"{e.get('error')}: {e.get('message')}")
            where = f" at {e['where']}" if e.get("where") else ""
            self._say(f"{label}: FAILED ({e.get('stage')}{where}): {what}", style="red")
            if e.get("stage") == "crash":  # no traceback: the end of its output is the clue
                for line in failures.clue(e.get("traceback") or ""):
                    self._say(f"  {line}", style="dim")

    def _profile(self, run: str, label: str, e: dict) -> None:
        state = e.get("state")
        if state == "started":
            self._progress.update(self._tasks[run], phase="profiling")
            return
        self._progress.update(self._tasks[run], phase=self._phase(run, e))
        if state == "failed":
            if e.get("quiet"):  # the automatic capture nobody asked for: the summary's notes say it
                return
            which = f" {e['capture']}" if e.get("capture") else ""
            self._say(f"{label}: profile{which} failed: {e.get('error')}", style="yellow")
            return
        steps = e.get("active_steps") or []
        span = f"steps {steps[0]}–{steps[-1]}, " if steps else ""
        syncs = f"; {e['sync_count']:g} sync/scalar read(s) per step" if e.get("sync_count") else ""
        trace = f"; trace {e['trace']}" if e.get("trace") else ""
        self._say(f"{label}: profile {e.get('capture')} ({span}{fmt_ms(e.get('step_ms'))}/step): "
                  f"{top_ops_text(e)}{syncs}{trace}")

    def _phase(self, run: str, e: dict) -> str:
        """The phase its row shows again after "profiling": the run's (a job's: its rank's)."""
        r = self.state.runs[run]
        return (r.ranks[e["rank"]].phase if e.get("rank") is not None else r.phase) or ""

    def _say(self, text: str, style: str | None = None) -> None:
        # On a terminal the progress rows tell the story; milestones print above them.
        self.console.print(text, style=style, highlight=False, markup=False)  # "[enforce fail at" is text


# What the terminal prints of the summary's document, in its order; the live lines said the rest
# as it happened (warnings, graph breaks, recompiles, captures, failures).
SHOWN = ("verdict", "tried", "table", "loop", "notes", "flops", "caution", "why", "files")


def print_summary(console: Console, summary: SessionSummary) -> None:
    doc = sections.document({}, summary, only=SHOWN)

    def say(text: str, style: str | None = None, whole: bool = False) -> None:
        # ``whole``: one line however long, for grep and logs (the verdict, a fix, a file)
        console.print(text, style=style, highlight=False, markup=False, soft_wrap=whole)

    for x in doc["verdict"].lines:  # the answer first (stats/verdict.py, in report/verdict_text.py's words)
        say(x.text, "bold", whole=True)
    for x in doc["tried"].of(TRIED):  # a session that raced fixes
        say(f"tried: {plain(x.text)}", whole=True)
    said = doc["table"].table
    t = Table(*said.header, title="tuimon summary", title_justify="left")
    for row in said.rows:
        t.add_row(*(Text(cell) for cell in row))  # plain text: "[enforce fail at ...]" is no markup
    console.print(t)
    for x in doc["loop"].lines:  # how a script's loop was read, and where its own numbers disagree
        if x.kind == FACT:
            say(f"loop: {plain(x.text)}", "dim")
        else:
            say(f"loop: {x.label}: {plain(x.text)}", "yellow" if x.kind == WARNING else None)
    for x in doc["notes"].lines:
        if x.kind == NOTE:
            say(f"note: {named(x)}", "yellow")
        elif x.kind == UNRELIABLE:
            say(f"unreliable: {x.label}: {x.text}", "yellow")
    for x in doc["flops"].lines:  # MFU on one peak, or over 100 %
        for note in (u for u in x.under if u.kind == NOTE):
            say(f"note: {x.label}: {note.text}", "yellow")
    for x in doc["caution"].lines:
        say(f"note: {x.text}", "bold yellow")
    for text, style in why_lines(doc["why"]):
        say(text, style)
    for x in doc["files"].lines:
        if x.kind == NOTE:
            say(f"files: {plain(x.text)}", whole=True)
        elif x.kind == WARNING:
            say(plain(x.text), "bold yellow", whole=True)


def why_lines(why: Section, n: int = 3) -> list[tuple[str, str | None]]:
    """Each diagnosed variant's headline (bold) and its first ``n`` findings' titles."""
    out: list[tuple[str, str | None]] = []
    for h in why.lines:
        found = [x for x in h.under if x.kind == FINDING]
        out.append((f"why {h.text}:", "bold"))
        out += [(f"  {k}. {f.text}" + (f" — {f.figures['price']}" if f.figures["price"] else ""), None)
                for k, f in enumerate(found[:n], 1)]
        if len(found) > n:
            out.append((f"  and {len(found) - n} more (summary.md, or key w in the TUI)", None))
        out += [(f"  {x.text}", None) for x in h.under if x.kind == TEXT]  # no finding: why not
    return out
