"""flowbook: a Jupyter-first dataflow-graph engine with TensorFlow 1's API.

``import flowbook as tf`` runs classic TF1 graph-mode code: build a graph,
then ``Session.run`` prunes it to what the fetches need and executes it on a
multithreaded scheduler over numpy kernels.

    >>> import flowbook as tf
    >>> a = tf.constant(3.0); b = tf.constant(4.0)
    >>> with tf.Session() as sess:
    ...     float(sess.run(a * b))
    12.0
"""

import importlib as _importlib
import sys as _sys
import typing as _typing

from flowbook import debug, distributed

# eager: its NaN guard is the observer RunOptions(check_numerics=True) asks for
# eager but light: the _Send/_Recv ops; the cluster machinery loads on first use
# fills hooks.import_graph_def
# eager: the tracer RunOptions(trace_level=FULL_TRACE) asks for
from flowbook.api import (
    compat,
    debugging,
    io,
    linalg,
    manip,
    math,
    nn,
    random,
    sparse,
    spectral,
    strings,
)
from flowbook.api.compat import (
    control_flow_v2_enabled,
    disable_control_flow_v2,
    disable_eager_execution,
    disable_resource_variables,
    disable_tensor_equality,
    disable_v2_behavior,
    disable_v2_tensorshape,
    executing_eagerly,
    executing_eagerly_outside_functions,
    resource_variables_enabled,
)
from flowbook.api.tf_names import *
from flowbook.api.tf_names import tables_initializer
from flowbook.autodiff.custom_gradient import custom_gradient
from flowbook.autodiff.gradients import gradients, hessians
from flowbook.framework import dtypes, errors, hooks, nest
from flowbook.framework import versions as version
from flowbook.framework.devices import DeviceSpec
from flowbook.framework.dtypes import (
    DType,
    as_dtype,
    bool,
    bool_ref,
    complex64,
    complex64_ref,
    complex128,
    complex128_ref,
    double,
    double_ref,
    float16,
    float16_ref,
    float32,
    float32_ref,
    float64,
    float64_ref,
    half,
    half_ref,
    int8,
    int8_ref,
    int16,
    int16_ref,
    int32,
    int32_ref,
    int64,
    int64_ref,
    string,
    string_ref,
    uint8,
    uint8_ref,
    uint16,
    uint16_ref,
)
from flowbook.framework.errors import OpError
from flowbook.framework.grad_overrides import RegisterGradient
from flowbook.framework.graph import (
    Graph,
    GraphKeys,
    add_to_collection,
    add_to_collections,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    reset_default_graph,
    set_random_seed,
)
from flowbook.framework.registry import no_gradient
from flowbook.framework.registry import no_gradient as NotDifferentiable
from flowbook.framework.tensor import Operation, Tensor
from flowbook.framework.tensor_shape import Dimension, TensorShape
from flowbook.framework.versions import (
    COMPILER_VERSION,
    CXX11_ABI_FLAG,
    CXX_VERSION,
    GIT_VERSION,
    GRAPH_DEF_VERSION,
    GRAPH_DEF_VERSION_MIN_CONSUMER,
    GRAPH_DEF_VERSION_MIN_PRODUCER,
    MONOLITHIC_BUILD,
    VERSION,
)
from flowbook.graph_io import graph_def_import
from flowbook.graph_io import tfrecord as python_io
from flowbook.graph_io.graph_def import import_graph_def
from flowbook.graph_io.tensor_protos import make_ndarray, make_tensor_proto
from flowbook.nets import layers
from flowbook.nets.losses import losses
from flowbook.notebook import load_ipython_extension, unload_ipython_extension
from flowbook.ops.array import array_ops
from flowbook.ops.array.array_ops import *
from flowbook.ops.array.broadcast_ops import *
from flowbook.ops.array.compat_ops import *
from flowbook.ops.array.constant_op import constant, convert_to_tensor, placeholder
from flowbook.ops.array.identity_ops import *
from flowbook.ops.array.partition_ops import *
from flowbook.ops.array.placeholder_ops import *
from flowbook.ops.array.select_v2_ops import *
from flowbook.ops.array.sequence_ops import *
from flowbook.ops.array.set_ops import *
from flowbook.ops.array.space_ops import (
    batch_to_space,
    batch_to_space_nd,
    depth_to_space,
    space_to_batch,
    space_to_batch_nd,
    space_to_depth,
)
from flowbook.ops.control_flow.control_flow import case, cond, while_loop
from flowbook.ops.control_flow.control_flow_ops import group, no_op, tuple, with_dependencies
from flowbook.ops.control_flow.functional import foldl, foldr, map_fn, scan
from flowbook.ops.control_flow.tensor_array import TensorArray
from flowbook.ops.debugging.assert_ops import *
from flowbook.ops.debugging.debug_ops import Print, add_check_numerics_ops, check_numerics, print
from flowbook.ops.debugging.script_ops import *
from flowbook.ops.image.patch_ops import *
from flowbook.ops.io import queues as queue
from flowbook.ops.io.example_ops import *
from flowbook.ops.io.parsing_ops import *
from flowbook.ops.io.queues import (
    FIFOQueue,
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
    container,
    count_up_to,
)
from flowbook.ops.io.reader_ops import *
from flowbook.ops.linalg.einsum_ops import *
from flowbook.ops.linalg.linalg_decomp import *
from flowbook.ops.linalg.linalg_ops import *
from flowbook.ops.linalg.matrix_diag_ops import *
from flowbook.ops.math import math_ops, operators
from flowbook.ops.math.clip_ops import *
from flowbook.ops.math.complex_ops import *
from flowbook.ops.math.composite_ops import accumulate_n, confusion_matrix, unsorted_segment_sqrt_n
from flowbook.ops.math.counting_ops import *
from flowbook.ops.math.fft_ops import *
from flowbook.ops.math.math_ops import *
from flowbook.ops.math.scan_ops import *
from flowbook.ops.math.segment_ops import *
from flowbook.ops.math.sort_ops import argsort, sort
from flowbook.ops.math.special_ops import (
    betainc,
    digamma,
    erf,
    erfc,
    igamma,
    igammac,
    lbeta,
    lgamma,
    polygamma,
    zeta,
)
from flowbook.ops.nn import nn_ops
from flowbook.ops.nn.fake_quant_ops import *
from flowbook.ops.nn.nn_conv import required_space_to_batch_paddings
from flowbook.ops.random import random_ops
from flowbook.ops.random.multinomial_ops import *
from flowbook.ops.random.random_ops import *
from flowbook.ops.sparse.sparse_ops import *
from flowbook.ops.state.accumulators import ConditionalAccumulator, ConditionalAccumulatorBase
from flowbook.ops.state.scatter_ops import *
from flowbook.ops.state.state_ops import assign, assign_add, assign_sub, is_variable_initialized
from flowbook.ops.strings.string_ops import *
from flowbook.platform import gfile
from flowbook.platform import tf_logging as logging
from flowbook.platform.tf_logging import get_logger
from flowbook.profiling import timeline
from flowbook.profiling import tracing as profiling
from flowbook.profiling.optimized_plan import optimized_plan
from flowbook.profiling.tracing import profile
from flowbook.runtime import gpu, session
from flowbook.runtime.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from flowbook.runtime.observers import Observer
from flowbook.runtime.session import InteractiveSession, Session, get_default_session, observe
from flowbook.variables import initializers
from flowbook.variables.initializers import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    orthogonal_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    uniform_unit_scaling_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from flowbook.variables.variable_scope import (
    AUTO_REUSE,
    VariableScope,
    get_local_variable,
    get_variable,
    get_variable_scope,
    model_variables,
    no_regularizer,
    variable_scope,
)
from flowbook.variables.variables import (
    Variable,
    all_variables,
    assert_variables_initialized,
    global_variables,
    global_variables_initializer,
    initialize_all_variables,
    initialize_local_variables,
    initialize_variables,
    local_variables,
    local_variables_initializer,
    moving_average_variables,
    report_uninitialized_variables,
    trainable_variables,
    variables_initializer,
)


def show(target: _typing.Any = None, height: int = 520, present: bool = False) -> _typing.Any:
    """Display the live graph widget (default graph, a Graph, a Stepper, or a plan's rewrite
    from ``optimized_plan``); returns it.

    See :func:`flowbook.notebook.widget.show`.  ``fb.show()`` as a cell's last line shows one widget.
    """
    from flowbook.notebook.widget import show as _show  # lazy: anywidget is slow to import

    return _show(target, height, present)


# TF1's protocol-buffer classes, TensorFlow's own messages from the tensorboard package,
# loaded on first use (tensorboard is slow to import): name -> its module in tensorboard.compat.proto
_PROTOS = {
    "NodeDef": "node_def_pb2", "GraphDef": "graph_pb2", "AttrValue": "attr_value_pb2",
    "NameAttrList": "attr_value_pb2", "Event": "event_pb2", "SessionLog": "event_pb2",
    "LogMessage": "event_pb2", "Summary": "summary_pb2", "SummaryMetadata": "summary_pb2",
    "HistogramProto": "summary_pb2",
}  # fmt: skip


# Namespaces seldom needed to build and run a graph, loaded on first use (PEP 562) to keep
# ``import flowbook`` fast: name -> (module, its attribute or None for the module itself).
# None of them registers an op, fills a hook or an observer factory (those stay eager above).
_LAZY = {  # (tf.tuple and tf.bool shadow the builtins here: no annotation)
    "app": ("flowbook.platform.app", None), "flags": ("flowbook.platform.flags", None),
    "contrib": ("flowbook.nets.contrib", None), "data": ("flowbook.data", None),
    "datasets": ("flowbook.data.datasets", None), "train": ("flowbook.train", None),
    "test": ("flowbook.test_util", None), "gradient_checker": ("flowbook.autodiff.gradient_checker", None),
    "summary": ("flowbook.summary", None), "test_util": ("flowbook.test_util", None),
    "saved_model": ("flowbook.train.saved_model", None),
    "image": ("flowbook.api.image", None),
    "live_plots": ("flowbook.summary.live_plots", None),
    **{n: ("flowbook.summary", n) for n in (
        "histogram_summary", "merge_all_summaries", "merge_summary", "scalar_summary")},
}  # fmt: skip


def __getattr__(name: str) -> _typing.Any:
    if name in _LAZY:  # first use of a lazy namespace: import it, then keep it as a plain global
        module, attribute = _LAZY[name]
        value = _importlib.import_module(module)
        value = value if attribute is None else getattr(value, attribute)
        globals()[name] = value
        return value
    if name == "GraphWidget":  # imported on demand: anywidget is not needed to build graphs
        from flowbook.notebook.widget import GraphWidget

        return GraphWidget
    if name in _PROTOS:  # tf.NodeDef (device functions), tf.Summary...
        return getattr(_importlib.import_module("tensorboard.compat.proto." + _PROTOS[name]), name)
    raise AttributeError(f"module 'flowbook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


signal = spectral  # tf.signal's transforms are tf.spectral's
initializers.tables_initializer = tables_initializer  # tf.initializers' name for it
compat.v1 = _sys.modules[__name__]  # tf.compat.v1 is flowbook: TF1's API is all it has
operators.attach(Tensor)
operators.attach(Variable)

__version__ = "0.1.0"
