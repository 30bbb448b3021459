"""``tuimon report``'s page: report.html, one self-contained file (figures inline as SVG, nothing
fetched), and with --png each figure as PNG and SVG. Imports matplotlib only when a page is
written (canvas.py), so the TUI and the CLI start without it; one module a job (docs/layout.md)."""
