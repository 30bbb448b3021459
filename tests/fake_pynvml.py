"""A fake `pynvml` (nvidia-ml-py 13.x surface used by tuimon.probes.gpu).

`make(devices=[FakeDevice(...)], ...)` returns a fresh module object with the same names,
constants, return shapes and NVMLError hierarchy as the real one (checked against
.venv/.../pynvml.py): NVMLError(code) builds the NVMLError_<Name> subclass, values are ints,
power is in milliwatts, names/UUIDs are str, process entries have .pid/.usedGpuMemory,
utilisation samples have .pid/.timeStamp/.smUtil/.memUtil/.encUtil/.decUtil.
"""

from __future__ import annotations

import types
from collections import Counter
from dataclasses import dataclass, field

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_UNKNOWN = 999

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2

_REASONS = {
    "GpuIdle": 0x1,
    "ApplicationsClocksSetting": 0x2,
    "SwPowerCap": 0x4,
    "HwSlowdown": 0x8,
    "SyncBoost": 0x10,
    "SwThermalSlowdown": 0x20,
    "HwThermalSlowdown": 0x40,
    "HwPowerBrakeSlowdown": 0x80,
    "DisplayClockSetting": 0x100,
    "None": 0x0,
}
_THROTTLE_ONLY = {"BoardLimit": 0x200, "Reliability": 0x400}

_ERROR_TEXT = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}


class NVMLError(Exception):
    _valClassMapping: dict[int, type] = {}

    def __new__(cls, value):
        if cls is NVMLError:
            cls = NVMLError._valClassMapping.get(value, cls)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __str__(self):
        return _ERROR_TEXT.get(self.value, f"NVML Error with code {self.value}")


def _error_class(name: str, code: int) -> type:
    cls = type(name, (NVMLError,), {"__new__": lambda c, *a: NVMLError.__new__(c, code)})
    NVMLError._valClassMapping[code] = cls
    return cls


NVMLError_Uninitialized = _error_class("NVMLError_Uninitialized", NVML_ERROR_UNINITIALIZED)
NVMLError_NotSupported = _error_class("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NoPermission = _error_class("NVMLError_NoPermission", NVML_ERROR_NO_PERMISSION)
NVMLError_NotFound = _error_class("NVMLError_NotFound", NVML_ERROR_NOT_FOUND)
NVMLError_DriverNotLoaded = _error_class("NVMLError_DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_LibraryNotFound = _error_class("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_FunctionNotFound = _error_class(
    "NVMLError_FunctionNotFound", NVML_ERROR_FUNCTION_NOT_FOUND
)
NVMLError_GpuIsLost = _error_class("NVMLError_GpuIsLost", NVML_ERROR_GPU_IS_LOST)
NVMLError_Unknown = _error_class("NVMLError_Unknown", NVML_ERROR_UNKNOWN)


@dataclass
class FakeDevice:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-1111-2222-3333-444444444444"
    util_gpu: int = 87
    util_mem: int = 41
    mem_total: int = 80 * 2**30
    mem_used: int = 20 * 2**30
    temp_c: int = 64
    power_mw: int = 412_345
    power_limit_mw: int = 700_000
    energy_mj: int = 123_456_789  # total energy since the driver loaded; a test advances it
    clock_sm: int = 1980
    clock_mem: int = 2619
    fan: int = 30
    reasons: int = 0
    # (pid, usedGpuMemory bytes or None)
    procs: list[tuple[int, int | None]] = field(default_factory=list)
    # (pid, timeStamp µs, smUtil, memUtil)
    util_samples: list[tuple[int, int, int, int]] = field(default_factory=list)
    # function name -> NVML error code raised when that function is called for this device
    fail: dict[str, int] = field(default_factory=dict)


class _Handle:
    def __init__(self, index: int) -> None:
        self.index = index


def make(
    devices: list[FakeDevice] | None = None,
    *,
    init_error: int | None = None,
    missing: tuple[str, ...] = (),
    fail: dict[str, int] | None = None,
) -> types.ModuleType:
    """A fake pynvml module. init_error: code nvmlInit raises; missing: function names the
    module lacks (an old nvidia-ml-py); fail: function -> error code for every device."""
    devices = list(devices or [])
    fail = dict(fail or {})
    mod = types.ModuleType("fake_pynvml")
    mod.calls = Counter()
    mod.devices = devices
    mod.initialised = 0

    for name, value in globals().items():
        if name.startswith(("NVML_", "NVMLError")):
            setattr(mod, name, value)
    for suffix, bit in _REASONS.items():
        setattr(mod, "nvmlClocksEventReason" + suffix, bit)
        setattr(mod, "nvmlClocksThrottleReason" + suffix, bit)
    for suffix, bit in _THROTTLE_ONLY.items():
        setattr(mod, "nvmlClocksThrottleReason" + suffix, bit)

    def api(fn):
        def wrapper(*args):
            mod.calls[fn.__name__] += 1
            if fn.__name__ not in ("nvmlInit", "nvmlShutdown") and not mod.initialised:
                raise NVMLError(NVML_ERROR_UNINITIALIZED)
            code = fail.get(fn.__name__)
            if code is None and args and isinstance(args[0], _Handle):
                code = devices[args[0].index].fail.get(fn.__name__)
            if code is not None:
                raise NVMLError(code)
            return fn(*args)

        wrapper.__name__ = fn.__name__
        if fn.__name__ not in missing:
            setattr(mod, fn.__name__, wrapper)
        return wrapper

    def dev(h: _Handle) -> FakeDevice:
        return devices[h.index]

    @api
    def nvmlInit():
        if init_error is not None:
            raise NVMLError(init_error)
        mod.initialised += 1

    @api
    def nvmlShutdown():
        mod.initialised -= 1

    @api
    def nvmlDeviceGetCount():
        return len(devices)

    @api
    def nvmlDeviceGetHandleByIndex(index):
        if not 0 <= index < len(devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return _Handle(index)

    @api
    def nvmlDeviceGetName(h):
        return dev(h).name

    @api
    def nvmlDeviceGetUUID(h):
        return dev(h).uuid

    @api
    def nvmlDeviceGetUtilizationRates(h):
        return types.SimpleNamespace(gpu=dev(h).util_gpu, memory=dev(h).util_mem)

    @api
    def nvmlDeviceGetMemoryInfo(h, version=None):
        d = dev(h)
        return types.SimpleNamespace(
            total=d.mem_total, used=d.mem_used, free=d.mem_total - d.mem_used
        )

    @api
    def nvmlDeviceGetTemperature(h, sensor):
        if sensor != NVML_TEMPERATURE_GPU:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return dev(h).temp_c

    @api
    def nvmlDeviceGetPowerUsage(h):
        return dev(h).power_mw

    @api
    def nvmlDeviceGetTotalEnergyConsumption(h):
        return dev(h).energy_mj

    @api
    def nvmlDeviceGetEnforcedPowerLimit(h):
        return dev(h).power_limit_mw

    @api
    def nvmlDeviceGetClockInfo(h, kind):
        return {NVML_CLOCK_SM: dev(h).clock_sm, NVML_CLOCK_MEM: dev(h).clock_mem}[kind]

    @api
    def nvmlDeviceGetFanSpeed(h):
        return dev(h).fan

    @api
    def nvmlDeviceGetCurrentClocksEventReasons(h):
        return dev(h).reasons

    @api
    def nvmlDeviceGetCurrentClocksThrottleReasons(h):
        return dev(h).reasons

    @api
    def nvmlDeviceGetComputeRunningProcesses(h):
        return [
            types.SimpleNamespace(
                pid=pid, usedGpuMemory=mem, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF
            )
            for pid, mem in dev(h).procs
        ]

    @api
    def nvmlDeviceGetProcessUtilization(h, timeStamp):
        rows = [
            types.SimpleNamespace(
                pid=pid, timeStamp=ts, smUtil=sm, memUtil=mu, encUtil=0, decUtil=0
            )
            for pid, ts, sm, mu in dev(h).util_samples
            if ts > timeStamp
        ]
        if not rows:  # the real call reports "no samples newer than timeStamp" this way
            raise NVMLError(NVML_ERROR_NOT_FOUND)
        return rows

    return mod
