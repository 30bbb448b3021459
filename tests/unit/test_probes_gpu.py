"""GpuProbe against tests/fake_pynvml.py, plus the real pynvml on whatever this machine has."""

from __future__ import annotations

import json
import time

import pytest

from tests import fake_pynvml as fake
from tuimon.probes.gpu import GpuProbe, decode_reasons, map_visible_devices, reason_table

UUID0 = "GPU-0a1b2c3d-0000-0000-0000-000000000000"
UUID1 = "GPU-0a1bffff-1111-1111-1111-111111111111"
UUID2 = "GPU-9999eeee-2222-2222-2222-222222222222"

DEVICE_KEYS = {
    "index",
    "name",
    "uuid",
    "util_gpu",
    "util_mem",
    "mem_used",
    "mem_total",
    "temp_c",
    "energy_mj",
    "power_w",
    "power_limit_w",
    "clock_sm_mhz",
    "clock_mem_mhz",
    "fan_percent",
    "throttle_mask",
    "throttle_reasons",
    "foreign",
}


def now_us() -> int:
    return int(time.time() * 1e6)


def test_full_device_sample():
    nv = fake.make([fake.FakeDevice(reasons=0x4 | 0x20)])
    probe = GpuProbe(nv)
    assert probe.available and probe.reason is None
    s = probe.sample()
    json.dumps(s)
    (d,) = s["devices"]
    assert set(d) == DEVICE_KEYS
    assert d["name"] == "NVIDIA H100 80GB HBM3" and d["uuid"].startswith("GPU-")
    assert (d["util_gpu"], d["util_mem"], d["temp_c"], d["fan_percent"]) == (87, 41, 64, 30)
    assert d["mem_used"] == 20 * 2**30 and d["mem_total"] == 80 * 2**30
    assert d["power_w"] == 412.3 and d["power_limit_w"] == 700.0
    assert (d["clock_sm_mhz"], d["clock_mem_mhz"]) == (1980, 2619)
    assert d["throttle_reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]
    assert s["unsupported_new"] == [] and s["errors"] == {}


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0x0, []),
        (0x1, ["idle"]),
        (0x8 | 0x40, ["hw_slowdown", "hw_thermal_slowdown"]),
        (
            0x2 | 0x10 | 0x80 | 0x100,
            [
                "applications_clocks_setting",
                "sync_boost",
                "hw_power_brake_slowdown",
                "display_clocks_setting",
            ],
        ),
        (0x200 | 0x400, ["board_limit", "reliability"]),
        (0x4 | 0x10000, ["sw_power_cap", "unknown_0x10000"]),
        (None, None),
    ],
)
def test_decode_reasons(mask, names):
    assert decode_reasons(mask) == names


def test_reason_bits_match_real_pynvml():
    import pynvml

    real = dict((name, bit) for bit, name in reason_table(pynvml))
    assert real == dict((name, bit) for bit, name in reason_table())
    assert real["hw_thermal_slowdown"] == pynvml.nvmlClocksEventReasonHwThermalSlowdown


def test_old_pynvml_uses_throttle_reasons():
    nv = fake.make(
        [fake.FakeDevice(reasons=0x40)], missing=("nvmlDeviceGetCurrentClocksEventReasons",)
    )
    s = GpuProbe(nv).sample()
    assert s["devices"][0]["throttle_reasons"] == ["hw_thermal_slowdown"]
    assert nv.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 1


def test_unsupported_is_na_and_said_once():
    dev = fake.FakeDevice(
        fail={
            "nvmlDeviceGetFanSpeed": fake.NVML_ERROR_NOT_SUPPORTED,
            "nvmlDeviceGetPowerUsage": fake.NVML_ERROR_NO_PERMISSION,
        }
    )
    nv = fake.make(
        [dev, fake.FakeDevice(fail=dict(dev.fail))], missing=("nvmlDeviceGetEnforcedPowerLimit",)
    )
    probe = GpuProbe(nv)
    first = probe.sample()
    assert first["unsupported_new"] == ["fan_percent", "power_limit_w", "power_w"]
    for d in first["devices"]:
        assert d["fan_percent"] is d["power_w"] is d["power_limit_w"] is None
        assert d["temp_c"] == 64  # the rest keeps working
    second = probe.sample()
    assert second["unsupported_new"] == [] and second["errors"] == {}
    assert probe.unsupported == {"fan_percent", "power_limit_w", "power_w"}
    assert nv.calls["nvmlDeviceGetFanSpeed"] == 2  # once per device, then never asked again


def test_transient_error_is_na_not_unsupported():
    dev = fake.FakeDevice()
    nv = fake.make([dev])
    probe = GpuProbe(nv)
    dev.fail["nvmlDeviceGetTemperature"] = fake.NVML_ERROR_GPU_IS_LOST
    s = probe.sample()
    assert s["devices"][0]["temp_c"] is None
    assert s["errors"] == {"temp_c": "GPU is lost"} and probe.unsupported == set()
    dev.fail.clear()
    assert probe.sample()["devices"][0]["temp_c"] == 64


@pytest.mark.parametrize(
    "code", [fake.NVML_ERROR_LIBRARY_NOT_FOUND, fake.NVML_ERROR_DRIVER_NOT_LOADED]
)
def test_init_failure_is_unavailable(code):
    probe = GpuProbe(fake.make([fake.FakeDevice()], init_error=code))
    assert probe.available is False
    assert probe.reason.startswith("NVML unavailable: ") and "\n" not in probe.reason
    s = probe.sample({"a": [1, 2]})
    assert s["available"] is False and s["devices"] == []
    assert s["runs"]["a"] == {"gpu_mem": None, "sm_util": None, "per_device": []}
    json.dumps(s)
    probe.close()


def test_no_devices_is_unavailable():
    probe = GpuProbe(fake.make([]))
    assert probe.available is False and probe.reason == "no NVIDIA GPU found"
    probe.close()


def test_handle_failure_keeps_other_devices():
    nv = fake.make([fake.FakeDevice(), fake.FakeDevice(uuid=UUID1)])
    real_get = nv.nvmlDeviceGetHandleByIndex

    def flaky(i):
        if i == 0:
            raise fake.NVMLError(fake.NVML_ERROR_GPU_IS_LOST)
        return real_get(i)

    nv.nvmlDeviceGetHandleByIndex = flaky
    s = GpuProbe(nv).sample()
    assert [d["uuid"] for d in s["devices"]] == [None, UUID1]
    assert s["devices"][0]["temp_c"] is None and s["devices"][1]["temp_c"] == 64


def test_per_run_memory_and_utilisation():
    t = now_us()
    gpu0 = fake.FakeDevice(
        procs=[(100, 3 * 2**30), (101, 2**30), (300, 5 * 2**30)],
        util_samples=[(100, t, 60, 20), (100, t + 1, 80, 30), (101, t, 10, 5), (300, t, 25, 9)],
    )
    gpu1 = fake.FakeDevice(
        uuid=UUID1, procs=[(100, 2**30), (200, None)], util_samples=[(200, t, 50, 10)]
    )
    nv = fake.make([gpu0, gpu1])
    probe = GpuProbe(nv)
    s = probe.sample({"a": [100, 101, 102], "b": [200], "idle": [999]})
    a, b, idle = s["runs"]["a"], s["runs"]["b"], s["runs"]["idle"]
    assert a["per_device"] == [
        {"index": 0, "gpu_mem": 4 * 2**30, "sm_util": 70 + 10, "mem_util": 25 + 5},
        {"index": 1, "gpu_mem": 2**30, "sm_util": 0, "mem_util": 0},
    ]
    assert a["gpu_mem"] == 5 * 2**30 and a["sm_util"] == 80
    # WDDM-style None memory stays n/a; utilisation still attributed.
    assert b["per_device"] == [{"index": 1, "gpu_mem": None, "sm_util": 50, "mem_util": 10}]
    assert b["gpu_mem"] == 0 and b["sm_util"] == 50
    assert idle == {"gpu_mem": 0, "sm_util": None, "per_device": []}
    json.dumps(s)

    # Next window: only samples newer than the last timestamp seen on each device count.
    gpu0.util_samples.append((100, t + 5, 10, 1))
    a2 = probe.sample({"a": [100, 101]})["runs"]["a"]
    assert a2["per_device"][0]["sm_util"] == 10
    assert nv.calls["nvmlDeviceGetProcessUtilization"] == 4


def test_process_utilisation_unsupported_gives_none():
    nv = fake.make(
        [fake.FakeDevice(procs=[(5, 2**20)])],
        fail={"nvmlDeviceGetProcessUtilization": fake.NVML_ERROR_NOT_SUPPORTED},
    )
    s = GpuProbe(nv).sample({"r": [5]})
    assert s["runs"]["r"]["per_device"] == [
        {"index": 0, "gpu_mem": 2**20, "sm_util": None, "mem_util": None}
    ]
    assert s["runs"]["r"]["sm_util"] is None
    assert s["unsupported_new"] == ["process_util"]


DEVS = [{"index": 0, "uuid": UUID0}, {"index": 1, "uuid": UUID1}, {"index": 2, "uuid": UUID2}]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, [0, 1, 2]),
        ("", []),
        ("1", [1]),
        ("2,0", [2, 0]),
        (" 1 , 2 ", [1, 2]),
        ("0,7,1", [0]),  # CUDA stops at the first invalid entry
        ("1,1", [1]),  # a repeat is invalid too
        ("-1", []),
        ("NoDevFiles", []),
        (UUID2, [2]),
        (f"{UUID1},0", [1, 0]),
        ("GPU-9999", [2]),  # unique prefix
        ("9999eeee", [2]),  # without "GPU-"
        ("GPU-0a1b", []),  # ambiguous prefix: 0a1b2c3d and 0a1bffff
        ("gpu-0A1B2", [0]),
        ("MIG-0a1b2c3d-0000-0000-0000-000000000000", []),
        ("1,MIG-abc,0", [1]),
    ],
)
def test_map_visible_devices(value, expected):
    assert map_visible_devices(value, DEVS) == expected


def test_visible_indices_uses_probe_devices():
    nv = fake.make([fake.FakeDevice(uuid=UUID0), fake.FakeDevice(uuid=UUID1)])
    probe = GpuProbe(nv)
    assert probe.visible_indices("GPU-0a1bf") == [1]
    assert probe.visible_indices(None) == [0, 1]


def test_close_shuts_down_once():
    nv = fake.make([fake.FakeDevice()])
    probe = GpuProbe(nv)
    assert nv.initialised == 1
    probe.close()
    probe.close()
    assert nv.initialised == 0


def test_real_pynvml_never_raises():
    probe = GpuProbe()  # the installed nvidia-ml-py, on whatever this machine has
    s = probe.sample({"r": [1]})
    json.dumps(s)
    if probe.available:  # a GPU box
        assert s["devices"]
    else:  # the CI machine: no driver
        assert s["available"] is False and s["devices"] == []
        assert probe.reason and "\n" not in probe.reason
        assert s["runs"]["r"]["gpu_mem"] is None
    probe.close()
