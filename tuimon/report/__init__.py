"""Answers as text and files: the summary's words as one document (``sections``, ``document``)
that summary.md (``render_md``), report.html (``html``), summary.json (``summary_json``, its
shape ``schema``), the terminal and the TUI render; steps.csv (``export``); a comparison's
figures and renderings (``compare_figures``, ``compare_text``). Numbers come from
``tuimon.analysis``; nothing here computes a statistic."""
