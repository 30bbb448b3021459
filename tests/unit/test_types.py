"""The type check CI runs: mypy over tuimon/ as pyproject.toml's [tool.mypy] says (every module
checked in mypy's basic mode; the step engine, the reducer and summary.json's schema strict),
with no error. Modules not clean yet are listed there once, under ``ignore_errors``; a module
made clean leaves that list (the second test says when one is). docs/development.md#tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency reads TOML
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
STRICT = {"tuimon.runner.engine", "tuimon.sessiondir.run_state", "tuimon.report.schema"}


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    # The venv's mypy, on pyproject.toml's config; its cache (.mypy_cache/) makes a rerun quick.
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=500)


def pyproject_mypy() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def overrides() -> list[dict]:
    return pyproject_mypy()["overrides"]


def not_clean() -> list[str]:
    return [m for o in overrides() if o.get("ignore_errors") for m in o["module"]]


def test_tuimon_type_checks_clean_with_the_engine_reducer_and_schema_strict():
    strict = {m for o in overrides() if o.get("disallow_untyped_defs") and o.get("disallow_any_generics")
              for m in o["module"]}
    assert strict == STRICT
    assert not STRICT & set(not_clean())  # strict, and really checked
    done = mypy()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


def test_the_list_of_modules_not_clean_yet_holds_only_modules_with_errors(tmp_path):
    """A module fixed is checked from then on: its name leaves the ignore_errors list. The listed
    modules are checked on the same config less that list, following the others silently."""
    listed = not_clean()
    config = tmp_path / "mypy.ini"
    config.write_text(ini({k: v for k, v in pyproject_mypy().items() if k not in ("overrides", "files")},
                          [o for o in overrides() if not o.get("ignore_errors")]))
    files = [m.replace(".", "/") + ("/__init__.py" if (ROOT / m.replace(".", "/")).is_dir() else ".py")
             for m in listed]
    # A cache of its own: the other test's mypy may be writing .mypy_cache/'s top at once.
    done = mypy("--config-file", str(config), "--cache-dir", ".mypy_cache/not-clean",
                "--follow-imports=silent", *files)
    failing = {p.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
               for p in re.findall(r"^(tuimon/[\w/]+\.py):\d+: error", done.stdout, re.M)}
    assert sorted(set(listed) - failing) == [], "clean now: take them off [tool.mypy]'s ignore_errors list"


def ini(options: dict, sections: list[dict]) -> str:
    """[tool.mypy] as a mypy.ini."""
    def lines(d: dict) -> list[str]:
        return [f"{k} = {','.join(v) if isinstance(v, list) else v}" for k, v in d.items()]

    out = ["[mypy]", *lines(options)]
    for o in sections:
        out += [f"[mypy-{','.join(o['module'])}]", *lines({k: v for k, v in o.items() if k != "module"})]
    return "\n".join(out) + "\n"
