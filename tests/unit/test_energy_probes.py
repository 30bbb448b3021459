"""The energy probes (issue 35): NVML's total-energy counter in a device's sample (present,
missing from an old nvidia-ml-py, not supported by the device), RAPL's counters in a fake sysfs
(readable, wrapping, root-only, absent) and the sampler carrying them (said once, never raised)."""

from __future__ import annotations

import os
from pathlib import Path

import fake_pynvml as fake

from tuimon import events
from tuimon.control.sampler import Sampler
from tuimon.probes import GpuProbe
from tuimon.probes.rapl import RaplProbe


def test_the_energy_counter_is_in_each_device_sample():
    device = fake.FakeDevice(energy_mj=5_000)
    probe = GpuProbe(fake.make([device]))
    assert probe.sample()["devices"][0]["energy_mj"] == 5_000
    device.energy_mj += 250_000  # 250 J later
    assert probe.sample()["devices"][0]["energy_mj"] == 255_000


def test_a_missing_or_unsupported_counter_is_na_said_once():
    for nv in (fake.make([fake.FakeDevice()], missing=("nvmlDeviceGetTotalEnergyConsumption",)),
               fake.make([fake.FakeDevice(fail={"nvmlDeviceGetTotalEnergyConsumption":
                                                fake.NVML_ERROR_NOT_SUPPORTED})])):
        probe = GpuProbe(nv)
        first, second = probe.sample(), probe.sample()
        assert first["devices"][0]["energy_mj"] is None and first["devices"][0]["power_w"] == 412.3
        assert first["unsupported_new"] == ["energy_mj"] and second["unsupported_new"] == []


def zone(root: Path, name: str, kind: str, energy: int, wrap: int = 2**32) -> Path:
    d = root / name
    d.mkdir()
    (d / "name").write_text(kind + "\n")
    (d / "energy_uj").write_text(f"{energy}\n")
    (d / "max_energy_range_uj").write_text(f"{wrap}\n")
    return d


def test_rapl_sums_the_packages_and_undoes_a_wrap(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 1_000, wrap=10_000)
    p1 = zone(tmp_path, "intel-rapl:1", "package-1", 500)
    zone(tmp_path, "intel-rapl:0:0", "core", 7)  # a sub-zone: inside package-0's already
    zone(tmp_path, "intel-rapl:2", "psys", 99)  # the platform: the packages again, and more
    probe = RaplProbe(tmp_path)
    assert probe.available and probe.reason is None
    assert probe.read() == 0
    (p0 / "energy_uj").write_text("4000\n")
    (p1 / "energy_uj").write_text("1500\n")
    assert probe.read() == 3_000 + 1_000
    (p0 / "energy_uj").write_text("1000\n")  # wrapped at 10,000: 7,000 more
    assert probe.read() == 4_000 + 7_000


def test_rapl_root_only_is_a_reason_not_a_traceback(tmp_path, monkeypatch):
    zone(tmp_path, "intel-rapl:0", "package-0", 1_000)
    real = Path.read_text

    def guarded(self, *args, **kwargs):
        if self.name == "energy_uj":  # as /sys has it for a user since CVE-2020-8694
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", guarded)
    probe = RaplProbe(tmp_path)
    assert not probe.available and probe.read() is None
    assert probe.reason.startswith("RAPL's counters are readable by root only here")


def test_no_rapl_is_a_reason_too(tmp_path):
    probe = RaplProbe(tmp_path / "absent")
    assert not probe.available and probe.reason.startswith("no RAPL counters")


def test_the_sampler_carries_cpu_energy_and_says_why_not_once(tmp_path):
    p0 = zone(tmp_path, "intel-rapl:0", "package-0", 1_000)
    no_gpu = fake.make([], init_error=fake.NVML_ERROR_LIBRARY_NOT_FOUND)
    sampler = Sampler(30.0, lambda: {"r": os.getpid()}, lambda batch: None, gpu=GpuProbe(no_gpu),
                      rapl=RaplProbe(tmp_path))
    first = sampler.tick()
    (p0 / "energy_uj").write_text("3000\n")
    second = sampler.tick()
    info = [e for e in first if e["type"] == events.PROBE_INFO]
    assert info and info[0]["rapl"] is None
    assert [e["system"]["energy_uj"] for e in first + second if e["type"] == events.SAMPLE] == [0, 2_000]

    sampler = Sampler(30.0, lambda: {"r": os.getpid()}, lambda batch: None, gpu=GpuProbe(no_gpu),
                      rapl=RaplProbe(tmp_path / "absent"))
    batches = [sampler.tick(), sampler.tick()]
    said = [e["rapl"] for b in batches for e in b if e["type"] == events.PROBE_INFO and "rapl" in e]
    assert len(said) == 1 and said[0].startswith("no RAPL counters")
    assert all("energy_uj" not in e["system"] for b in batches for e in b if e["type"] == events.SAMPLE)
