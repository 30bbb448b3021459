"""summary.md: the summary's document (report/document.py) as Markdown. Each kind of line has its
form: a paragraph, a list item, a numbered finding with its evidence under it, a heading, an
indented block of figures, a block of code; consecutive lines of one form make one block."""

from __future__ import annotations

from itertools import groupby

from tuimon.report.document import (
    CAUTION,
    CODE,
    EVIDENCE,
    FIGURES,
    FINDING,
    HEADING,
    KEEP,
    Document,
    Line,
    Table,
    figure_lines,
    form,
    named,
)


def markdown(doc: Document) -> str:
    blocks = [f"# {doc.title}"]
    for s in doc.sections:
        if not s:
            continue
        blocks += [f"## {s.title}"] if s.title else []
        blocks += [table(s.table)] if s.table else []
        blocks += lines(s.lines)
        blocks += ["---"] if s.key == "tried" else []  # the session's own list below is not the section's
    return "\n\n".join(blocks) + "\n"


def table(t: Table) -> str:
    rows = ["| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
    return "\n".join(rows + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in t.rows])


def lines(said: tuple[Line, ...]) -> list[str]:
    """Blocks of Markdown, a block a run of lines of one form."""
    blocks: list[str] = []
    for shape, grouped in groupby(said, key=form):
        group = list(grouped)
        if shape == "paragraph":
            blocks += [f"**Note: {x.text}.**" if x.kind == CAUTION else x.text for x in group]
        elif shape == HEADING:
            for x in group:
                blocks += [f"### {x.text}", *lines(x.under)]
        elif shape == FINDING:
            blocks.append("\n".join(finding(k, x) for k, x in enumerate(group, 1)))
        elif shape == KEEP:
            for x in group:
                blocks += [x.text, "\n".join(["```python", *(c.text for c in x.under), "```"])]
        elif shape == FIGURES:
            blocks.append("\n".join(f"    {text}" for x in group for text in figure_lines(x)))
        else:
            blocks.append("\n".join(map(item, group)))
    return blocks


def item(x: Line) -> str:
    out = f"- {named(x)}"
    code = [c.text for c in x.under if c.kind == CODE]
    out += "".join(f"\n  - {u.text}" for u in x.under if u.kind != CODE)
    if code:  # a log's tail, inside its item
        out += "\n\n  ```\n" + "".join(f"  {c}\n" for c in code) + "  ```\n"
    return out


def finding(k: int, x: Line) -> str:
    level, price = x.figures.get("level"), x.figures.get("price")
    head = f"{k}. **{x.text}**" + (f" ({level})" if level else "") + (f" — {price}" if price else "")
    return "\n".join([head, *(f"   - {u.text}" if u.kind == EVIDENCE else f"   - try: {u.text}"
                             for u in x.under)])
