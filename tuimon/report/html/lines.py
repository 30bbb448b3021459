"""The document's sections as HTML (report/document.py), in the forms summary.md gives each kind
of line (report/render_md.py): paragraphs, lists, numbered findings with their evidence under
them, headings, code. Every text is escaped first, then its inline marks (`code`, **bold**)
become tags; nothing is fetched."""

from __future__ import annotations

import html
import re
from itertools import groupby

from tuimon.report.document import (
    CAUTION,
    CODE,
    EVIDENCE,
    FIGURES,
    FINDING,
    HEADING,
    KEEP,
    NOTE,
    Line,
    Section,
    form,
    named,
)

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def inline(text: str) -> str:
    """One line's text: escaped, then `code` and **bold** (code first: its stars stay stars)."""
    parts = _CODE.split(text)
    return "".join(f"<code>{html.escape(part)}</code>" if k % 2 else
                   _BOLD.sub(r"<strong>\1</strong>", html.escape(part)) for k, part in enumerate(parts))


def sections(*said: Section) -> str:
    """Sections one after the other, each its table (the first cell of a row its heading) and
    its lines."""
    out = []
    for s in said:
        if s.table is not None:
            head = "".join(f"<th>{inline(c)}</th>" for c in s.table.header)
            body = "".join("<tr>" + "".join(f"<th>{inline(c)}</th>" if k == 0 else f"<td>{inline(c)}</td>"
                                            for k, c in enumerate(row)) + "</tr>" for row in s.table.rows)
            out.append(f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}'
                       "</tbody></table></div>")
        out += blocks(s.lines)
    return "\n".join(out)


def blocks(said: tuple[Line, ...] | list[Line]) -> list[str]:
    out: list[str] = []
    for shape, grouped in groupby(said, key=form):
        group = list(grouped)
        if shape == "paragraph":
            out += [f"<p><strong>Note: {inline(x.text)}.</strong></p>" if x.kind == CAUTION
                    else f"<p>{inline(x.text)}</p>" for x in group]
        elif shape == HEADING:
            for x in group:
                out += [f"<h3>{inline(x.text)}</h3>", *blocks(x.under)]
        elif shape == FINDING:
            out.append("<ol>" + "".join(map(_finding, group)) + "</ol>")
        elif shape == KEEP:
            out += [f"<p>{inline(x.text)}</p>{_code(x)}" for x in group]
        else:  # list items, and a row's figures with their details under them
            out.append("<ul>" + "".join(_item(x, shape == FIGURES) for x in group) + "</ul>")
    return out


def _finding(x: Line) -> str:
    level, price = x.figures.get("level"), x.figures.get("price")
    head = f"<strong>{inline(x.text)}</strong>" + (f" ({level})" if level else "") + (
        f" — {html.escape(price)}" if price else "")
    under = "".join(f"<li>{'' if u.kind == EVIDENCE else 'try: '}{inline(u.text)}</li>" for u in x.under)
    return f"<li>{head}<ul>{under}</ul></li>" if under else f"<li>{head}</li>"


def _item(x: Line, figures: bool) -> str:
    under = [u for u in x.under if u.kind != CODE]
    text = inline(x.text if figures else named(x))
    sub = "".join(f"<li>{'(' + inline(u.text) + ')' if figures and u.kind == NOTE else inline(u.text)}</li>"
                  for u in under)
    return f"<li>{text}{f'<ul>{sub}</ul>' if sub else ''}{_code(x)}</li>"


def _code(x: Line) -> str:
    code = "\n".join(c.text for c in x.under if c.kind == CODE)
    return f"<pre><code>{html.escape(code)}</code></pre>" if code else ""
