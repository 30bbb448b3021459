"""``python -m tuimon.runner.device_facts --device D``: what ``tuimon sweep`` must know before it
plans — the device a run would train on, and whether autocast (amp) works there — as one JSON
line, asked of a child so the sweep's process never imports torch. A variant that cannot run
here is then skipped with the reason instead of failing (cli/sweep.py)."""

from __future__ import annotations

import argparse
import json

from tuimon.settings import DEVICE


def device_facts(requested: str) -> dict:
    try:
        import torch

        from tuimon.runner.device import SetupError, resolve_device
    except Exception as exc:  # a broken install: the runs would fail the same way
        return {"ok": False, "error": f"import torch failed: {type(exc).__name__}: {exc}"}
    try:
        device = resolve_device(torch, requested)
    except SetupError as exc:
        return {"ok": False, "error": str(exc)}
    on_cuda = device.startswith("cuda")
    dtype = torch.bfloat16
    if on_cuda and not torch.cuda.is_bf16_supported():
        dtype = torch.float16  # the runner's choice too (runner/trainer.py amp_dtype)
    facts = {"ok": True, "device": device, "cuda": on_cuda, "torch": torch.__version__,
             "amp_dtype": str(dtype).replace("torch.", ""), "amp_ok": True, "amp_error": None}
    try:  # one tiny autocast step, forward and backward, as a run would take it
        layer = torch.nn.Linear(8, 8).to(device)
        with torch.autocast(device_type="cuda" if on_cuda else "cpu", dtype=dtype):
            out = layer(torch.randn(4, 8, device=device))
        out.float().sum().backward()
    except Exception as exc:  # noqa: BLE001 - whatever autocast raises here, it raises in a run
        text = str(exc).strip().splitlines()
        facts.update(amp_ok=False, amp_error=f"{type(exc).__name__}: {text[0] if text else ''}"[:200])
    return facts


if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m tuimon.runner.device_facts")
    p.add_argument("--device", default=DEVICE)
    print(json.dumps(device_facts(p.parse_args().device)))
