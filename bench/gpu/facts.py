"""The machine as the GPU programme saw it: python3 bench/gpu/facts.py [--json PATH]

nvidia-smi's view of each GPU (name, driver, memory, power limit, clocks), torch's (version, CUDA,
cuDNN, devices), Triton, Python, cores, and the version and place of each package tuimon needs,
so a reader sees whether the carried wheels (/tmp/site) or the machine's own were imported.
Works without a GPU (the dry run): what is missing says so.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import platform
import shutil
import subprocess
import sys

SMI_FIELDS = ("index", "name", "driver_version", "memory.total", "power.limit", "clocks.max.sm",
              "clocks.max.mem", "compute_cap", "pci.bus_id")
PACKAGES = ("torch", "torchvision", "triton", "timm", "textual", "textual-serve", "rich", "psutil",
            "nvidia-ml-py", "pytest", "pytest-asyncio", "pytest-timeout", "pytest-xdist", "syrupy")


def smi() -> dict:
    if shutil.which("nvidia-smi") is None:
        return {"error": "nvidia-smi not on PATH"}
    got = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=60)
    if got.returncode != 0:
        return {"error": (got.stderr or got.stdout).strip()[:300]}
    gpus = [dict(zip(SMI_FIELDS, (v.strip() for v in line.split(",")), strict=False))
            for line in got.stdout.strip().splitlines()]
    return {"gpus": gpus}


def cudnn_text(v: int | None) -> str | None:
    """cuDNN 9 packs major*10000 + minor*100 + patch, cuDNN 8 major*1000 + minor*100 + patch."""
    if v is None:
        return None
    major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def torch_facts() -> dict:
    try:
        import torch
    except Exception as exc:
        return {"error": f"import torch failed: {type(exc).__name__}: {exc}"}
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    out = {"version": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn_text(cudnn),
           "available": torch.cuda.is_available(), "device_count": 0, "devices": []}
    if out["available"]:
        out["device_count"] = torch.cuda.device_count()
        for i in range(out["device_count"]):
            p = torch.cuda.get_device_properties(i)
            out["devices"].append({"name": p.name, "memory": p.total_memory,
                                   "capability": f"{p.major}.{p.minor}", "sms": p.multi_processor_count})
        out["bf16"] = torch.cuda.is_bf16_supported()
    return out


def packages() -> dict:
    found = {}
    for name in PACKAGES:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            found[name] = None
            continue
        found[name] = {"version": dist.version, "at": str(dist.locate_file(""))}
    return found


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--json", help="write the facts here (else print them)")
    a = p.parse_args()
    facts = {"python": platform.python_version(), "executable": sys.executable,
             "platform": platform.platform(), "cpus": os.cpu_count(),
             "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
             "nvidia_smi": smi(), "torch": torch_facts(), "packages": packages()}
    text = json.dumps(facts, indent=1)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
