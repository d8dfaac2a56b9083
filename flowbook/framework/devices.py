"""Devices: where an op's kernel runs, and the array module it runs with.

A :class:`Device` is small: a canonical name (``"/device:GPU:0"``), its
``xp`` (numpy on the CPU, CuPy on a GPU), copies to and from the host,
``synchronize``, and what a run needs to time and free its work there:

- ``timer()``: stamps around the kernels of one timed run, read after the
  run (CUDA events on a GPU, so an asynchronous launch is not mistaken for
  the kernel); None on the CPU, whose kernels the executor times itself;
- ``is_out_of_memory(exc)`` and ``release_memory()``: a run that exhausts
  the device raises ``ResourceExhaustedError``, its buffers are dropped and
  the device's cached blocks handed back, so the session stays usable.

**Which devices exist.**  ``local_devices(config)``: the CPU, then the GPUs
CuPy finds (``flowbook.runtime.gpu``: looked for once per process, on the first
session that places ops; CuPy is an optional extra and flowbook runs
without it), then devices registered at run time with
:func:`register_device` (the simulated GPU of ``flowbook.runtime.gpu_sim``, for
tests and for notebooks on machines without one).  ``ConfigProto``'s
``device_count={"GPU": n}`` and ``gpu_options.visible_device_list`` narrow
the GPUs one session sees, as in TensorFlow.

A :class:`DeviceSpec` is the parsed form of a device string such as
``"/gpu:0"`` or ``"/job:worker/task:1/device:CPU:0"``; ``device(...)`` scopes
merge specs the way TensorFlow does (the inner scope fills in, the outer
keeps what the inner leaves unset).  Which device an op gets is decided per
session by ``flowbook.runtime.placement``.

    >>> DeviceSpec.from_string("/gpu:1").to_string()
    '/device:GPU:1'
    >>> [d.name for d in local_devices()][:1]
    ['/device:CPU:0']
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from flowbook.framework import hooks

_FIELD = re.compile(r"^(job|replica|task|device):(.+)$")
_SHORT = re.compile(r"^(cpu|gpu|CPU|GPU):(\d+|\*)$")
LOCAL = "/job:localhost/replica:0/task:0"  # the one process flowbook runs in, as TF names it


@dataclass(frozen=True)
class DeviceSpec:
    """A (possibly partial) device name: job, replica, task, type and index.

    >>> DeviceSpec.from_string("/job:ps/task:0").merged_with(DeviceSpec.from_string("/cpu:0"))
    DeviceSpec(job='ps', replica=None, task=0, device_type='CPU', device_index=0)
    """

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def from_string(cls, spec: str | None) -> DeviceSpec:
        """Parse TensorFlow's device string syntax; ValueError on nonsense."""
        if not spec:
            return cls()
        fields: dict[str, Any] = {}
        for part in spec.strip("/").split("/"):
            if not part:
                continue
            short = _SHORT.match(part)
            if short:
                fields["device_type"] = short.group(1).upper()
                fields["device_index"] = None if short.group(2) == "*" else int(short.group(2))
                continue
            m = _FIELD.match(part)
            if not m:
                raise ValueError(f"Unknown attribute '{part}' in device specification '{spec}'")
            key, value = m.groups()
            if key == "job":
                fields["job"] = value
            elif key in ("replica", "task"):
                fields[key] = int(value)
            else:
                kind, _, index = value.partition(":")
                fields["device_type"] = kind.upper()
                fields["device_index"] = int(index) if index and index != "*" else None
        return cls(**fields)

    def merged_with(self, inner: DeviceSpec) -> DeviceSpec:
        """This spec with the fields that ``inner`` sets replaced (TF's merge)."""
        changes = {k: v for k, v in inner.__dict__.items() if v is not None}
        return replace(self, **changes)

    def to_string(self) -> str:
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)


def canonical(spec: str | None) -> str:
    """The canonical spelling of a device string (``"/cpu:0"`` -> ``"/device:CPU:0"``)."""
    return DeviceSpec.from_string(spec).to_string()


class Device:
    """A place kernels run: a name and the array module serving it.

    The base class is the CPU's: numpy, and copies that copy nothing.

    >>> CPU.xp is np, CPU.name, CPU.full_name
    (True, '/device:CPU:0', '/job:localhost/replica:0/task:0/device:CPU:0')
    """

    def __init__(self, name: str, xp: Any, description: str = "") -> None:
        spec = DeviceSpec.from_string(name)
        self.name = name  # canonical device name, "/device:GPU:0"
        self.xp = xp  # numpy or cupy: what kernels compute with
        self.device_type: str = spec.device_type or "CPU"  # "CPU" or "GPU"
        self.index: int = spec.device_index or 0  # which device of its type
        self.full_name = LOCAL + name  # as TF's logs and traces spell it
        self.short_name = f"{self.device_type}_{self.index}"  # "GPU_0", for copy-node names
        self.description = description or ("numpy" if xp is np else getattr(xp, "__name__", ""))
        self.memory_limit_bytes = 0  # the device's memory, where known (0: unknown)
        self.hides_real_gpus = False  # registered, it stands in for CuPy's GPUs (a simulation)

    def to_device(self, array: Any) -> Any:
        """Copy a host array onto this device (a no-op on the CPU)."""
        return self.xp.asarray(array)

    def to_host(self, array: Any) -> Any:
        """Copy a device array to a numpy array (a no-op on the CPU)."""
        return array

    def synchronize(self) -> None:
        """Wait for the device's queued work (nothing to wait for on the CPU)."""

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is an array in this device's memory."""
        return isinstance(value, np.ndarray | np.generic)

    def timer(self) -> Any:
        """Stamps for one timed run's kernels here (``call``, ``finish``); None on the CPU.

        ``call(i, fn, args)`` runs op ``i``'s kernel between two stamps on
        the device's queue; ``finish()`` waits for the queue and returns
        ``{i: (start_ns, end_ns)}`` on the host's ``perf_counter_ns`` clock.
        """
        return None

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` made to run with this device current (a no-op where nothing needs it)."""
        return fn

    def rng(self, seed: int, seed2: int) -> Any:
        """A random generator on this device (TF1's op seeds; both 0: unseeded)."""
        return self.xp.random.default_rng([seed, seed2] if seed or seed2 else None)

    def is_out_of_memory(self, exc: BaseException) -> bool:
        """Whether ``exc`` says this device ran out of memory."""
        return isinstance(exc, MemoryError)

    def release_memory(self) -> None:
        """Hand cached, unused buffers back (after an out-of-memory error)."""

    def __repr__(self) -> str:
        return f"Device({self.name!r})"


CPU = Device("/device:CPU:0", np)

_registered: list[Device] = []  # devices added at run time (a simulated GPU), in order
_lock = threading.Lock()


def register_device(device: Device) -> Device:
    """Make ``device`` available to sessions created (or first run) from now on.

    >>> d = register_device(Device("/device:GPU:7", np)); unregister_device(d)
    """
    with _lock:
        taken = [CPU, *_registered] if device.hides_real_gpus else all_devices()
        if any(d.name == device.name for d in taken):
            raise ValueError(f"A device named {device.name} is already registered")
        _registered.append(device)
    return device


def unregister_device(device: Device) -> None:
    """Remove a device added by :func:`register_device` (sessions already placed keep it)."""
    with _lock:
        if device in _registered:
            _registered.remove(device)


def registered_devices() -> list[Device]:
    """The devices added with :func:`register_device`, in order."""
    return list(_registered)


def _real_gpus() -> list[Device]:
    """CuPy's GPUs, unless a registered device stands in for them (a simulated GPU does)."""
    if any(d.hides_real_gpus for d in _registered):
        return []
    return hooks.find_gpus()  # flowbook.runtime.gpu, which is above this module, fills it


def gpus() -> list[Device]:
    """Every GPU of this process: CuPy's (if CuPy and a GPU exist), then registered ones."""
    return [*_real_gpus(), *(d for d in _registered if d.device_type == "GPU")]


def all_devices() -> list[Device]:
    """The CPU and every GPU, whatever a session's config says."""
    return [CPU, *_real_gpus(), *_registered]


def local_devices(config: Any = None) -> list[Device]:
    """The devices a session with ``config`` (a ConfigProto) may place ops on, CPU first.

    ``device_count={"GPU": n}`` keeps the first n GPUs (0: none);
    ``gpu_options.visible_device_list="1,0"`` picks GPUs by index, in that order.
    """
    found = gpus()
    if config is not None:
        visible = getattr(config.gpu_options, "visible_device_list", "")
        if visible:
            order = [int(k) for k in visible.split(",") if k.strip()]
            found = [d for k in order for d in found if d.index == k]
        limit = config.device_count.get("GPU")
        if limit is not None:
            found = found[: max(int(limit), 0)]
    others = [d for d in _registered if d.device_type not in ("CPU", "GPU")]
    return [CPU, *found, *others]


def gpu_available() -> bool:
    """Whether this process has a GPU flowbook can use (CuPy's, or a registered one).

    >>> isinstance(gpu_available(), bool)
    True
    """
    return bool(gpus())


def to_host(value: Any) -> Any:
    """``value`` as a host value: a device array copied to numpy, anything else unchanged.

    >>> to_host(np.ones(2)).tolist()
    [1.0, 1.0]
    """
    if value is None or isinstance(value, np.ndarray | np.generic):
        return value
    for d in all_devices():
        if d is not CPU and d.holds(value):
            return d.to_host(value)
    return value


def array_module(value: Any) -> Any:
    """The array module (numpy, CuPy...) of the device holding ``value``.

    >>> array_module(np.zeros(2)) is np
    True
    """
    if isinstance(value, np.ndarray | np.generic):
        return np
    for d in all_devices():
        if d is not CPU and d.holds(value):
            return d.xp
    return np
