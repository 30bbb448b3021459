"""The supervisor's sampler: real child processes for the host side, a fake NVML for the GPU."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests import fake_pynvml as fake
from tuimon import events
from tuimon.analysis.stats import summarize
from tuimon.control.sampler import Sampler
from tuimon.probes import GpuProbe
from tuimon.report import export

pytestmark = pytest.mark.serial  # judges load, or needs every core (tests/conftest.py)

BUSY = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"


@pytest.fixture
def busy_child():
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    yield proc
    proc.kill()
    proc.wait()


def test_tick_samples_host_and_gpu_and_says_things_once(busy_child):
    device = fake.FakeDevice(reasons=0x20, procs=[(busy_child.pid, 3 * 2**30)])  # thermal
    gpu = GpuProbe(fake.make([device]))
    sampler = Sampler(0.2, lambda: {"eager-fp32": busy_child.pid}, lambda batch: None, gpu=gpu)
    first = sampler.tick()
    time.sleep(0.5)
    second = sampler.tick()

    kinds = [e["type"] for e in first]
    assert kinds.count(events.PROBE_INFO) == 1 and kinds.count(events.SAMPLE) == 1
    info = next(e for e in first if e["type"] == events.PROBE_INFO)
    assert info["gpu_available"] is True and info["devices"][0]["name"] == device.name
    warn = [e for e in first if e["type"] == events.WARNING]
    assert [(w["run"], w["text"]) for w in warn] == [("eager-fp32", "GPU 0 throttling: sw_thermal_slowdown")]

    sample = next(e for e in second if e["type"] == events.SAMPLE)
    run = sample["runs"]["eager-fp32"]
    assert run["cpu_percent"] > 20 and run["rss"] > 0 and run["descendants"] == 0
    assert run["gpu_mem"] == 3 * 2**30 and run["gpus"] == [0]
    assert sample["devices"][0]["temp_c"] == device.temp_c
    # Still throttling: not said again; no second probe_info.
    assert [e["type"] for e in second] == [events.SAMPLE]


def test_sampler_thread_delivers_on_its_period(busy_child):
    got: list[list[dict]] = []
    sampler = Sampler(0.2, lambda: {"r": busy_child.pid}, got.append,
                      gpu=GpuProbe(fake.make([], init_error=fake.NVML_ERROR_LIBRARY_NOT_FOUND)))
    sampler.start()
    time.sleep(1.1)
    sampler.stop()
    samples = [e for batch in got for e in batch if e["type"] == events.SAMPLE]
    assert 4 <= len(samples) <= 7
    info = [e for batch in got for e in batch if e["type"] == events.PROBE_INFO]
    assert len(info) == 1 and info[0]["gpu_available"] is False
    assert "Library Not Found" in info[0]["reason"]


def step(run, i, t, ms=10.0):
    return events.make(events.STEP, run, i=i, t=t, ms=ms, data_ms=0.0, n=8, loss=1.0,
                       phase="warmup" if i < 3 else "steady")


def sample(t, cpu, util, temp, reasons, rss=2**30):
    e = events.make(events.SAMPLE, system={"cpu_count": 2},
                    runs={"eager-fp32": {"cpu_percent": cpu, "rss": rss, "descendants": 1,
                                         "gpu_mem": 2**30, "sm_util": util, "gpus": [0]}},
                    devices=[{"index": 0, "util_gpu": util, "mem_used": 5 * 2**30,
                              "mem_total": 80 * 2**30, "temp_c": temp, "power_w": 300.0,
                              "throttle_reasons": reasons}])
    e["t"] = t
    return e


def test_probe_rows_over_the_steady_state_only():
    evs = [events.make(events.RUN_STARTED, "eager-fp32", mode="eager", precision="fp32"),
           events.make(events.PROBE_INFO, gpu_available=True, reason=None, devices=[])]
    evs += [step("eager-fp32", i, 100.0 + i) for i in range(20)]  # steady from t≈103
    evs += [sample(95.0, 400.0, 5, 90, [])]  # during build/compile: not steady, ignored
    evs += [sample(104.0 + k, 100.0 + 10 * k, 80 + k, 60 + k, ["sw_thermal_slowdown"] if k == 3 else ["idle"])
            for k in range(4)]
    summary = summarize(evs)
    r = summary.runs[0]
    assert r.probes.samples == 4
    assert r.probes.cpu_mean == pytest.approx(115.0) and r.probes.cpu_max == 130.0
    assert r.probes.gpu_util_mean == pytest.approx(81.5) and r.probes.temp_max == 63
    assert r.probes.throttled_share == pytest.approx(0.25)
    assert r.probes.throttle_reasons == {"sw_thermal_slowdown": 1}
    header, rows = export.table(summary)
    names = [row[0] for row in rows]
    assert "GPU util (mean)" in names and "throttled" in names
    assert dict((row[0], row[1]) for row in rows)["throttled"] == "25% of the time (sw_thermal_slowdown)"


def test_no_gpu_gives_na_rows_and_a_note():
    evs = [events.make(events.RUN_STARTED, "eager-fp32", mode="eager", precision="fp32"),
           events.make(events.PROBE_INFO, gpu_available=False, reason="NVML unavailable: x")]
    evs += [step("eager-fp32", i, 100.0 + i) for i in range(10)]
    summary = summarize(evs)
    _, rows = export.table(summary)
    assert dict((row[0], row[1]) for row in rows)["GPU util (mean)"] == "n/a"
    assert "GPU metrics: n/a (NVML unavailable: x)" in export.to_markdown({}, summary)
