"""Answers as text and files: the summary table (``table``), its rank rows (``rank_text``),
summary.md / summary.json / steps.csv (``export``), the Why section (``why_text``) and a
comparison's figures and renderings (``compare_figures``, ``compare_text``). Numbers come from
``tuimon.analysis``; nothing here computes a statistic."""
