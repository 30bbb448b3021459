"""Alert rules over plain sample dicts."""

from __future__ import annotations

import subprocess
import sys

from tuimon.probes.alerts import (
    BENIGN_REASONS,
    cpu_share_alerts,
    memory_alerts,
    run_alerts,
    system_alerts,
    throttle_alerts,
)

GIB = 2**30


def device(**kw) -> dict:
    base = {"index": 0, "mem_used": 10 * GIB, "mem_total": 80 * GIB, "throttle_reasons": []}
    return base | kw


def test_throttle_names_reasons_and_ignores_idle():
    assert throttle_alerts(device(throttle_reasons=["idle"])) == []
    assert throttle_alerts(device(throttle_reasons=["applications_clocks_setting"])) == []
    out = throttle_alerts(device(throttle_reasons=["idle", "sw_thermal_slowdown", "sw_power_cap"]))
    assert out == ["GPU 0 throttling: sw_thermal_slowdown, sw_power_cap"]
    strict = throttle_alerts(
        device(throttle_reasons=["applications_clocks_setting"]), benign=frozenset({"idle"})
    )
    assert strict == ["GPU 0 throttling: applications_clocks_setting"]
    assert "idle" in BENIGN_REASONS


def test_memory_over_95_percent():
    assert memory_alerts(device(mem_used=int(0.95 * 80 * GIB))) == []
    (msg,) = memory_alerts(device(index=3, mem_used=int(0.97 * 80 * GIB)))
    assert msg.startswith("GPU 3 memory 97% of 80.0 GiB")
    assert memory_alerts(device(mem_used=int(0.9 * 80 * GIB)), limit=0.85)


def test_cpu_share():
    run = {"cpu_percent": 160.0}
    # 2 cores, 2 runs: fair share 1 core, limit 1.5 cores.
    (msg,) = cpu_share_alerts(run, cpu_count=2, concurrent_runs=2)
    assert "1.6 cores" in msg and "1.6x its share of 1" in msg
    assert cpu_share_alerts({"cpu_percent": 140.0}, cpu_count=2, concurrent_runs=2) == []
    assert cpu_share_alerts(run, cpu_count=2, concurrent_runs=1) == []  # share 2 cores
    assert cpu_share_alerts(run, cpu_count=2, concurrent_runs=2, factor=2.0) == []
    assert cpu_share_alerts({"cpu_percent": 120.0}, cpu_count=4, concurrent_runs=8)


def test_missing_values_never_alert():
    na = {"index": 0, "mem_used": None, "mem_total": None, "throttle_reasons": None}
    dead = {"cpu_percent": None}
    assert run_alerts(na, dead, cpu_count=2, concurrent_runs=2) == []
    assert run_alerts(None, None, cpu_count=2, concurrent_runs=0) == []
    assert system_alerts({"mem_used": None, "mem_total": None}) == []


def test_run_alerts_combines():
    out = run_alerts(
        device(mem_used=79 * GIB, throttle_reasons=["hw_slowdown"]),
        {"cpu_percent": 390.0},
        cpu_count=4,
        concurrent_runs=2,
    )
    assert len(out) == 3 and out[0].startswith("GPU 0 throttling")


def test_system_memory():
    assert system_alerts({"mem_used": 99, "mem_total": 100}) == ["host memory 99% used (> 95%)"]
    assert system_alerts({"mem_used": 50, "mem_total": 100}) == []


def test_alerts_module_is_pure():
    code = (
        "import sys, importlib.util as u; "
        "spec = u.spec_from_file_location('a', 'tuimon/probes/alerts.py'); "
        "spec.loader.exec_module(u.module_from_spec(spec)); "
        "bad = {'psutil', 'pynvml', 'torch', 'textual'} & set(sys.modules); "
        "sys.exit(sorted(bad) or 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_probes_import_no_torch_or_textual():
    code = (
        "import sys, tuimon.probes; "
        "bad = {'torch', 'textual', 'pynvml'} & set(sys.modules); sys.exit(sorted(bad) or 0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
