"""Issue 35, FLOPs: the Flops record folded from the ``flops`` event and completed with achieved
FLOP/s and MFU (analysis/stats/flops.py), on synthetic sessions whose phases are known; the peak
table's lookup by the names NVML and torch give (tuimon/peaks.py, against the fake NVML); the
words (report/flops_text.py), summary.json's keys, the Why findings (analysis/why/flops.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from test_phases_stats import EAGER, phased_events

from tests import fake_pynvml as fake
from tuimon import events
from tuimon.analysis import diagnose, summarize
from tuimon.cli import doctor
from tuimon.peaks import PRECISIONS, TABLE, datasheet_peak, find
from tuimon.report import export, flops_text, summary_json
from tuimon.runner.peak_bench import dtypes_for

# The phases' medians: forward 6 ms, backward 4 ms, optimizer 2 ms (test_phases_stats.EAGER).
FWD, BWD = 6e9, 8e9  # FLOPs: forward 1 TFLOP/s at 6 ms, backward 2 TFLOP/s at 4 ms
PEAKS = {"fp32": 2e12, "bf16": 4e12}


def flops_event(run: str, precision: str = "fp32", peaks: dict | None = PEAKS, **over) -> dict:
    fields = {"forward": int(FWD), "backward": int(BWD), "optimizer": 0, "step": int(FWD + BWD),
              "precision": precision, "dtypes": {"float32": int(FWD + BWD)}, "calls": 1,
              "ops": {"aten.mm": int(BWD), "aten.addmm": int(FWD)}, "counted_on": "eager",
              "seconds": 0.1, "peak": {"peaks": peaks, "key": "host | cpu | torch"} if peaks else None}
    return events.make(events.FLOPS, run, **{**fields, **over})


def session(device: str = "cpu", name: str = "x86_64", precision: str = "fp32", **over) -> list[dict]:
    evs = phased_events("eager-fp32", "eager", EAGER, seed=1)
    for e in evs:
        if e["type"] == events.RUN_STARTED:
            e.update(device=device, device_name=name)
    evs.insert(2, flops_event("eager-fp32", precision, **over))
    return evs


def row(evs):
    return summarize(evs).runs[0]


def test_achieved_flops_per_phase_are_its_flops_over_its_median():
    f = row(session()).flops
    fwd, bwd, opt = (f.phases[name] for name in ("forward", "backward", "optimizer"))
    assert (fwd.flops, bwd.flops, opt.flops, f.step.flops) == (6e9, 8e9, 0, 14e9)
    assert fwd.flop_s == pytest.approx(1e12, rel=0.03)  # 6 GFLOP in ~6 ms
    assert bwd.flop_s == pytest.approx(2e12, rel=0.03)
    assert opt.flop_s is None  # nothing counted there: no rate, not 0 FLOP/s
    assert f.step.flop_s == pytest.approx(14e9 / 13.2e-3, rel=0.03)  # the median step, 13.2 ms
    assert fwd.mfu_measured == pytest.approx(0.5, rel=0.03)
    assert bwd.mfu_measured == pytest.approx(1.0, rel=0.05)


def test_on_a_cpu_the_measured_peak_stands_alone():
    f = row(session()).flops
    assert f.peak_lookup == "cpu" and f.peak_datasheet is None and f.step.mfu_datasheet is None
    assert f.mfu_basis == "measured-cpu"
    assert "n/a on a CPU" in flops_text.mfu_cell(row(session()), "datasheet")


def test_a_known_gpu_gives_both_peaks_at_the_precision_used():
    r = row(session("cuda:0", "NVIDIA H100 80GB HBM3", "bf16"))
    f = r.flops
    assert f.peak_device == "H100 SXM" and f.peak_datasheet == 989.5e12 and f.mfu_basis == "both"
    assert f.peak_measured == 4e12  # the bf16 GEMM best, not the fp32 one
    assert f.phases["forward"].mfu_datasheet == pytest.approx(1e12 / 989.5e12, rel=0.03)
    assert "of H100 SXM 990 TFLOP/s bf16" in flops_text.mfu_cell(r, "datasheet")


def test_an_unknown_device_falls_back_to_the_measured_peak_and_says_so():
    r = row(session("cuda:0", "NVIDIA A10G", "bf16"))
    assert r.flops.peak_lookup == "unknown-device" and r.flops.mfu_basis == "measured-unknown-device"
    forward = r.flops.phases["forward"]
    assert forward.mfu_measured is not None and forward.mfu_datasheet is None
    assert flops_text.mfu_cell(r, "datasheet") == "unknown device NVIDIA A10G: the measured peak stands in"
    assert any("not in tuimon's peak table" in n for n in flops_text.row_notes(r))


def test_a_precision_the_device_lacks_is_no_datasheet_peak():
    r = row(session("cuda:0", "Tesla T4", "bf16"))
    assert r.flops.peak_lookup == "no-precision" and r.flops.mfu_basis == "measured-no-precision"


def test_mfu_over_100_percent_is_flagged_never_printed_as_a_fact():
    r = row(session(peaks={"fp32": 1.5e12}))  # backward at 2 TFLOP/s over a 1.5 TFLOP/s peak
    assert "backward:measured" in r.flops.mfu_over
    cell = flops_text.mfu_cell(r, "measured")
    assert "over 100 % (the peak does not fit)" in cell and "133 %" not in cell
    assert any("not a measurement" in n for n in flops_text.row_notes(r))
    codes = [f.code for v in diagnose(summarize(session(peaks={"fp32": 1.5e12}))) for f in v.findings]
    assert "flops.over_peak" in codes


def test_no_peak_no_mfu_and_a_failed_count_says_why():
    f = row(session(peaks=None)).flops
    forward = f.phases["forward"]
    assert forward.flop_s is not None and forward.mfu_measured is None and f.mfu_basis is None
    evs = session()
    evs[2] = events.make(events.FLOPS, "eager-fp32", error="ValueError: no batch to spare", peak=None)
    r = row(evs)
    assert not r.flops.counted and r.flops.error == "ValueError: no batch to spare"
    assert flops_text.counts_cell(r) == "not counted: ValueError: no batch to spare"


def test_the_record_is_frozen_and_the_fold_replaces_it():
    r = row(session())
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.flops.step = None


def test_a_combined_variant_counts_once_and_rates_on_its_own_medians():
    evs = []
    for k in (1, 2, 3):
        run = f"eager-fp32-{k}" if k > 1 else "eager-fp32"
        part = phased_events(run, "eager", EAGER, seed=k, replicate=k)
        part.insert(2, flops_event(run))
        evs += part
    s = summarize(evs)
    v = s.variants[0]
    assert v.flops.step.flops == 14e9 and v.flops.phases["forward"].flop_s == pytest.approx(1e12, rel=0.05)


def test_summary_json_has_the_keys_a_plot_reads(tmp_path):
    s = summarize(session("cuda:0", "NVIDIA H100 80GB HBM3", "bf16"))
    doc = json.loads(json.dumps(summary_json.document({}, s), default=str))
    r = doc["runs"][0]
    f = r["flops"]
    for part in (f["step"], *(f["phases"][name] for name in ("forward", "backward", "optimizer"))):
        assert set(part) == {"flops", "flop_s", "mfu_measured", "mfu_datasheet"}
    assert f["peak_measured"] == 4e12 and f["peak_datasheet"] == 989.5e12 and f["mfu_basis"] == "both"
    assert f["precision"] == "bf16" and r["words"]["flops"][0].startswith("eager/fp32: 14 GFLOP")


def test_the_table_and_summary_md_show_flops_and_mfu():
    md = export.to_markdown({}, summarize(session()))
    for name in ("FLOPs a step (eager module)", "achieved FLOP/s (at the medians)",
                 "MFU vs measured peak", "MFU vs datasheet peak"):
        assert f"| {name} |" in md
    assert "## FLOPs and MFU" in md and "14 GFLOP (fwd 6 G · bwd 8 G · opt 0) · fp32" in md


def test_no_flops_rows_in_a_session_that_counted_none():
    md = export.to_markdown({}, summarize(phased_events("eager-fp32", "eager", EAGER, seed=1)))
    assert "FLOP" not in md


def test_why_compute_bound_near_the_measured_peak_far_below_memory_or_launch_bound():
    near = diagnose(summarize(session(peaks={"fp32": 2.1e12})))  # fwd ~48 %, bwd ~95 %
    codes = {f.code: f for v in near for f in v.findings}
    assert "flops.compute_bound" in codes
    assert codes["flops.compute_bound"].what.figures["phases"] == ["backward"]
    assert "flops.lower_precision" in [a.code for a in codes["flops.compute_bound"].advice]
    far = diagnose(summarize(session(peaks={"fp32": 100e12})))  # 1 and 2 % of it
    found = {f.code: f for v in far for f in v.findings}
    assert found["flops.far_below"].what.figures["phases"] == ["forward", "backward"]
    md = export.to_markdown({}, summarize(session(peaks={"fp32": 100e12})))
    assert "far below the measured peak" in md.split("## Why compile did not help")[1]


# ---- the peak table ---------------------------------------------------------------------------
NAMES = {  # names NVML and torch.cuda.get_device_name give -> the table's entry
    "NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H100 NVL": "H100 NVL",
    "NVIDIA H200": "H200 SXM", "NVIDIA H200 NVL": "H200 NVL", "NVIDIA GH200 480GB": "GH200",
    "NVIDIA B200": "B200", "NVIDIA A100-SXM4-80GB": "A100", "NVIDIA A100-PCIE-40GB": "A100",
    "NVIDIA A100 80GB PCIe": "A100", "NVIDIA L4": "L4", "NVIDIA L40S": "L40S", "NVIDIA L40": "L40",
    "NVIDIA A10": "A10", "NVIDIA A40": "A40", "Tesla T4": "T4", "Tesla V100-SXM2-16GB": "V100 SXM2",
    "Tesla V100-PCIE-32GB": "V100 PCIe", "Tesla V100S-PCIE-32GB": "V100S PCIe",
    "NVIDIA GeForce RTX 3090": "RTX 3090", "NVIDIA GeForce RTX 4090": "RTX 4090",
    "NVIDIA GeForce RTX 5090": "RTX 5090", "AMD Instinct MI250X": "MI250X",
    "AMD Instinct MI300X": "MI300X", "AMD Instinct MI300A": "MI300A", "AMD Instinct MI325X": "MI325X",
    "AMD Instinct MI350X": "MI350X", "AMD Instinct MI355X": "MI355X",
}


@pytest.mark.parametrize("name,entry", NAMES.items())
def test_the_table_finds_each_device_by_the_name_it_is_given(name, entry):
    assert find(name)[0] == entry


@pytest.mark.parametrize("name", ["NVIDIA A10G", "NVIDIA GeForce RTX 2080 Ti", "Intel Arc A770", "", None])
def test_a_device_not_in_the_table_is_unknown_never_a_neighbour(name):
    assert find(name) is None
    assert datasheet_peak(name, "bf16")[2] == "unknown-device"


def test_each_entry_is_dense_and_ordered_by_precision():
    for _, name, peaks in TABLE:
        assert set(peaks) <= set(PRECISIONS), name
        # tensor cores: fp16 at least fp32's rate, fp8 twice bf16's where both are given
        assert peaks.get("fp16", peaks["fp32"]) >= peaks["fp32"], name
        if "fp8" in peaks and "bf16" in peaks:
            assert peaks["fp8"] == pytest.approx(2 * peaks["bf16"], rel=0.02), name
    assert datasheet_peak("NVIDIA H100 80GB HBM3", "tf32")[1] == 494.5e12  # not bf16's (torchtitan#668)
    assert datasheet_peak("NVIDIA H100 80GB HBM3", "fp8")[1] == 1979e12  # fp8 counted (torchtitan#560)
    assert datasheet_peak("AMD Instinct MI350X", "bf16")[2] == "found"  # PR #4779's missing row


def test_the_fake_nvmls_devices_get_their_datasheet_lines_in_doctor():
    nv = fake.make([fake.FakeDevice(), fake.FakeDevice(name="NVIDIA A10G", uuid="GPU-b")])
    report = doctor.collect(out="tuimon-sessions", cache=Path("/nonexistent"), nvml=nv,
                            torch={"ok": False, "error": "not asked"})
    lines = dict(doctor.rows(report))
    assert lines["GPU 0 datasheet"].startswith("H100 SXM: fp32 67, tf32 494.5, bf16 989.5")
    assert "not in tuimon's table: MFU uses the measured peak" in lines["GPU 1 datasheet"]
    assert lines["measured peak"] == "n/a: torch could not be asked"


class _Cuda:
    def __init__(self, bf16: bool, capability: tuple) -> None:
        self._bf16, self._cap = bf16, capability

    def is_bf16_supported(self):
        return self._bf16

    def get_device_capability(self, device):
        return self._cap


class _Torch:
    float8_e4m3fn = object()

    def __init__(self, bf16=True, capability=(9, 0)):
        self.cuda = _Cuda(bf16, capability)


def test_the_gemm_benchmark_measures_what_the_device_has():
    assert dtypes_for(_Torch(), "cpu") == ["fp32", "bf16"]
    assert dtypes_for(_Torch(), "cuda:0") == ["fp32", "tf32", "bf16", "fp16", "fp8"]  # an H100
    assert dtypes_for(_Torch(bf16=False, capability=(7, 5)), "cuda:0") == ["fp32", "tf32", "fp16"]  # T4


def test_a_count_that_misses_part_of_the_training_has_no_rate_and_says_why():
    # another optimizer's module outside the counted one (a seq2seq's decoder)
    f = row(session(uncounted=["DecoderRNN"])).flops
    assert f.step.flops == 14e9 and f.uncounted == ("DecoderRNN",)
    assert f.step.flop_s is None and f.phases["forward"].mfu_measured is None
    r = row(session(uncounted=["DecoderRNN"]))
    assert any("also trains DecoderRNN" in n for n in flops_text.row_notes(r))
    assert flops_text.rates_cell(r) == flops_text.DASH


def test_several_models_trained_one_after_another_have_no_rate():
    from tuimon.analysis.stats.flops import flop_rates
    from tuimon.analysis.stats.point import point

    r = row(session())
    doubt = point("trainings", count=3, modules=["StudentCnn", "Teacher"])
    f = flop_rates(dataclasses.replace(r.flops, step=dataclasses.replace(r.flops.step, flop_s=None)),
                   r.timing, r.phases, r.device, r.device_name, [doubt])
    assert f.trainings == ("StudentCnn", "Teacher") and f.step.flop_s is None
    assert "one after another" in " ".join(flops_text.row_notes(dataclasses.replace(r, flops=f)))
