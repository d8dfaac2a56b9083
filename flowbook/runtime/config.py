"""Run and session options with TensorFlow 1's names: ConfigProto (GraphOptions,
OptimizerOptions), RunOptions, RunMetadata.

Each is a dataclass with the fields of TensorFlow's message that flowbook reads
(and a few of its own, such as ``check_numerics``); :class:`ProtoView` gives it
the message's face: ``to_proto()``, ``SerializeToString()`` and a text-format
``str``, so the bytes parse in TensorFlow and TensorBoard.

>>> import flowbook as fb
>>> fb.RunOptions(timeout_in_ms=500).timeout_in_ms
500
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowbook.runtime.proto_view import ProtoView
from flowbook.runtime.step_stats import StepStats


@dataclass
class GPUOptions(ProtoView):
    """GPU memory options (used once the GPU device exists)."""

    _PROTO = ("config_pb2", "GPUOptions")

    allow_growth: bool = False
    per_process_gpu_memory_fraction: float = 0.0
    visible_device_list: str = ""


@dataclass
class OptimizerOptions(ProtoView):
    """Which graph-optimiser passes run (``flowbook.runtime.optimize.optimizer``), with TensorFlow 1's names.

    ``opt_level`` ``L1`` (the default) runs constant folding, common
    subexpression elimination and the removal of identities; ``L0`` none.  A
    ``do_*`` flag set to True turns its pass on at ``L0``; set to False, off at
    ``L1`` (TensorFlow ignores False there).  ``global_jit_level`` is accepted
    and ignored (flowbook has no XLA).

    >>> OptimizerOptions(opt_level=OptimizerOptions.L0).opt_level
    -1
    """

    _PROTO = ("config_pb2", "OptimizerOptions")

    L1 = 0  # the default level: every pass
    L0 = -1  # no pass, unless a do_* flag asks for it
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2  # global_jit_level values

    do_common_subexpression_elimination: bool | None = None  # None: as opt_level says
    do_constant_folding: bool | None = None  # None: as opt_level says
    opt_level: int = 0
    global_jit_level: int = 0


@dataclass
class RewriterConfig(ProtoView):
    """Grappler's rewriter options, of which flowbook reads ``memory_optimization``.

    ``NO_MEM_OPT`` turns off the memory plan's buffer reuse
    (``flowbook.runtime.memory_plan``); every other value leaves it on (values
    are still freed at their last use either way).

    >>> RewriterConfig(memory_optimization=RewriterConfig.NO_MEM_OPT).memory_optimization
    1
    """

    _PROTO = ("rewriter_config_pb2", "RewriterConfig")

    DEFAULT_MEM_OPT, NO_MEM_OPT, MANUAL, HEURISTICS = 0, 1, 2, 3  # TensorFlow's values

    memory_optimization: int = 0


@dataclass
class GraphOptions(ProtoView):
    """Graph options of a session; ``optimizer_options`` is the one flowbook reads.

    >>> GraphOptions().optimizer_options.opt_level
    0
    """

    _PROTO = ("config_pb2", "GraphOptions")

    optimizer_options: OptimizerOptions = field(default_factory=OptimizerOptions)
    rewrite_options: RewriterConfig = field(default_factory=RewriterConfig)  # memory_optimization
    infer_shapes: bool = False
    place_pruned_graph: bool = False
    build_cost_model: int = 0


@dataclass
class ConfigProto(ProtoView):
    """Session configuration.

    ``inter_op_parallelism_threads`` bounds how many heavy kernels of one run
    execute at once on the pool (0: as many as the pool has threads);
    ``intra_op_parallelism_threads`` how many threads the BLAS under numpy uses
    (process-wide; 0: flowbook's default, see ``flowbook/runtime/blas.py``).

    >>> ConfigProto(allow_soft_placement=True).allow_soft_placement
    True
    """

    _PROTO = ("config_pb2", "ConfigProto")

    allow_soft_placement: bool = False
    log_device_placement: bool = False
    inter_op_parallelism_threads: int = 0
    intra_op_parallelism_threads: int = 0
    device_count: dict[str, int] = field(default_factory=dict)
    gpu_options: GPUOptions = field(default_factory=GPUOptions)
    check_numerics: bool = False  # flowbook: stop every run at the first op producing NaN/Inf
    graph_options: GraphOptions = field(default_factory=GraphOptions)  # the optimiser's passes
    # a cluster session's deadline for every step not given one by RunOptions (0: none)
    operation_timeout_in_ms: int = 0


@dataclass
class RunOptions(ProtoView):
    """Options for one ``Session.run``: a deadline, the trace level, the NaN guard.

    >>> RunOptions.FULL_TRACE
    3
    """

    _PROTO = ("config_pb2", "RunOptions")

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    trace_level: int = 0  # FULL_TRACE (any level but NO_TRACE) fills RunMetadata.step_stats
    timeout_in_ms: int = 0  # 0: no deadline; else DeadlineExceededError past it
    output_partition_graphs: bool = False
    check_numerics: bool = False  # flowbook: stop at the first op producing NaN/Inf


@dataclass
class RunMetadata(ProtoView):
    """What a run reports back when asked (per-node step stats when traced)."""

    _PROTO = ("config_pb2", "RunMetadata")

    step_stats: StepStats = field(default_factory=StepStats)
    partition_graphs: list[Any] = field(default_factory=list)
    cost_graph: Any = None
