"""tuimon try (issue 34) end to end: a session, its plan, and its fixes raced in a second
ordinary session whose summary says what each did."""

import json

from conftest import TEST_RECIPES

ITEM = str(TEST_RECIPES / "item_in_forward.py")


def test_a_session_then_its_fixes_raced_against_the_variant_without_them(tuimon, tmp_path):
    proc, session = tuimon(ITEM, "--headless", "--modes", "eager,default", "--steps", "24")
    assert proc.returncode == 0, proc.stderr
    plan, _ = tuimon("try", str(session), "--plan")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0].startswith(f"try: {session.name}: fixes on default/fp32")
    assert any(line.startswith("  scalars: scalar outputs captured") for line in lines), lines
    assert len(list(session.parent.iterdir())) == 1  # --plan ran nothing

    proc, _ = tuimon("try", str(session), "--only", "scalars", "--headless", timeout=600)
    assert proc.returncode == 0, proc.stderr
    tried = sorted(p for p in session.parent.iterdir() if p != session)
    assert len(tried) == 1  # one fix: nothing to race together
    meta = json.loads((tried[0] / "meta.json").read_text())
    assert meta["argv"][-2:] == ["--set", "fix=none,scalars"] or "fix=none,scalars" in meta["argv"]
    summary = json.loads((tried[0] / "summary.json").read_text())
    assert [r["label"] for r in summary["runs"]] == [
        "eager/fp32 · fix=none", "default/fp32 · fix=none", "default/fp32 · fix=scalars"]
    fixed = next(r for r in summary["runs"] if r["axes"]["fix"] == "scalars")
    assert fixed["compare"]["baseline"] == "eager/fp32 · fix=none"  # its break-even is against eager unfixed
    assert fixed["compare"]["axis_baseline"] == "default/fp32 · fix=none"
    (outcome,) = summary["tried"]
    assert outcome["fix"] == "scalars" and outcome["code"] in (
        "helped", "helped_start", "no_better", "worse", "not_applied", "cannot_tell")
    assert "tried:" in proc.stdout and f"session: {tried[0]}" in proc.stdout
    assert "## Tried (tuimon try)" in (tried[0] / "summary.md").read_text()


def test_a_session_without_a_timed_run_and_a_bad_fix_name_are_one_line(tuimon, tmp_path):
    (tmp_path / "s").mkdir()
    proc, _ = tuimon("try", str(tmp_path / "s"))
    assert proc.returncode == 2 and proc.stderr.startswith("tuimon: error: not a session directory")
    proc, _ = tuimon("try", str(tmp_path / "s"), "--only", "warp")
    assert proc.returncode == 2 and proc.stderr.startswith("tuimon: error: --only: no fix named warp")
