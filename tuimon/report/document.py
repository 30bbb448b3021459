"""The summary's words as one document: sections of typed lines, built once (report/sections.py)
and rendered by every surface (docs/development.md, "The summary's words: one document"). A
surface picks, orders and styles lines by their ``kind`` and ``figures``, never by their text.
Inline Markdown marks (`code`, **bold**) stay in markdown, render on the page, and are dropped
on the terminal (``plain``)."""

from __future__ import annotations

from dataclasses import dataclass, field

# What a line is.
VERDICT = "verdict"  # the answer
TRIED = "tried"  # what a fix raced by tuimon try did (figures: its outcome)
KEEP = "keep"  # how to keep a fix, its code lines under it
FACT = "fact"  # what the session ran: command, host, device, cache
CAUTION = "caution"  # a word on every number before the table: the machine was busy
NOTE = "note"  # a note on the answer or a row, every surface says it
DETAIL = "detail"  # a note summary.md keeps for the record: the terminal said it as it happened
UNRELIABLE = "unreliable"  # why a row's numbers should not be trusted (figures: its doubts)
WARNING = "warning"  # what the user should look at: a file not kept apart, a straggler
FAILURE = "failure"  # a run that failed, its traceback's tail under it (CODE)
HEADING = "heading"  # a diagnosed variant (figures: its run, speedup, helped, doubted)
FINDING = "finding"  # one Why finding (figures: rule, code, severity, price, fixes), evidence
EVIDENCE = "evidence"  # and advice under it
ADVICE = "advice"
FIGURES = "figures"  # a row's figures laid out (FLOPs and MFU), its details under it
TEXT = "text"  # a paragraph
CODE = "code"  # a line of code or of a log, as it is


@dataclass(frozen=True)
class Line:
    kind: str
    text: str
    figures: dict = field(default_factory=dict)
    under: tuple[Line, ...] = ()

    @property
    def label(self) -> str | None:
        """The row it is about (None: the session)."""
        return self.figures.get("label")


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Section:
    key: str  # verdict | tried | session | caution | table | notes | method | flops | why | files
    title: str = ""
    lines: tuple[Line, ...] = ()
    table: Table | None = None

    def __bool__(self) -> bool:
        return bool(self.lines or self.table)

    def of(self, kind: str) -> list[Line]:
        """Its lines of one kind."""
        return [x for x in self.lines if x.kind == kind]


@dataclass(frozen=True)
class Document:
    title: str
    sections: tuple[Section, ...]

    def __getitem__(self, key: str) -> Section:
        """A section by key; an empty one where the summary has none."""
        return next((s for s in self.sections if s.key == key), Section(key))


# The form each kind takes on a page (summary.md, report.html): a paragraph, or its own kind's
# (a heading, a numbered finding, a fix to keep, a block of figures), else a list item.
PARAGRAPH = (VERDICT, TEXT, CAUTION)
OWN_FORM = (HEADING, FINDING, KEEP, FIGURES)
NAMED = (NOTE, DETAIL, UNRELIABLE)  # said of a row: its label before the text


def form(x: Line) -> str:
    if x.kind in PARAGRAPH:
        return "paragraph"
    return x.kind if x.kind in OWN_FORM else "item"


def named(x: Line) -> str:
    """A line said of a row, its label first ('default/fp32: unreliable: ...')."""
    if x.kind not in NAMED or not x.label:
        return x.text
    return f"{x.label}: " + ("unreliable: " if x.kind == UNRELIABLE else "") + x.text


def figure_lines(x: Line) -> list[str]:
    """A row's figures and, indented under them, their details (a note in brackets)."""
    return [x.text, *(f"  ({u.text})" if u.kind == NOTE else f"  {u.text}" for u in x.under)]


def plain(text: str) -> str:
    """A line's text without its inline marks, for the terminal."""
    return text.replace("**", "").replace("`", "")
