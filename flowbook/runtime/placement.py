"""Placement: which device runs each op, and the copy nodes where an edge crosses devices.

**Choosing a device** (:class:`Placer`, one per session, each op decided once
and remembered):

1. an op that updates a variable (``ref_inputs``: Assign, AssignAdd...) runs
   where the variable lives, whatever its scope asked (TF's colocation);
2. an op whose ``device(...)`` scope names a device type (``/gpu:0``,
   ``/device:CPU:0``, ``/gpu:*``) gets the first existing device that matches,
   if that device has a kernel for it.  An op ``host_only`` in the registry,
   or one on strings, has no GPU kernel.  When nothing matches, TF1's rule:
   ``InvalidArgumentError`` "Cannot assign a device for operation ...",
   unless ``ConfigProto(allow_soft_placement=True)``, which falls back to a
   device of the same type, then to the default below.  Job, replica and
   task fields are accepted and ignored: flowbook is one process;
3. anything else goes to the first GPU the session sees, if the op has a GPU
   kernel, else to the CPU;
4. shape arithmetic stays on the host, even under a GPU scope (TF keeps the
   int32 tensors of GPU kernels in host memory): a stateless op whose outputs
   are all int32 or bool, and whose inputs (those read for their values;
   ``Shape`` reads only its input's shape) are int32 or bool values on the
   host (fed, or made by ops on the CPU), runs on the CPU.  A gradient's ``Shape`` -> ``BroadcastGradientArgs`` -> axes
   chain then never touches the GPU and never waits for it, while an
   ``Equal`` of a GPU ``argmax`` with labels stays on the GPU.

Without a GPU every op lands on the CPU and nothing below happens: plans are
built and run exactly as before placement existed.

**Copies** (:func:`insert_copies`, per plan): where a value is produced on
one device and read on another, the plan gets a :class:`CopyOp`, one node
per (value, destination device), named after the value's op:
``layer1/MatMul/_copy_to_GPU_0`` (``..._copy1_to_...`` for output 1).  It is
the whitepaper's Send/Receive pair as a single node, typed
``_CopyHostToDevice``, ``_CopyDeviceToHost`` or ``_CopyDeviceToDevice``:

- fed values (host arrays) read by a GPU op are copied to the GPU once;
- an input the op's kernel reads on the host (``OpDef.host_inputs``: a
  reshape's shape, a reduction's axes) is not uploaded: a GPU op gets it as a
  host array; one read for its shape only (``OpDef.meta_inputs``) is never
  copied, wherever it lives;
- fetched values produced on a GPU are copied to the host; nothing else ever
  is, so intermediate values stay on the device;
- a variable read across devices is read by the copy, which waits for the
  reader's control inputs (the read must see the updates they order).

A CopyOp is an ``Operation`` that belongs to no graph's op table: it runs,
is timed, shows in step stats, traces and ``plan.copies``, and is listed by
``log_device_placement`` like any op.

    >>> import flowbook as fb
    >>> from flowbook.runtime.gpu_sim import simulate_gpu
    >>> with simulate_gpu(), fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, name="x")
    ...     y = fb.multiply(x, 2.0, name="y")
    ...     with fb.Session() as s:
    ...         _ = s.run(y, {x: 1.0})
    ...         plan = next(iter(s._plans.values()))
    >>> [(c.name, c.type) for c in plan.copies]
    [('x/_copy_to_GPU_0', '_CopyHostToDevice'), ('y/_copy_to_CPU_0', '_CopyDeviceToHost')]
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from flowbook.framework import dtypes
from flowbook.framework.devices import CPU, Device, DeviceSpec, local_devices
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out
from flowbook.framework.tensor import Operation, Tensor
from flowbook.ops.control_flow.control_flow_prims import CONTROL_FLOW_TYPES

__all__ = ["CopyOp", "Placer", "insert_copies", "log_placement"]


def has_gpu_kernel(op: Operation) -> bool:
    """Whether ``op`` can run on a GPU: not ``host_only``, and no string inputs or outputs.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     has_gpu_kernel(fb.constant(1.0).op), has_gpu_kernel(fb.constant("s").op)
    (True, False)
    """
    if op._opdef.host_only:
        return False
    return not any(t.dtype.name == "string" for t in (*op.inputs, *op.outputs))


def value_inputs(op: Operation) -> list[int]:
    """The inputs ``op``'s kernel reads as device values: not updated, host or shape-only.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3])
    ...     value_inputs(fb.reshape(x, [3, -1]).op), value_inputs(fb.shape(x).op)
    ([0], [])
    """
    opdef, n = op._opdef, len(op.inputs)
    if not n:
        return []
    skip = {k % n for k in (*opdef.ref_inputs, *opdef.host_inputs, *opdef.meta_inputs)}
    return [k for k in range(n) if k not in skip]


_HOST_TYPES = (dtypes.int32, dtypes.bool)  # shape arithmetic: kept on the host (rule 4)


class Placer:
    """Chooses each op's device for one session.  See the module docstring.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     with fb.device("/gpu:0"):
    ...         c = fb.constant(1.0, name="c")
    ...     config = fb.ConfigProto(allow_soft_placement=True, device_count={"GPU": 0})
    ...     Placer(config)(c.op).name
    '/device:CPU:0'
    """

    def __init__(self, config: Any) -> None:
        self.devices: list[Device] = local_devices(config)  # CPU first, then the GPUs
        self.soft = bool(config.allow_soft_placement)  # fall back instead of failing
        self.default = next((d for d in self.devices if d.device_type == "GPU"), CPU)
        self.only_cpu = len(self.devices) == 1  # no GPU: every op runs on the CPU
        self._placed: weakref.WeakKeyDictionary[Operation, Device] = (
            weakref.WeakKeyDictionary()
        )  # op -> its device, decided once
        fraction = config.gpu_options.per_process_gpu_memory_fraction
        if fraction:
            for d in self.devices:
                if hasattr(d, "limit_memory"):
                    d.limit_memory(fraction)

    def __call__(self, op: Operation) -> Device:
        """The device ``op`` runs on in this session."""
        if self.only_cpu and not op.device and not op._opdef.ref_inputs:
            return CPU
        device = self._placed.get(op)
        if device is None:
            device = self._placed[op] = self._choose(op)
        return device

    def _choose(self, op: Operation) -> Device:
        refs = op._opdef.ref_inputs
        if refs and refs[0] < len(op.inputs):  # updates run where the variable lives
            return self(op.inputs[refs[0]].op)
        gpu_ok = has_gpu_kernel(op)
        on_host = not gpu_ok or self._shape_arithmetic(op)  # host memory on a GPU too
        fallback = CPU if on_host else self.default
        spec = DeviceSpec.from_string(op.device) if op.device else None
        if spec is None or spec.device_type is None:
            return fallback
        kind, index = spec.device_type, spec.device_index
        matches = [
            d for d in self.devices if d.device_type == kind and (index is None or d.index == index)
        ]
        supported = kind == "CPU" or (kind == "GPU" and gpu_ok)
        if matches and supported:
            return CPU if on_host else matches[0]
        if not self.soft:
            raise self._cannot_assign(op, bool(matches))
        same_kind = [d for d in self.devices if d.device_type == kind]
        if same_kind and supported:
            return CPU if on_host else same_kind[0]
        return fallback

    def _shape_arithmetic(self, op: Operation) -> bool:
        """Rule 4: int32/bool outputs computed from int32/bool values on the host."""
        if op._opdef.stateful or not op.outputs:  # random draws and variables: not arithmetic
            return False
        if any(t.dtype not in _HOST_TYPES for t in op.outputs):
            return False
        if op.type in CONTROL_FLOW_TYPES or op.type == "LoopCond":
            return True  # a loop's counters and predicates stay on the host (and loops are cycles)
        for k in value_inputs(op):  # producers come first in a plan: placed already
            t = op.inputs[k]
            if t.dtype not in _HOST_TYPES or self(t.op) is not CPU:
                return False
        return True

    def _cannot_assign(self, op: Operation, exists: bool) -> InvalidArgumentError:
        if exists:
            why = (
                f"Could not satisfy explicit device specification '{op.device}' because no "
                f"supported kernel for {DeviceSpec.from_string(op.device).device_type} devices "
                "is available."
            )
        else:
            names = ", ".join(d.full_name for d in self.devices)
            why = (
                f"Operation was explicitly assigned to {op.device} but available devices are "
                f"[ {names} ]. Make sure the device specification refers to a valid device."
            )
        return InvalidArgumentError(
            None,
            op,
            f"{op.describe()}: Cannot assign a device for operation {op.name}: {why} Pass "
            "config=tf.ConfigProto(allow_soft_placement=True) to the Session to run it elsewhere.",
        )


# ---------------------------------------------------------------------- copies
def _copy_def(name: str, doc: str) -> OpDef:
    return OpDef(
        name,
        ("input",),
        (),
        infer=lambda x: Out(x.dtype, x._shape),
        kernel=None,
        grad=NOT_DIFFERENTIABLE,
        doc=doc,
    )


_H2D = _copy_def("_CopyHostToDevice", "Copies a host value to a device.")
_D2H = _copy_def("_CopyDeviceToHost", "Copies a device value to the host.")
_D2D = _copy_def("_CopyDeviceToDevice", "Copies a value from one device to another.")


class CopyOp(Operation):
    """A copy of one value between two devices, inserted by the plan (not in the graph).

    ``src`` and ``dst`` are the devices; ``device`` (the string) is the one
    that runs the copy: the GPU side.  Its one output is the copied value.
    """

    __slots__ = ("dst", "kernel", "src")

    def __init__(
        self, value: Tensor, src: Device, dst: Device, control_inputs: Sequence[Operation] = ()
    ) -> None:
        opdef = _H2D if src is CPU else _D2H if dst is CPU else _D2D
        suffix = "" if value.value_index == 0 else str(value.value_index)
        name = f"{value.op.name}/_copy{suffix}_to_{dst.short_name}"
        runs_on = src if dst is CPU else dst
        super().__init__(
            value.op.graph,
            opdef,
            name,
            (value,),
            {},
            list(control_inputs),
            runs_on.name,
            value.op.site,
            value.op._id,
        )
        self.outputs = (Tensor(self, 0, value.dtype, value._shape),)
        self.src = src  # the device the value is on
        self.dst = dst  # the device it is copied to
        self.kernel = src.to_host if dst is CPU else dst.to_device  # value -> copy

    def __repr__(self) -> str:
        return f"<flowbook.CopyOp '{self.name}' {self.src.name} -> {self.dst.name}>"


class Placed(NamedTuple):
    """A run's ops with their devices and the copies between them (``insert_copies``)."""

    order: list[Operation]  # graph ops and copies, each after what it waits for
    devices: list[Device]  # per op of order: where it runs
    inputs: dict[Operation, tuple[Tensor, ...]]  # ops reading a copy: their inputs, rewired
    fetches: list[Any]  # the fetches, a GPU value replaced by its copy on the host
    copies: list[CopyOp]  # the copies, in order


def insert_copies(
    order: list[Operation],
    fed: set[Tensor],
    fetches: Sequence[Any],
    place: Callable[[Operation], Device],
) -> Placed:
    """Place every op of ``order`` and add the copies where values cross devices.

    ``fed`` values are on the host; ``fetches`` must end on the host.
    """
    devices = [place(op) for op in order]
    if all(d is CPU for d in devices):
        return Placed(order, devices, {}, list(fetches), [])
    where = dict(zip(order, devices))
    copies: dict[tuple, CopyOp] = {}
    out_order: list[Operation] = []
    out_devices: list[Device] = []
    rewired: dict[Operation, tuple[Tensor, ...]] = {}

    def copy_of(t: Tensor, dst: Device, reader: Operation | None) -> Tensor:
        var = t.op.type == "VariableV2"  # a variable read: one copy per reader, after its deps
        key = (t, dst, reader) if var else (t, dst)
        c = copies.get(key)
        if c is None:
            deps = reader.control_inputs if var and reader is not None else ()
            c = copies[key] = CopyOp(t, CPU if t in fed else where[t.op], dst, deps)
            out_order.append(c)
            out_devices.append(c.src if dst is CPU else dst)
        return c.outputs[0]

    for op, dev in zip(order, devices):
        opdef, n = op._opdef, len(op.inputs)
        skip = {k % n for k in (*opdef.ref_inputs, *opdef.meta_inputs)} if n else ()
        host = {k % n for k in opdef.host_inputs} if dev is not CPU and n else ()
        new: list[Tensor] | None = None
        for k, t in enumerate(op.inputs):
            src = CPU if t in fed else where[t.op]
            dst = CPU if k in host else dev
            if src is dst or k in skip:
                continue
            if new is None:
                new = list(op.inputs)
            new[k] = copy_of(t, dst, op)
        if new is not None:
            rewired[op] = tuple(new)
        out_order.append(op)
        out_devices.append(dev)
    out_fetches: list[Any] = []
    for f in fetches:
        if isinstance(f, Tensor) and f not in fed and where[f.op] is not CPU:
            f = copy_of(f, CPU, None)
        out_fetches.append(f)
    return Placed(out_order, out_devices, rewired, out_fetches, list(copies.values()))


# ----------------------------------------------------------------------- logging
def log_placement(plan: Any, devices: Sequence[Device] | None = None, file: Any = None) -> None:
    """Print each op's device, TF1's ``log_device_placement`` lines, to stdout (the cell).

    With ``devices``, first the "Device mapping" of the session's GPUs.

    >>> import flowbook as fb
    >>> from flowbook.runtime.plan import build_plan
    >>> with fb.Graph().as_default() as g:
    ...     y = fb.constant(2.0, name="y")
    ...     log_placement(build_plan(g, [y], (), (), lambda op: None), [CPU])
    Device mapping: no known devices.
    y: (Const): /job:localhost/replica:0/task:0/device:CPU:0
    """
    out = file if file is not None else sys.stdout
    lines = []
    if devices is not None:
        gpus = [d for d in devices if d is not CPU]
        lines.append("Device mapping:" if gpus else "Device mapping: no known devices.")
        lines.extend(f"{d.full_name} -> device: {d.index}, name: {d.description}" for d in gpus)
    for op, device in zip(plan.ops, plan.devices):
        lines.append(f"{op.name}: ({op.type}): {device.full_name}")
    out.write("\n".join(lines) + "\n")
