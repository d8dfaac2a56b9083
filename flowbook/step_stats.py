"""Per-node execution records, TensorFlow's ``StepStats`` messages as dataclasses.

A traced run (``RunOptions(trace_level=FULL_TRACE)``) fills
``RunMetadata.step_stats``: one ``DeviceStepStats`` per device, each with one
``NodeExecStats`` per executed op, field names as in TensorFlow's
``step_stats.proto`` so TF1 code that reads them runs unchanged.  Times are
microseconds: ``all_start_micros`` since the epoch, the others relative to it.

    >>> NodeExecStats(node_name="a", op_start_rel_micros=1, op_end_rel_micros=3).op_end_rel_micros
    3
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AllocationDescription:
    requested_bytes: int = 0
    allocated_bytes: int = 0


@dataclass
class TensorDescription:
    dtype: str = ""
    shape: list[int] = field(default_factory=list)
    allocation_description: AllocationDescription = field(default_factory=AllocationDescription)


@dataclass
class NodeOutput:
    slot: int = 0
    tensor_description: TensorDescription = field(default_factory=TensorDescription)


@dataclass
class NodeExecStats:
    """One executed op: when it was scheduled, ran and finished, on which thread."""

    node_name: str = ""
    all_start_micros: int = 0  # kernel start, microseconds since the epoch
    op_start_rel_micros: int = 0  # kernel start, relative to all_start_micros (0)
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


@dataclass
class DeviceStepStats:
    device: str = ""
    node_stats: list[NodeExecStats] = field(default_factory=list)


@dataclass
class StepStats:
    dev_stats: list[DeviceStepStats] = field(default_factory=list)
