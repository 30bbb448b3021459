"""``tuimon report``'s page: report.html, one self-contained file (its figures inline as SVG,
nothing fetched), and with --png each figure as PNG and SVG. Imports matplotlib only when a page
is written (canvas.py): the TUI and the CLI start without it.

``data`` (the session read for the figures), ``canvas`` (matplotlib, the style, a figure's SVG /
PNG), ``step_figs`` / ``payoff_fig`` / ``phase_fig`` / ``compile_fig`` (one figure's job each),
``measures`` (FLOPs / MFU and memory per phase, or n/a), ``markdown`` (summary.md's words as
HTML), ``page`` (the page assembled and written)."""
