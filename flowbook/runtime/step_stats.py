"""Per-node execution records, TensorFlow's ``StepStats`` messages as dataclasses.

A traced run (``RunOptions(trace_level=FULL_TRACE)``) fills
``RunMetadata.step_stats``: one ``DeviceStepStats`` per device, each with one
``NodeExecStats`` per executed op, field names as in TensorFlow's
``step_stats.proto`` so TF1 code that reads them runs unchanged; each turns into
TensorFlow's message on demand (``to_proto()``, ``SerializeToString()``, see
``flowbook.runtime.proto_view``).  Times are
microseconds: ``all_start_micros`` since the epoch, the others relative to it.
A queue op that waited (for an element, for room) starts with its wait: its
kernel starts ``op_start_rel_micros`` later, when the wait ended.

    >>> NodeExecStats(node_name="a", op_start_rel_micros=1, op_end_rel_micros=3).op_end_rel_micros
    3
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowbook.graph_io.graph_def import DT_ENUM
from flowbook.runtime.proto_view import ProtoView


@dataclass
class AllocationDescription(ProtoView):
    _PROTO = ("allocation_description_pb2", "AllocationDescription")

    requested_bytes: int = 0
    allocated_bytes: int = 0


@dataclass
class TensorDescription(ProtoView):
    _PROTO = ("tensor_description_pb2", "TensorDescription")

    dtype: str = ""
    shape: list[int] = field(default_factory=list)
    allocation_description: AllocationDescription = field(default_factory=AllocationDescription)

    def _fill(self, message: Any) -> None:
        """TensorFlow's form: the dtype as its enum, the shape as a ``TensorShapeProto``.

        >>> TensorDescription("float32", [2, -1]).to_proto().shape.dim[1].size
        -1
        """
        message.dtype = DT_ENUM.get(self.dtype, 0)
        message.shape.dim.extend(message.shape.Dim(size=d) for d in self.shape)
        self.allocation_description._fill(message.allocation_description)


@dataclass
class NodeOutput(ProtoView):
    _PROTO = ("step_stats_pb2", "NodeOutput")

    slot: int = 0
    tensor_description: TensorDescription = field(default_factory=TensorDescription)


@dataclass
class AllocatorMemoryUsed(ProtoView):
    """Memory one op's run held, TF's ``AllocatorMemoryUsed``: ``total_bytes`` its outputs,
    ``peak_bytes`` the run's live values while it ran, ``live_bytes`` after its inputs' last
    reads were freed (``flowbook.runtime.memory_plan.live_bytes``)."""

    _PROTO = ("step_stats_pb2", "AllocatorMemoryUsed")

    allocator_name: str = ""
    total_bytes: int = 0
    peak_bytes: int = 0
    live_bytes: int = 0


@dataclass
class NodeExecStats(ProtoView):
    """One executed op: when it was scheduled, ran and finished, on which thread."""

    _PROTO = ("step_stats_pb2", "NodeExecStats")

    node_name: str = ""
    all_start_micros: int = 0  # the op's start (a queue op that waited: its wait's), epoch µs
    op_start_rel_micros: int = 0  # kernel start, relative to all_start_micros (0 unless it waited)
    op_end_rel_micros: int = 0  # kernel end, relative to all_start_micros
    all_end_rel_micros: int = 0  # end of all the op's work, relative to all_start_micros
    scheduled_micros: int = 0  # when its inputs were all ready, microseconds since the epoch
    thread_id: int = 0
    timeline_label: str = ""
    output: list[NodeOutput] = field(default_factory=list)
    # an op run in a loop: its innermost loop's frame and the iteration (TF's executor
    # logs such an op once per iteration too; the label names every enclosing loop)
    frame_name: str = ""
    iteration_id: int = 0
    memory: list[AllocatorMemoryUsed] = field(default_factory=list)  # runs without loops


@dataclass
class DeviceStepStats(ProtoView):
    _PROTO = ("step_stats_pb2", "DeviceStepStats")

    device: str = ""
    node_stats: list[NodeExecStats] = field(default_factory=list)


@dataclass
class StepStats(ProtoView):
    _PROTO = ("step_stats_pb2", "StepStats")

    dev_stats: list[DeviceStepStats] = field(default_factory=list)


def tensor_facts(op: Any, slot: int, dtype: Any, shape: Any) -> tuple[str, list[int], int]:
    """Dtype name, shape list and bytes of one recorded output.

    An output that is not an array (a variable's state, None) is described
    by the tensor's static dtype and shape, unknown dims as -1 (as TF does).

    >>> import numpy as np
    >>> tensor_facts(None, 0, np.dtype("float32"), (2, 3))
    ('float32', [2, 3], 24)
    """
    if dtype is None or shape is None or not hasattr(dtype, "itemsize"):
        if op is None or slot >= len(op.outputs):
            return "", [], 0
        t = op.outputs[slot]
        static = t.get_shape().as_list() if t._shape is not None else []
        dtype, shape = t.dtype.np, tuple(-1 if d is None else d for d in static)
    n = dtype.itemsize
    for d in shape:
        n *= max(int(d), 0)
    return dtype.name, [int(d) for d in shape], n


def peak_bytes(step_stats: StepStats) -> int:
    """The peak of a traced run's live values: the largest ``peak_bytes`` of its ops.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     y = tf.ones([100]) * 2.0
    ...     md = tf.RunMetadata()
    ...     _ = s.run(y, options=tf.RunOptions(trace_level=3), run_metadata=md)
    >>> peak_bytes(md.step_stats)  # the ones and the 4-byte 2.0, as the product is made
    804
    """
    return max(
        (m.peak_bytes for d in step_stats.dev_stats for n in d.node_stats for m in n.memory),
        default=0,
    )
