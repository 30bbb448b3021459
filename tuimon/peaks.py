"""Datasheet dense peaks of common data-centre and desktop GPUs, by precision, and their lookup by
the device name NVML or torch gives (``torch.cuda.get_device_name``: "NVIDIA H100 80GB HBM3",
"NVIDIA A100-SXM4-80GB", "Tesla T4", "AMD Instinct MI300X", ...). A leaf: no torch, no tuimon.

Every figure is the vendor's *dense* peak in TFLOP/s (no 2:4 structured sparsity: where a sheet
gives "X/Y" or "Y*" with sparsity, the dense X is taken; where it gives only the sparse figure,
half of it), for the whole GPU, at its boost clock. Tensor-core figures for fp16/bf16/fp8 are
with fp32 accumulation where a sheet tells the two apart (GeForce cards run fp16 with fp32
accumulation at half the fp16-accumulate rate; PyTorch's matmuls accumulate in fp32). "fp32" is
the non-tensor-core rate (AMD's: the matrix-core fp32 rate, which rocBLAS uses for fp32 GEMMs),
"tf32" the tensor-core rate fp32 matmuls get when TF32 is allowed. A precision a device lacks
(bf16 on a T4, fp8 before Ada/Hopper/CDNA3) is absent: the lookup says so, and MFU falls back to
the measured peak (analysis/stats/flops.py).

A device missing here is not guessed from a neighbour (PR #4779's ~152 % MFU came from exactly
that): it is "unknown", and the measured peak stands alone.
"""

from __future__ import annotations

import re

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")
TERA = 1e12

# (pattern over the lower-cased name, the device's name here, {precision: dense TFLOP/s}).
# The most specific pattern first: "h100 ... pcie" before "h100", "v100s" before "v100",
# "l40s" before "l40"; \b keeps "a10" off "a100" and "h200" off "gh200".
TABLE: tuple[tuple[str, str, dict[str, float]], ...] = (
    # NVIDIA A100 Tensor Core GPU datasheet (2021, 1034023): FP32 19.5, TF32 156, BF16/FP16 312
    # (dense; 312/624/624 are with sparsity). SXM and PCIe (40 and 80 GB) share the figures.
    (r"\ba100\b", "A100", {"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}),
    # NVIDIA H100 datasheet (2023, 2430615): H100 PCIe FP32 51, TF32 756*, BF16/FP16 1513*,
    # FP8 3026* (* with sparsity: dense is half).
    (r"\bh100\b.*\bpcie\b", "H100 PCIe", {"fp32": 51, "tf32": 378, "bf16": 756.5, "fp16": 756.5,
                                          "fp8": 1513}),
    # Same sheet, H100 NVL (per GPU): FP32 60, TF32 835*, BF16/FP16 1671*, FP8 3341*.
    (r"\bh100\b.*\bnvl\b", "H100 NVL", {"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5,
                                        "fp8": 1670.5}),
    # Same sheet, H100 SXM (NVML: "NVIDIA H100 80GB HBM3"): FP32 67, TF32 989*, BF16/FP16 1979*,
    # FP8 3958*.
    (r"\bh100\b", "H100 SXM", {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5,
                               "fp8": 1979}),
    # NVIDIA H200 datasheet (2024): H200 NVL FP32 60, TF32 835*, BF16/FP16 1671*, FP8 3341*.
    (r"\bh200\b.*\bnvl\b", "H200 NVL", {"fp32": 60, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5,
                                        "fp8": 1670.5}),
    # Same sheet, H200 SXM: FP32 67, TF32 989*, BF16/FP16 1979*, FP8 3958* (H100 SXM's compute).
    (r"\bh200\b", "H200 SXM", {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5,
                               "fp8": 1979}),
    # NVIDIA GH200 Grace Hopper datasheet (2024): the Hopper GPU's FP32 67, TF32 494 (dense),
    # BF16/FP16 990, FP8 1979.
    (r"\bgh200\b", "GH200", {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979}),
    # NVIDIA HGX B200 (DGX B200 datasheet, 2024, per GPU of 8): FP32 75, TF32 2.2 PF*, BF16/FP16
    # 4.5 PF*, FP8 9 PF* (dense: half).
    (r"\bb200\b", "B200", {"fp32": 75, "tf32": 1100, "bf16": 2250, "fp16": 2250, "fp8": 4500}),
    # NVIDIA L40S datasheet (2023): FP32 91.6, TF32 366*, BF16/FP16 733*, FP8 1466*.
    (r"\bl40s\b", "L40S", {"fp32": 91.6, "tf32": 183, "bf16": 362.05, "fp16": 362.05,
                           "fp8": 733}),
    # NVIDIA L40 datasheet (2022): FP32 90.5, TF32 181*, BF16/FP16 362.1*, FP8 724*.
    (r"\bl40\b", "L40", {"fp32": 90.5, "tf32": 90.5, "bf16": 181, "fp16": 181, "fp8": 362}),
    # NVIDIA L4 datasheet (2023): FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485*.
    (r"\bl4\b", "L4", {"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5}),
    # NVIDIA A40 datasheet (2020): FP32 37.4, TF32 74.8 (149.6*), BF16/FP16 149.7 (299.4*).
    (r"\ba40\b", "A40", {"fp32": 37.4, "tf32": 74.8, "bf16": 149.7, "fp16": 149.7}),
    # NVIDIA A10 datasheet (2021): FP32 31.2, TF32 62.5 (125*), BF16/FP16 125 (250*). The A10G
    # (AWS) has no public sheet: not here (unknown, measured peak).
    (r"\ba10\b", "A10", {"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125}),
    # NVIDIA T4 datasheet (2019): FP32 8.1, mixed-precision FP16 65; no bf16 or tf32 (Turing).
    (r"\bt4\b", "T4", {"fp32": 8.1, "fp16": 65}),
    # NVIDIA V100 datasheet (2020): V100S PCIe FP32 16.4, tensor FP16 130.
    (r"\bv100s\b", "V100S PCIe", {"fp32": 16.4, "fp16": 130}),
    # Same sheet: V100 PCIe FP32 14, tensor 112; V100 SXM2 FP32 15.7, tensor 125.
    (r"\bv100\b.*\bpcie\b", "V100 PCIe", {"fp32": 14, "fp16": 112}),
    (r"\bv100\b", "V100 SXM2", {"fp32": 15.7, "fp16": 125}),
    # NVIDIA Ampere GA102 architecture whitepaper (v2.0), RTX 3090: FP32 35.6, TF32 35.6 (71*),
    # FP16 and BF16 tensor with FP32 accumulate 71 (142*).
    (r"\brtx 3090\b", "RTX 3090", {"fp32": 35.6, "tf32": 35.6, "bf16": 71, "fp16": 71}),
    # NVIDIA Ada GPU architecture whitepaper (v2.1), RTX 4090: FP32 82.6, TF32 82.6 (165.2*),
    # FP16/BF16 tensor with FP32 accumulate 165.2 (330.4*), FP8 with FP32 accumulate 330.3 (660.6*).
    (r"\brtx 4090\b", "RTX 4090", {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2,
                                   "fp8": 330.3}),
    # NVIDIA RTX Blackwell GPU architecture whitepaper (v1.0, 2025), RTX 5090: FP32 104.8, TF32
    # 104.8 (209.5*), FP16/BF16 tensor with FP32 accumulate 209.5 (419*), FP8 with FP32
    # accumulate 419 (838*).
    (r"\brtx 5090\b", "RTX 5090", {"fp32": 104.8, "tf32": 104.8, "bf16": 209.5, "fp16": 209.5,
                                   "fp8": 419}),
    # AMD Instinct MI250X data sheet: FP32 matrix 95.7, FP16/BF16 383; no tf32, no fp8.
    (r"\bmi250x\b", "MI250X", {"fp32": 95.7, "bf16": 383, "fp16": 383}),
    # AMD Instinct MI300A data sheet: FP32 matrix 122.6, TF32 490.3, FP16/BF16 980.6, FP8 1961.2
    # (dense; the sheet's sparsity figures are twice these).
    (r"\bmi300a\b", "MI300A", {"fp32": 122.6, "tf32": 490.3, "bf16": 980.6, "fp16": 980.6,
                               "fp8": 1961.2}),
    # AMD Instinct MI300X data sheet: FP32 matrix 163.4, TF32 653.7, FP16/BF16 1307.4, FP8 2614.9.
    (r"\bmi300x\b", "MI300X", {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4,
                               "fp8": 2614.9}),
    # AMD Instinct MI325X data sheet: the MI300X's compute (FP32 163.4 ... FP8 2614.9).
    (r"\bmi325x\b", "MI325X", {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4,
                               "fp8": 2614.9}),
    # AMD Instinct MI355X data sheet (2025): FP32 157.3, FP16/BF16 2516.6, FP8 5033.2 (dense); no
    # tf32 (CDNA 4 dropped it).
    (r"\bmi355x\b", "MI355X", {"fp32": 157.3, "bf16": 2516.6, "fp16": 2516.6, "fp8": 5033.2}),
    # AMD Instinct MI350X data sheet (2025): FP32 144.2, FP16/BF16 2306.9, FP8 4613.7 (dense).
    (r"\bmi350x\b", "MI350X", {"fp32": 144.2, "bf16": 2306.9, "fp16": 2306.9, "fp8": 4613.7}),
)
_COMPILED = tuple((re.compile(p), name, peaks) for p, name, peaks in TABLE)


def normalise(device_name: str) -> str:
    """Lower case, '-' and '_' as spaces, "geforce rtx3090" as "rtx 3090", runs of spaces as one."""
    text = re.sub(r"[-_/]+", " ", device_name.lower())
    text = re.sub(r"\brtx(\d)", r"rtx \1", text)
    return re.sub(r"\s+", " ", text).strip()


def find(device_name: str | None) -> tuple[str, dict[str, float]] | None:
    """(the table's name, its peaks in TFLOP/s) for a device name; None when it is not here."""
    if not device_name:
        return None
    text = normalise(device_name)
    for pattern, name, peaks in _COMPILED:
        if pattern.search(text):
            return name, peaks
    return None


def datasheet_peak(device_name: str | None, precision: str | None) -> tuple[str | None, float | None, str]:
    """(the device as the table names it, its dense peak in FLOP/s, what the lookup found):
    ``found``; ``unknown-device`` (not in the table); ``no-precision`` (the device is here,
    that precision is not: a T4's bf16); ``no-precision-known`` (nothing counted)."""
    hit = find(device_name)
    if hit is None:
        return None, None, "unknown-device"
    name, peaks = hit
    if not precision:
        return name, None, "no-precision-known"
    tflops = peaks.get(precision)
    if tflops is None:
        return name, None, "no-precision"
    return name, tflops * TERA, "found"
