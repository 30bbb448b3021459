"""The words of how close a phase comes to the measured peak (analysis/why/flops.py):
compute-bound, far below (memory- or launch-bound), an MFU over 100 %."""

from __future__ import annotations

from tuimon.fmt import fmt_flops
from tuimon.report.flops_text import fmt_mfu

WORDS = {
    "flops.over_peak": lambda f: ("MFU over 100 % (" + ", ".join(x.replace(":", " vs ") for x in f["over"])
                                  + "): the peak does not fit this run, the figure is not a measurement"),
    "flops.check_peak": lambda f: ("check the device and precision the peak is for (tuimon doctor "
                                   "shows the measured one); a wrong datasheet entry reads this way"),
    "flops.compute_bound": lambda f: (f"compute-bound: {' and '.join(f['phases'])} near this machine's "
                                      "measured GEMM peak"),
    "flops.phase_use": lambda f: (f"{f['label']}'s {f['name']}: {fmt_flops(f['flop_s'], 'FLOP/s')}, "
                                  f"{fmt_mfu(f['mfu'], f['over'])} of the measured {f['precision']} peak "
                                  f"({fmt_flops(f['peak'], 'FLOP/s')})"),
    "flops.lower_precision": lambda f: (f"fewer bits a FLOP: --precision amp (bf16/fp16 autocast) "
                                        f"instead of {f['precision']}" + (", or allow TF32 "
                                        "(torch.set_float32_matmul_precision('high')) on a GPU"
                                        if f["precision"] == "fp32" else "")),
    "flops.max_autotune": lambda f: "better kernels for the same FLOPs: race --modes max-autotune",
    "flops.far_below": lambda f: (f"{' and '.join(f['phases'])} far below the measured peak: the time "
                                  "goes to memory traffic (element-wise ops, norms, copies) or to "
                                  "launching kernels, not to matmuls"),
    "flops.fuse": lambda f: ("torch.compile fuses element-wise ops into fewer passes over memory: "
                             "race a compiled mode"),
    "flops.launches": lambda f: ("fewer, larger kernels: " + ("mode reduce-overhead (CUDA graphs), "
                                                              if f["reduce_overhead"] else "")
                                 + "fewer Python-side ops a step"),
    "flops.batch": lambda f: "a larger batch gives each kernel more work per byte moved and per launch",
}
