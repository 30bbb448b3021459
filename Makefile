# Everything a fresh machine needs: `make demo` (set up + run) and `make test` (set up + tests).
VENV ?= .venv
PY := $(VENV)/bin/python
# torch first, pinned to the builds this project is tested with (pip finds them on local disk
# here); override with e.g. `make TORCH="torch torchvision"` elsewhere.
TORCH ?= torch==2.14.1 torchvision==0.29.1

.PHONY: venv demo test lint bench snapshots screenshots clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

demo: venv
	$(VENV)/bin/tuimon --headless

test: venv
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check tuimon tests recipes bench screenshots

snapshots: venv
	$(PY) -m pytest tests/test_ui_snapshots.py --snapshot-update

screenshots: venv
	$(PY) screenshots/make_screenshots.py
	$(PY) screenshots/make_browser_screenshot.py

bench: venv
	$(PY) bench/probe_cost.py
	$(PY) bench/ui_ingest.py --steps-10m
	bash bench/sessions.sh

clean:
	rm -rf $(VENV) tuimon-sessions .pytest_cache
