"""tuimon/fixes.py: the fixes `tuimon try` races, named, parsed and matched to findings."""

import pytest

from tuimon import fixes
from tuimon.settings import RunSettings


def test_names_parse_and_join_back():
    assert fixes.parse("none") == () and fixes.join(()) == "none"
    assert fixes.parse("regional+dynamic") == ("regional", "dynamic")
    assert fixes.join(("regional", "dynamic")) == "regional+dynamic"
    with pytest.raises(ValueError, match="no fix named warp"):
        fixes.parse("regional+warp")


def test_what_cannot_apply_says_why():
    tf32, loader, regional = fixes.FIXES["tf32"], fixes.FIXES["loader"], fixes.FIXES["regional"]
    assert fixes.cannot(tf32, on_cuda=False, is_script=True, compiled=True) == "CUDA only"
    assert fixes.cannot(tf32, on_cuda=True, is_script=True, compiled=False) is None
    assert fixes.cannot(loader, on_cuda=False, is_script=False, compiled=True).startswith("scripts only")
    assert fixes.cannot(regional, on_cuda=False, is_script=True,
                        compiled=False) == "a compiled variant's only"


def test_findings_suggest_their_fixes_in_order():
    assert fixes.suggested(["recompiles.count", "bound.optimizer_bound"]) == ["dynamic", "opt", "foreach"]
    assert fixes.suggested(["capture.disturbed"]) == []


def test_fixes_reach_the_child_in_its_settings():
    s = RunSettings.make(fixes=("regional",))
    assert RunSettings.from_json(s.to_json()).fixes == ("regional",)
