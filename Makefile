# Everything a fresh machine needs: `make demo` (set up + run) and `make test` (set up + tests).
VENV ?= .venv
PY := $(VENV)/bin/python
# torch first, pinned to the builds this project is tested with (pip finds them on local disk
# here); override with e.g. `make TORCH="torch torchvision"` elsewhere.
TORCH ?= torch==2.14.1 torchvision==0.29.1

.PHONY: venv demo test test-fast lint bench snapshots screenshots clean compat

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(TORCH)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

demo: venv
	$(VENV)/bin/tuimon --headless

# Two passes: every test but the `serial` ones on TEST_JOBS xdist workers, each pinned to its own
# cores (tests/conftest.py), then the serial ones alone (they judge load or need every core); one
# warm Inductor cache for both. Both passes always run; either failing fails the target.
TEST_JOBS ?= 2
test: venv
	@cache=$$(mktemp -d); rc=0; \
	TUIMON_TEST_INDUCTOR_CACHE=$$cache $(PY) -m pytest -q -n $(TEST_JOBS) --dist worksteal -m "not serial" || rc=1; \
	TUIMON_TEST_INDUCTOR_CACHE=$$cache $(PY) -m pytest -q -p no:xdist -m serial || rc=1; \
	rm -rf $$cache; exit $$rc

# The unit tier alone (tests/unit/: pure, no process started for a run, no compile): under 2 min.
test-fast: venv
	$(PY) -m pytest -q tests/unit

# The torch version matrix (issue 24): one interpreter per version under .venv-torch/ (that torch,
# from the registry: a CUDA build is ~3-7 GB), then tests/e2e/test_torch_compat.py with tuimon's own
# .venv running scripts and the recipe runner in each: make compat TORCH_VERSIONS="2.9.1 2.4.0"
TORCH_VERSIONS ?= 2.9.1
COMPAT_PY := $(foreach v,$(TORCH_VERSIONS),$(CURDIR)/.venv-torch/$(v)/bin/python)
empty :=
space := $(empty) $(empty)

compat: venv $(COMPAT_PY)
	TUIMON_COMPAT_PYTHON="$(subst $(space),:,$(COMPAT_PY))" $(PY) -m pytest -q -rA tests/e2e/test_torch_compat.py

$(CURDIR)/.venv-torch/%/bin/python:
	python3 -m venv .venv-torch/$*
	.venv-torch/$*/bin/python -m pip install -q --disable-pip-version-check torch==$* numpy

lint: venv
	$(VENV)/bin/ruff check tuimon tests recipes bench screenshots

snapshots: venv
	$(PY) -m pytest tests/ui/test_ui_snapshots.py --snapshot-update

screenshots: venv
	$(PY) screenshots/make_screenshots.py
	$(PY) screenshots/make_browser_screenshot.py
	$(PY) screenshots/make_report_screenshot.py

bench: venv
	$(PY) bench/probe_cost.py
	$(PY) bench/ui_ingest.py --steps-10m
	bash bench/sessions.sh

clean:
	rm -rf $(VENV) .venv-torch tuimon-sessions .pytest_cache
