"""The house rules: the parent side never imports torch; the runner never imports textual."""

import subprocess
import sys


def modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_parent_side_does_not_import_torch():
    loaded = modules_after(
        "import tuimon.cli, tuimon.headless, tuimon.session.supervisor, tuimon.session.export,"
        " tuimon.session.stats, tuimon.session.store, tuimon.events, tuimon.variants,"
        " tuimon.recipe; tuimon.cli.run_parser(); tuimon.cli.summary_parser()")
    assert "torch" not in loaded


def test_runner_does_not_import_textual():
    loaded = modules_after("import tuimon.runner.__main__, tuimon.runner.loop")
    assert "textual" not in loaded and "torch" in loaded


def test_help_is_fast_and_torch_free():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "tuimon", "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "--modes" in proc.stdout and "summary" in proc.stdout
    assert " torch" not in proc.stderr  # importtime lists every module imported
