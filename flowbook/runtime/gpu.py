"""NVIDIA GPUs through CuPy: the ``GPU`` devices, found once per process.

CuPy is an optional extra (``pip install -e ".[gpu]"``); without it, or
without a GPU, :func:`find_gpus` returns ``[]`` and flowbook runs on the CPU.
It is looked for lazily, the first time a session places ops, so
``import flowbook`` never pays for ``import cupy``.  Set
``FLOWBOOK_NO_GPU=1`` (or ``CUDA_VISIBLE_DEVICES=""``) to hide the GPUs.
``flowbook.framework.devices``, below this module, reaches :func:`find_gpus` through
``flowbook.framework.hooks.find_gpus``, filled when this module is imported.

A :class:`CuPyGPU` is a ``flowbook.framework.devices.Device`` whose ``xp`` is CuPy:

- kernels run on CuPy's current stream of the device; a launch returns before
  the kernel ends, and the next kernel on the stream waits for it, so the
  executor runs GPU ops inline, in order, and never sends them to its pool;
- ``to_device`` / ``to_host`` are the copies the plan's copy nodes make
  (``flowbook.runtime.placement``); a value reaches the host only when it is fetched
  or read by a CPU op;
- ``timer()`` records a CUDA event before and after each kernel of a timed
  run, and converts them after the run, once the stream is done: one
  ``synchronize`` and one event at the start anchor the device's clock to
  ``perf_counter_ns``, so device times sit on the same axis as host times;
- out of memory is CuPy's ``OutOfMemoryError`` (a ``MemoryError``) or a CUDA,
  cuBLAS or cuDNN allocation failure; ``release_memory`` frees the memory
  pool's cached blocks.

Nothing here runs on a machine without a GPU; the code paths the executor and
the plan share with the GPU are tested with ``flowbook.runtime.gpu_sim`` instead.

    >>> isinstance(find_gpus(), list)
    True
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from flowbook.framework import hooks
from flowbook.framework.devices import Device

_found: list[Device] | None = None  # the GPUs CuPy found, once looked for
_lock = threading.Lock()
_OOM_WORDS = ("cudaErrorMemoryAllocation", "ALLOC_FAILED", "out of memory")


def find_gpus() -> list[Device]:
    """The GPUs CuPy can use, one :class:`CuPyGPU` each; ``[]`` without CuPy or a GPU."""
    global _found
    if _found is None:
        with _lock:
            if _found is None:
                _found = _look_for_gpus()
    return _found


def _look_for_gpus() -> list[Device]:
    if os.environ.get("FLOWBOOK_NO_GPU") or importlib.util.find_spec("cupy") is None:
        return []
    try:
        import cupy  # lazy: optional, and slow to import

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # CuPy without a driver or a device: no GPU
        return []
    return [CuPyGPU(cupy, k) for k in range(count)]


class CuPyGPU(Device):
    """One CUDA device, computing with CuPy.  See the module docstring."""

    def __init__(self, cupy: Any, index: int) -> None:
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        super().__init__(f"/device:GPU:{index}", cupy, f"{name} (CuPy {cupy.__version__})")
        self.cupy = cupy  # the module, also self.xp
        self.cuda_device = cupy.cuda.Device(index)  # context manager making this device current
        self.memory_limit_bytes = int(props.get("totalGlobalMem", 0))

    def to_device(self, array: Any) -> Any:
        with self.cuda_device:
            return self.cupy.asarray(array)

    def to_host(self, array: Any) -> Any:
        if isinstance(array, self.cupy.ndarray):
            return array.get()
        return array

    def synchronize(self) -> None:
        self.cuda_device.synchronize()

    def holds(self, value: Any) -> bool:
        return isinstance(value, self.cupy.ndarray) and value.device.id == self.index

    def timer(self) -> _EventTimer:
        return _EventTimer(self)

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self.index == 0:  # CuPy's current device unless the user changed it
            return fn
        device = self.cuda_device

        def on_device(*args: Any) -> Any:
            with device:
                return fn(*args)

        return on_device

    def rng(self, seed: int, seed2: int) -> Any:
        with self.cuda_device:
            return self.cupy.random.default_rng([seed, seed2] if seed or seed2 else None)

    def is_out_of_memory(self, exc: BaseException) -> bool:
        return isinstance(exc, MemoryError) or any(w in str(exc) for w in _OOM_WORDS)

    def release_memory(self) -> None:
        with self.cuda_device:
            self.cupy.get_default_memory_pool().free_all_blocks()
            self.cupy.get_default_pinned_memory_pool().free_all_blocks()

    def limit_memory(self, fraction: float) -> None:
        """Cap the memory pool at ``fraction`` of the device (TF's per_process_gpu_memory_fraction)."""
        with self.cuda_device:
            self.cupy.get_default_memory_pool().set_limit(fraction=fraction)


class _EventTimer:
    """CUDA events around the kernels of one timed run on one GPU."""

    def __init__(self, gpu: CuPyGPU) -> None:
        self.gpu = gpu
        self.events: list[tuple[int, Any, Any]] = []  # (op index, start event, end event)
        gpu.synchronize()  # the stream is idle: the origin event fires when it is recorded
        with gpu.cuda_device:
            self.origin = gpu.cupy.cuda.Event()  # device time 0 ...
            self.origin.record()
        self.origin_ns = time.perf_counter_ns()  # ... is this host time

    def call(self, i: int, fn: Callable[..., Any], args: list[Any]) -> Any:
        if self.gpu.index != 0:
            with self.gpu.cuda_device:  # events go on this device's stream
                return self._stamped(i, fn, args)
        return self._stamped(i, fn, args)

    def _stamped(self, i: int, fn: Callable[..., Any], args: list[Any]) -> Any:
        Event = self.gpu.cupy.cuda.Event
        start, end = Event(), Event()
        start.record()
        result = fn(*args)
        end.record()
        self.events.append((i, start, end))
        return result

    def finish(self) -> dict[int, tuple[int, int]]:
        if not self.events:
            return {}
        self.events[-1][2].synchronize()
        elapsed = self.gpu.cupy.cuda.get_elapsed_time  # milliseconds between two events
        o, base = self.origin, self.origin_ns
        return {
            i: (base + int(elapsed(o, s) * 1e6), base + int(elapsed(o, e) * 1e6))
            for i, s, e in self.events
        }


hooks.find_gpus.fill(find_gpus)
