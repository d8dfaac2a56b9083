"""A simulated GPU: numpy behind a device boundary, for tests and GPU-less notebooks.

Placement, copy nodes, per-device freeing, out-of-memory handling and the
trace's device lane are the same code on a real GPU and here; only the array
module differs.  ``simulate_gpu()`` registers a :class:`SimulatedGPU` named
``/device:GPU:0`` that sessions created afterwards place ops on, exactly as
they would on a CuPy GPU; while it is registered it stands in for any real
GPU (sessions do not see CuPy's), so what it shows is the same everywhere:

- its arrays are :class:`SimArray`, a numpy subclass that, like a CuPy
  array, refuses to meet a host (plain numpy) array in a ufunc or a numpy
  function (``TypeError``).  A host value that reached a device kernel
  without a copy node fails loudly instead of computing silently;
- its ``xp`` is numpy seen through that boundary: every function returns
  device arrays, and ``xp.asarray(host)`` uploads (counted in
  ``implicit_uploads``), as ``cupy.asarray`` does;
- ``uploads`` / ``downloads`` count the copies made by copy nodes, so a test
  can prove that only fetched values come back to the host;
- ``live_bytes`` / ``peak_bytes`` track the memory its arrays hold: each
  buffer a device array owns or views (its root ``base``) is charged once,
  when an xp function, an operator, ``astype``, ``copy``, indexing or a copy
  node first returns it, and freed when the last array on it dies; a
  ``memory_limit`` makes an allocation past it raise
  :class:`SimulatedOutOfMemoryError` (a ``MemoryError``, as CuPy's is);
- its timer stamps kernels with the host clock (the "device" runs
  synchronously), so FULL_TRACE shows a device lane as on a GPU.

Timings measured here are CPU timings; nothing about GPU speed can be read
from them.

    >>> import flowbook as fb
    >>> with simulate_gpu() as gpu, fb.Graph().as_default(), fb.Session() as s:
    ...     y = fb.constant([1.0, 2.0]) * 3.0
    ...     v = s.run(y)
    >>> v.tolist(), type(v).__name__, gpu.downloads
    ([3.0, 6.0], 'ndarray', 1)
"""

from __future__ import annotations

import threading
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from flowbook.framework.devices import (
    Device,
    register_device,
    registered_devices,
    unregister_device,
)

_UPLOADS = {"asarray", "array", "asanyarray", "ascontiguousarray"}  # accept host data: a copy


class SimulatedOutOfMemoryError(MemoryError):
    """An allocation on the simulated GPU went past its ``memory_limit``."""


class SimArray(np.ndarray):
    """An array in the simulated GPU's memory; mixing it with a host array is a TypeError.

    >>> a = np.arange(3.0).view(SimArray)
    >>> type(a + 1).__name__
    'SimArray'
    >>> a + np.ones(3)
    Traceback (most recent call last):
    ...
    TypeError: Unsupported type <class 'numpy.ndarray'>: a host array met a device array without a copy
    """

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        result = getattr(ufunc, method)(*[_unwrap(x) for x in inputs], **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    # methods that may allocate: their results are charged like the functions'
    def astype(self, *args: Any, **kwargs: Any) -> Any:
        return _wrap(self.view(np.ndarray).astype(*args, **kwargs))

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        return _wrap(self.view(np.ndarray).copy(*args, **kwargs))

    def __getitem__(self, key: Any) -> Any:  # a scalar index gives a 0-d array, as in CuPy
        return _wrap(self.view(np.ndarray)[_unwrap(key)])


def _unwrap(x: Any) -> Any:
    """Device arrays as plain numpy views; a host array here is the error CuPy raises."""
    t = type(x)
    if t is SimArray:
        return x.view(np.ndarray)
    if t is tuple or t is list:
        return t(_unwrap(e) for e in x)
    if t is dict:
        return {k: _unwrap(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {t}: a host array met a device array without a copy")
    return x


def _wrap(r: Any) -> Any:
    """Results as device arrays; a fresh allocation is charged to the simulated memory."""
    t = type(r)
    if t is np.ndarray:
        if _ACTIVE is not None:
            _ACTIVE._charge(r)
        return r.view(SimArray)
    if isinstance(r, np.generic):  # CuPy's reductions return 0-d arrays, not scalars
        return _wrap(np.array(r))
    if t is tuple or t is list:
        return t(_wrap(e) for e in r)
    if isinstance(r, tuple):  # numpy's named results (linalg.qr): plain tuples, as CuPy's
        return tuple(_wrap(e) for e in r)
    return r


def _device_fn(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)))

    call.__name__ = getattr(fn, "__name__", "fn")
    return call


def _upload_fn(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(x: Any, *args: Any, **kwargs: Any) -> Any:
        if type(x) is SimArray:
            return _wrap(fn(x.view(np.ndarray), *args, **kwargs))
        if _ACTIVE is not None:
            _ACTIVE.implicit_uploads += 1
        return _wrap(np.array(fn(_host_only(x), *args, **kwargs), copy=True))

    return call


def _host_only(x: Any) -> Any:
    t = type(x)
    if t is tuple or t is list:
        return t(_host_only(e) for e in x)
    return x.view(np.ndarray) if t is SimArray else x


class _Namespace:
    """numpy (or one of its submodules) seen from the simulated device."""

    def __init__(self, module: Any, name: str) -> None:
        self._module = module
        self.__name__ = name

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._module, name)
        if isinstance(attr, types.ModuleType):
            value: Any = _Namespace(attr, f"{self.__name__}.{name}")
        elif isinstance(attr, np.ufunc):
            value = _Ufunc(attr)
        elif isinstance(attr, type) or not callable(attr):
            value = attr
        elif name == "default_rng":
            value = lambda *a, **k: _Generator(np.random.default_rng(*a, **k))
        elif name in _UPLOADS:
            value = _upload_fn(attr)
        else:
            value = _device_fn(attr)
        setattr(self, name, value)  # looked up once
        return value


class _Ufunc:
    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _wrap(self._ufunc(*_unwrap(args), **_unwrap(kwargs)))

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ufunc, name)
        return _device_fn(attr) if callable(attr) else attr


class _Generator:
    """A numpy Generator whose draws land on the simulated device."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._rng, name)
        return _device_fn(attr) if callable(attr) else attr


xp = _Namespace(np, "flowbook.runtime.gpu_sim.xp")  # the simulated device's array module
_ACTIVE: SimulatedGPU | None = None  # the registered simulated GPU, charged for allocations


class _SimTimer:
    """Host-clock stamps around the simulated device's kernels (it runs synchronously)."""

    def __init__(self) -> None:
        self.times: dict[int, tuple[int, int]] = {}  # op index -> (start_ns, end_ns)

    def call(self, i: int, fn: Callable[..., Any], args: list[Any]) -> Any:
        start = time.perf_counter_ns()
        result = fn(*args)
        self.times[i] = (start, time.perf_counter_ns())
        return result

    def finish(self) -> dict[int, tuple[int, int]]:
        return self.times


class SimulatedGPU(Device):
    """A GPU simulated with numpy.  See the module docstring; made by :func:`simulate_gpu`.

    >>> with simulate_gpu(memory_limit=1000) as gpu:
    ...     gpu.to_device(np.zeros(10)).nbytes, gpu.live_bytes
    (80, 0)
    """

    def __init__(self, index: int, memory_limit: int = 0) -> None:
        super().__init__(
            f"/device:GPU:{index}", xp, "simulated GPU: numpy arrays behind a device boundary"
        )
        self.memory_limit = memory_limit  # bytes; 0: no limit
        self.hides_real_gpus = True  # while registered, sessions see it instead of CuPy's GPUs
        self.memory_limit_bytes = memory_limit
        self.uploads = 0  # host -> device copies made by to_device (copy nodes)
        self.downloads = 0  # device -> host copies made by to_host (copy nodes)
        self.implicit_uploads = 0  # host data turned into device arrays by xp.asarray & co
        self.live_bytes = 0  # bytes held by live device arrays now
        self.peak_bytes = 0  # the most live_bytes reached since reset_counters()
        self.releases = 0  # release_memory() calls (one per out-of-memory error)
        self._charged: set[int] = set()  # ids of the live buffers charged (freed: removed)
        self._lock = threading.Lock()  # guards the byte counts (finalizers run anywhere)

    # -- memory -------------------------------------------------------------
    def _charge(self, array: np.ndarray) -> None:
        """Charge the buffer under ``array`` (its root base) unless it is charged already."""
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        if id(root) not in self._charged and root.base is None:  # not memory numpy borrowed
            self._allocate(root)

    def _allocate(self, array: np.ndarray) -> None:
        n = array.nbytes
        with self._lock:
            if self.memory_limit and self.live_bytes + n > self.memory_limit:
                raise SimulatedOutOfMemoryError(
                    f"Out of memory allocating {n:,} bytes (allocated so far: "
                    f"{self.live_bytes:,} bytes, limit set to: {self.memory_limit:,} bytes)."
                )
            self.live_bytes += n
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
            self._charged.add(id(array))
        weakref.finalize(array, self._free, id(array), n)

    def _free(self, key: int, n: int) -> None:
        with self._lock:
            self.live_bytes -= n
            self._charged.discard(key)

    def reset_counters(self) -> None:
        """Zero the copy counts and restart the peak from the bytes live now."""
        self.uploads = self.downloads = self.implicit_uploads = self.releases = 0
        self.peak_bytes = self.live_bytes

    # -- the Device interface -----------------------------------------------
    def to_device(self, array: Any) -> Any:
        if type(array) is SimArray:
            return array
        self.uploads += 1
        return _wrap(np.array(array, copy=True))

    def to_host(self, array: Any) -> Any:
        if type(array) is SimArray:
            self.downloads += 1
            return np.array(array.view(np.ndarray), copy=True)
        if isinstance(array, np.ndarray):
            raise TypeError(
                f"{self.name} produced a host array where a device array belongs (a kernel "
                "left the device without a copy node)"
            )
        return array

    def holds(self, value: Any) -> bool:
        return type(value) is SimArray

    def timer(self) -> _SimTimer:
        return _SimTimer()

    def rng(self, seed: int, seed2: int) -> Any:
        return _Generator(np.random.default_rng([seed, seed2] if seed or seed2 else None))

    def release_memory(self) -> None:
        self.releases += 1

    # -- registration ---------------------------------------------------------
    def remove(self) -> None:
        """Unregister this device (sessions placed on it keep it)."""
        global _ACTIVE
        unregister_device(self)
        if _ACTIVE is self:
            _ACTIVE = None

    def __enter__(self) -> SimulatedGPU:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def simulate_gpu(memory_limit: int = 0) -> SimulatedGPU:
    """Register a simulated GPU; sessions created afterwards place ops on it.

    Use it as a context manager (``with simulate_gpu() as gpu:``), or keep
    the device and call ``gpu.remove()`` when done.  One at a time.

    >>> gpu = simulate_gpu(); gpu.name; gpu.remove()
    '/device:GPU:0'
    """
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError(f"A simulated GPU is already registered ({_ACTIVE.name})")
    index = sum(d.device_type == "GPU" for d in registered_devices())
    device = SimulatedGPU(index, memory_limit)
    register_device(device)
    _ACTIVE = device
    return device
