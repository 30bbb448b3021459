"""GPU probe over NVML (nvidia-ml-py, `import pynvml`), in nvitop's "N/A, never raise" style.

Every NVML query goes through `GpuProbe._query`, which turns any exception into None. A
query that the device cannot answer (NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND, or a
function missing from an old pynvml) is added to `probe.unsupported` once, listed once in
the sample's "unsupported_new", and not asked of that device again. Other errors (GPU lost,
timeout, ...) give None for that sample only and are listed in "errors".

No driver / no library / no GPU: `probe.available` is False, `probe.reason` says why in one
line, and `sample()` still returns the dict below with no devices.

`GpuProbe(nvml=None).sample({run_id: [pid, ...], ...})` returns (JSON-serialisable):

    {
      "t": float,                       # wall clock (time.time())
      "available": bool,
      "reason": str | None,             # why not available
      "unsupported_new": [str, ...],    # metric names that became n/a in this sample
      "errors": {metric: str},          # transient failures in this sample
      "devices": [
        {
          "index": int, "name": str | None, "uuid": str | None,
          "util_gpu": int | None,        # %, kernel busy time
          "util_mem": int | None,        # %, memory-controller busy time
          "mem_used": int | None, "mem_total": int | None,   # bytes
          "temp_c": int | None,
          "power_w": float | None, "power_limit_w": float | None,  # draw, enforced limit
          "energy_mj": int | None,       # total energy since the driver loaded (Volta+), mJ
          "clock_sm_mhz": int | None, "clock_mem_mhz": int | None,
          "fan_percent": int | None,
          "throttle_mask": int | None,   # raw clocks-event/throttle bit mask
          "throttle_reasons": [str, ...] | None,  # decoded, see REASON_BITS ("idle" included)
          "foreign": {"pids": [int], "gpu_mem": int | None, "sm_util": int | None} | None,
                                         # processes on it that are none of the runs' (None: not asked)
        },
      ],
      "runs": {
        run_id: {
          "gpu_mem": int | None,         # bytes used by the run's pids, all devices
          "sm_util": int | None,         # % SM, summed over devices, last sampling window
          "per_device": [{"index": int, "gpu_mem": int | None, "sm_util": int | None,
                          "mem_util": int | None}],  # only devices the run is on
        },
      },
    }

Metric names used in "unsupported"/"errors": device_count, handle, name, uuid, util (both
util_* keys), memory (mem_*), temp_c, power_w, power_limit_w, energy_mj, clock_sm_mhz, clock_mem_mhz,
fan_percent, throttle_reasons, process_mem, process_util (the per-run values).

A run's numbers are None when no device answered for it; a run with no process on any GPU
gets gpu_mem 0 / sm_util None. NVML reports host pids: inside a container with its own pid
namespace they do not match the runner's pids (nvitop has the same limit).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Any

# (bit, name, pynvml suffix) -- the suffix is looked up as nvmlClocksEventReason<suffix>, then
# nvmlClocksThrottleReason<suffix>; the bit is a fallback for an injected module without it.
REASON_BITS: tuple[tuple[int, str, str], ...] = (
    (0x001, "idle", "GpuIdle"),
    (0x002, "applications_clocks_setting", "ApplicationsClocksSetting"),
    (0x004, "sw_power_cap", "SwPowerCap"),
    (0x008, "hw_slowdown", "HwSlowdown"),
    (0x010, "sync_boost", "SyncBoost"),
    (0x020, "sw_thermal_slowdown", "SwThermalSlowdown"),
    (0x040, "hw_thermal_slowdown", "HwThermalSlowdown"),
    (0x080, "hw_power_brake_slowdown", "HwPowerBrakeSlowdown"),
    (0x100, "display_clocks_setting", "DisplayClockSetting"),
    (0x200, "board_limit", "BoardLimit"),
    (0x400, "reliability", "Reliability"),
)

# Error codes that mean "this device will never answer this" rather than "not now".
_NOT_SUPPORTED = {3: "not supported", 4: "no permission", 13: "function not found"}
_NOT_FOUND = 6
_WINDOW_US = 1_000_000  # first per-process utilisation window: the last second


def reason_table(nvml: Any = None) -> list[tuple[int, str]]:
    """(bit, name) pairs, bits taken from the nvml module where it defines them."""
    table = []
    for bit, name, suffix in REASON_BITS:
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            value = getattr(nvml, prefix + suffix, None) if nvml is not None else None
            if isinstance(value, int):
                bit = value
                break
        table.append((bit, name))
    return table


def decode_reasons(
    mask: int | None, table: list[tuple[int, str]] | None = None
) -> list[str] | None:
    """Names of the bits set in a clocks-event mask; unknown bits as "unknown_0x..."."""
    if mask is None:
        return None
    table = table or reason_table()
    names, known = [], 0
    for bit, name in table:
        known |= bit
        if mask & bit:
            names.append(name)
    if mask & ~known:
        names.append(f"unknown_{mask & ~known:#x}")
    return names


def map_visible_devices(value: str | None, devices: list[dict]) -> list[int]:
    """NVML indices that CUDA_VISIBLE_DEVICES=value exposes, in CUDA order.

    devices: [{"index": int, "uuid": str}, ...] (e.g. `GpuProbe.devices`). Entries are
    ordinals, full UUIDs or unique UUID prefixes, with or without "GPU-". Like CUDA, parsing
    stops at the first entry that is invalid, unknown, ambiguous or repeated; MIG entries
    stop it too (not resolved here). value None means every device. Ordinals are taken as
    NVML (PCI bus) order: set CUDA_DEVICE_ORDER=PCI_BUS_ID for runs, or pin by UUID.
    """
    if value is None:
        return [d["index"] for d in devices]
    out: list[int] = []
    for raw in value.split(","):
        entry = raw.strip()
        index = _resolve(entry, devices)
        if index is None or index in out:
            break
        out.append(index)
    return out


def _resolve(entry: str, devices: list[dict]) -> int | None:
    if not entry:
        return None
    if entry.isdigit():
        ordinal = int(entry)
        return devices[ordinal]["index"] if ordinal < len(devices) else None
    if entry.startswith("MIG-") or entry[0] in "+-":
        return None
    key = entry[4:] if entry.upper().startswith("GPU-") else entry
    hits = []
    for d in devices:
        uuid = d.get("uuid") or ""
        bare = uuid[4:] if uuid.upper().startswith("GPU-") else uuid
        if key and bare.lower().startswith(key.lower()):
            hits.append(d["index"])
    return hits[0] if len(hits) == 1 else None


class GpuProbe:
    """NVML sampler; `nvml` is the pynvml module (injectable for tests)."""

    def __init__(self, nvml: Any = None) -> None:
        self.available = False
        self.reason: str | None = None
        self.unsupported: set[str] = set()
        self.devices: list[dict] = []  # [{"index", "name", "uuid"}]
        self._handles: list[Any] = []
        self._skip: set[tuple[int, str]] = set()  # (device index, metric)
        self._new_unsupported: list[str] = []
        self._errors: dict[str, str] = {}
        self._last_ts: dict[int, int] = {}  # per device, µs, process-utilisation window
        self._foreign: dict[int, dict | None] = {}  # per device: other processes than the runs'
        self._nvml = nvml
        self._inited = False
        if nvml is None:
            try:
                import pynvml  # lazy: the UI process may never need it
            except Exception as exc:  # ImportError, or a broken install
                self.reason = f"nvidia-ml-py not importable: {_err_text(exc)}"
                return
            self._nvml = nvml = pynvml
        self._reasons = reason_table(nvml)
        try:
            nvml.nvmlInit()
        except Exception as exc:  # no library, no driver, driver/library mismatch
            self.reason = f"NVML unavailable: {_err_text(exc)}"
            return
        self._inited = True
        count = self._query(-1, "device_count", "nvmlDeviceGetCount")
        if not count:
            self.reason = "no NVIDIA GPU found" if count == 0 else "NVML device count failed"
            return
        for i in range(count):
            handle = self._query(i, "handle", "nvmlDeviceGetHandleByIndex", i)
            self._handles.append(handle)
            self.devices.append(
                {
                    "index": i,
                    "name": _text(self._query(i, "name", "nvmlDeviceGetName", handle)),
                    "uuid": _text(self._query(i, "uuid", "nvmlDeviceGetUUID", handle)),
                }
            )
        self.available = True  # anything found unsupported so far is said in the 1st sample

    def _query(self, index: int, metric: str, fn_name: str, *args: Any) -> Any:
        """The one door to NVML: any failure becomes None, never an exception."""
        if (index, metric) in self._skip:
            return None
        fn = getattr(self._nvml, fn_name, None)
        if fn is None:
            self._mark_unsupported(index, metric)
            return None
        if index >= 0 and args and args[0] is None:  # device handle failed earlier
            return None
        try:
            return fn(*args)
        except Exception as exc:
            code = getattr(exc, "value", None)
            if code == _NOT_FOUND and metric == "process_util":
                return ()  # "no samples newer than the timestamp": idle, not a fault
            if code in _NOT_SUPPORTED:
                self._mark_unsupported(index, metric)
            else:
                self._errors[metric] = _err_text(exc)
            return None

    def _mark_unsupported(self, index: int, metric: str) -> None:
        self._skip.add((index, metric))
        if metric not in self.unsupported:
            self.unsupported.add(metric)
            self._new_unsupported.append(metric)

    def sample(self, pids_of: dict[str, Iterable[int]] | None = None) -> dict:
        runs = {rid: set(pids) for rid, pids in (pids_of or {}).items()}
        self._errors = {}
        devices = []
        per_run: dict[str, list[dict]] = {rid: [] for rid in runs}
        answered: dict[str, bool] = {rid: False for rid in runs}
        if self.available:
            for info, handle in zip(self.devices, self._handles, strict=True):
                devices.append(self._device(info, handle))
                self._foreign[info["index"]] = None
                self._attribute(info["index"], handle, runs, per_run, answered)
                devices[-1]["foreign"] = self._foreign[info["index"]]
        out_runs = {}
        for rid in runs:
            rows = per_run[rid]
            mems = [r["gpu_mem"] for r in rows if r["gpu_mem"] is not None]
            sms = [r["sm_util"] for r in rows if r["sm_util"] is not None]
            out_runs[rid] = {
                "gpu_mem": sum(mems) if mems or answered[rid] else None,
                "sm_util": sum(sms) if sms else None,
                "per_device": rows,
            }
        new, self._new_unsupported = self._new_unsupported, []
        return {
            "t": time.time(),
            "available": self.available,
            "reason": self.reason,
            "unsupported_new": sorted(new),
            "errors": dict(self._errors),
            "devices": devices,
            "runs": out_runs,
        }

    def _device(self, info: dict, h: Any) -> dict:
        i, q, nv = info["index"], self._query, self._nvml
        util = q(i, "util", "nvmlDeviceGetUtilizationRates", h)
        mem = q(i, "memory", "nvmlDeviceGetMemoryInfo", h)
        power = q(i, "power_w", "nvmlDeviceGetPowerUsage", h)  # milliwatts
        limit = q(i, "power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", h)
        if hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons"):
            mask = q(i, "throttle_reasons", "nvmlDeviceGetCurrentClocksEventReasons", h)
        else:  # nvidia-ml-py before 12.535 only has the old name
            mask = q(i, "throttle_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons", h)
        return {
            "index": i,
            "name": info["name"],
            "uuid": info["uuid"],
            "util_gpu": _int(getattr(util, "gpu", None)),
            "util_mem": _int(getattr(util, "memory", None)),
            "mem_used": _int(getattr(mem, "used", None)),
            "mem_total": _int(getattr(mem, "total", None)),
            "temp_c": _int(
                q(
                    i,
                    "temp_c",
                    "nvmlDeviceGetTemperature",
                    h,
                    getattr(nv, "NVML_TEMPERATURE_GPU", 0),
                )
            ),
            "power_w": None if power is None else round(power / 1000, 1),
            "power_limit_w": None if limit is None else round(limit / 1000, 1),
            "energy_mj": _int(q(i, "energy_mj", "nvmlDeviceGetTotalEnergyConsumption", h)),
            "clock_sm_mhz": _int(
                q(i, "clock_sm_mhz", "nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1))
            ),
            "clock_mem_mhz": _int(
                q(i, "clock_mem_mhz", "nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_MEM", 2))
            ),
            "fan_percent": _int(q(i, "fan_percent", "nvmlDeviceGetFanSpeed", h)),
            "throttle_mask": _int(mask),
            "throttle_reasons": decode_reasons(_int(mask), self._reasons),
        }

    def _attribute(
        self,
        i: int,
        h: Any,
        runs: dict[str, set[int]],
        per_run: dict[str, list[dict]],
        answered: dict[str, bool],
    ) -> None:
        """Memory (compute processes) and SM % (process utilisation) of each run's pids."""
        if not runs:
            return
        procs = self._query(i, "process_mem", "nvmlDeviceGetComputeRunningProcesses", h)
        now_us = int(time.time() * 1e6)
        since = self._last_ts.get(i, now_us - _WINDOW_US)
        samples = self._query(i, "process_util", "nvmlDeviceGetProcessUtilization", h, since)
        if samples:
            self._last_ts[i] = max(int(s.timeStamp) for s in samples)
        elif samples is not None:
            self._last_ts.setdefault(i, since)
        mem_by_pid: dict[int, int | None] = {}
        for p in procs or ():
            used = getattr(p, "usedGpuMemory", None)  # None under WDDM
            mem_by_pid[p.pid] = (mem_by_pid.get(p.pid) or 0) + used if used is not None else None
        util_by_pid: dict[int, list[tuple[int, int]]] = {}
        for s in samples or ():
            util_by_pid.setdefault(s.pid, []).append((int(s.smUtil), int(s.memUtil)))
        self._foreign[i] = _foreign(mem_by_pid, util_by_pid, set().union(*runs.values()))
        for rid, pids in runs.items():
            if procs is not None:
                answered[rid] = True
            on_device = pids & (mem_by_pid.keys() | util_by_pid.keys())
            if not on_device:
                continue
            mems = [mem_by_pid[p] for p in on_device if mem_by_pid.get(p) is not None]
            sm = mu = None
            if samples is not None:  # mean per pid over the window, summed over the run's pids
                sm = mu = 0
                for p in on_device:
                    vals = util_by_pid.get(p)
                    if vals:
                        sm += round(sum(v[0] for v in vals) / len(vals))
                        mu += round(sum(v[1] for v in vals) / len(vals))
                sm, mu = min(sm, 100), min(mu, 100)
            per_run[rid].append(
                {"index": i, "gpu_mem": sum(mems) if mems else None, "sm_util": sm, "mem_util": mu}
            )

    def visible_indices(self, cuda_visible_devices: str | None) -> list[int]:
        return map_visible_devices(cuda_visible_devices, self.devices)

    def __enter__(self) -> GpuProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._inited:
            self._inited = False
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()


def _foreign(mem_by_pid: dict, util_by_pid: dict, ours: set[int]) -> dict:
    """The processes on a device that are none of the session's runs (a noisy neighbour):
    their pids, memory and summed SM % (None where NVML did not say)."""
    pids = sorted((mem_by_pid.keys() | util_by_pid.keys()) - ours)
    mems = [mem_by_pid[p] for p in pids if mem_by_pid.get(p) is not None]
    sms = [round(sum(v[0] for v in util_by_pid[p]) / len(util_by_pid[p])) for p in pids
           if util_by_pid.get(p)]
    return {"pids": pids, "gpu_mem": sum(mems) if mems else (0 if not pids else None),
            "sm_util": min(sum(sms), 100) if sms else (0 if not pids else None)}


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):  # old pynvml returned bytes
        return value.decode(errors="replace")
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _err_text(exc: BaseException) -> str:
    try:
        text = str(exc).strip()
    except Exception:  # pynvml's __str__ may itself call into a missing library
        text = ""
    return text.splitlines()[0] if text else type(exc).__name__
