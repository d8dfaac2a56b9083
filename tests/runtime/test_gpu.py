"""The GPU path: placement, copy nodes, device timings and memory, on a simulated GPU.

``flowbook.runtime.gpu_sim.simulate_gpu()`` registers a GPU whose arrays are numpy
behind a device boundary (a host array meeting a device array is a
TypeError, as in CuPy), so everything placement, the plan, the executor and
the session do for a GPU runs here on any machine.  Values must equal a
CPU-only session's bit for bit (the same numpy computes both): the op tables
of ``test_ops_array``, ``test_ops_math``, ``test_gradients_array`` and
``test_nn_blocks`` are run on both, and the rows must reach every op type of
the registry.  The last section runs on a real GPU through CuPy and skips
cleanly without one.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import flowbook as fb
from flowbook.debug import NanGuard, Stepper
from flowbook.framework import devices
from flowbook.framework.devices import CPU, gpu_available, local_devices
from flowbook.framework.errors import InvalidArgumentError, ResourceExhaustedError
from flowbook.framework.registry import OPS
from flowbook.ops._builder import make, make1
from flowbook.ops.math import math_ops, reduction_ops
from flowbook.ops.state.training_ops import apply_gradient_descent
from flowbook.runtime.gpu_sim import SimArray, SimulatedOutOfMemoryError, simulate_gpu
from flowbook.runtime.placement import CopyOp, Placer
from tests.autodiff import test_gradients_array, test_gradients_math
from tests.ops import test_array_ops as test_ops_array
from tests.ops import test_math_ops as test_ops_math
from tests.ops import test_nn_ops as test_nn_blocks
from tests.profiling import test_profiling

CPU_ONLY = fb.ConfigProto(device_count={"GPU": 0})
SOFT = fb.ConfigProto(allow_soft_placement=True)
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture
def gpu():
    """A simulated GPU, registered for the test: sessions made inside place ops on it."""
    with simulate_gpu() as device:
        yield device


def only_plan(sess: fb.Session):
    """The one plan a session built so far."""
    (plan,) = sess._plans.values()
    return plan


def placed(sess: fb.Session) -> dict[str, str]:
    """Op name -> short device name ("CPU:0", "GPU:0") over every plan of ``sess``."""
    out = {}
    for plan in sess._plans.values():
        for op, d in zip(plan.ops, plan.devices):
            out[op.name] = d.name.rpartition("/device:")[2]
    return out


# ------------------------------------------------------- values: the registry on both
def _array_row(build, inputs):
    args = [fb.placeholder(fb.as_dtype(a.dtype), [None] * np.ndim(a)) for a in inputs]
    return build(*args), dict(zip(args, inputs))


def _array_const_row(build, inputs):
    return build(*[fb.constant(a) for a in inputs]), None


def _array_grad_row(build, x0):
    x = fb.placeholder(fb.float64, [None] * np.ndim(x0))
    y = build(x)
    return [y, *fb.gradients(y, [x])], {x: x0}


def _math_dtype(row):
    for dt in (fb.float32, fb.int64, fb.bool, fb.float64):
        if dt in row.dtypes:
            return dt
    return sorted(row.dtypes, key=lambda d: d.name)[0]


def _math_input(dt, shape, domain):
    """A placeholder and its value; bools are made on the device from floats (fed bools and
    int32 stay on the host: placement rule 4)."""
    value = test_ops_math.values(dt, shape, domain)
    if dt is fb.bool:
        x = fb.placeholder(fb.float32, [None] * len(shape))
        return x > 0.5, {x: value.astype(np.float32)}
    x = fb.placeholder(dt, [None] * len(shape))
    return x, {x: value}


def _binary_row(row, op_type=None):
    _, domain = test_ops_math.BINARY_REF[row.op_type]
    dt = _math_dtype(row)
    (x, fx), (y, fy) = _math_input(dt, (2, 3), domain), _math_input(dt, (3,), domain)
    t = fb.get_default_graph().create_op(op_type or row.op_type, (x, y)).outputs[0]
    return t, {**fx, **fy}


def _unary_row(row):
    _, domain = test_ops_math.UNARY_REF[row.op_type]
    x, feed = _math_input(_math_dtype(row), (3, 2), domain)
    return fb.get_default_graph().create_op(row.op_type, (x,)).outputs[0], feed


def _binary_grad_row(op_type):
    x0, y0 = test_gradients_math.BINARY_DOMAINS[op_type]((2, 3), (3,))
    x, y = fb.placeholder(fb.float64, [None, None]), fb.placeholder(fb.float64, [None])
    z = fb.get_default_graph().create_op(op_type, (x, y)).outputs[0]
    return [z, *fb.gradients(z, [x, y])], {x: x0, y: y0}


def _reduction_row(row, keep_dims):
    v = np.arange(24.0).reshape(2, 3, 4) % 5 - 1
    x, axes = fb.placeholder(fb.float64, [None, None, None]), fb.placeholder(fb.int32, [None])
    if fb.float64 in row.dtypes:
        t = make1(row.op_type, (x, axes), {"keep_dims": keep_dims})
        fetches = [t, *fb.gradients(t, [x])]
    else:  # All, Any: of a mask made on the device
        fetches = [make1(row.op_type, (x > 0, axes), {"keep_dims": keep_dims})]
    return fetches, {x: v, axes: np.array([0, -1], np.int32)}


def _nn_row(fn, shapes, wrt):
    rng = np.random.default_rng(5)
    values = [
        rng.dirichlet(np.ones(4), 3) if s == "dist" else rng.standard_normal(s) for s in shapes
    ]
    phs = [fb.placeholder(fb.float64, [None] * v.ndim) for v in values]
    y = fn(*phs)
    return [y, *fb.gradients(y, [phs[wrt]])], dict(zip(phs, values))


def _seeded_random_row():
    shape = fb.placeholder(fb.int32, [None])
    draws = [
        fb.random_uniform(shape, seed=1),
        fb.random_normal(shape, seed=2),
        fb.truncated_normal(shape, seed=3),
        fb.random_uniform(shape, maxval=10, dtype=fb.int32, seed=4),
        fb.random_shuffle(fb.range(10.0), seed=5),
        fb.multinomial(fb.zeros([2, 3]) + fb.cast(shape[0], fb.float32), 6, seed=6),
    ]
    return draws, {shape: np.array([3, 4], np.int32)}


def _stateless_random_row():
    shape = fb.placeholder(fb.int32, [None])
    seed = fb.placeholder(fb.int64, [2])
    draws = [
        fb.random.stateless_uniform(shape, seed),
        fb.random.stateless_normal(shape, seed, dtype=fb.float64),
        fb.random.stateless_truncated_normal(shape, seed),
        fb.random.stateless_uniform(shape, seed, 0, 7, fb.int64),
        fb.random.stateless_uniform(shape, seed, None, None, fb.int64),
    ]
    return draws, {shape: np.array([3, 4], np.int32), seed: np.array([5, -6], np.int64)}


def _misc_row():
    a = fb.placeholder(fb.float64, [None, None])
    b = np.array([[2.0, 1.0], [1.0, 3.0]])
    out = [
        fb.matmul(a, a, transpose_b=True),
        fb.matrix_inverse(a),
        fb.matrix_determinant(a),
        *fb.qr(a),
        fb.matmul(fb.stack([a, a]), fb.stack([a, a])),
        fb.add_n([a, a, a]),
        fb.check_numerics(a, "bad"),
        fb.cast(a, fb.int32),
        fb.nn.softmax(a),
        fb.nn.log_softmax(a),
        fb.nn.relu(a),
        fb.nn.relu6(a),
        fb.nn.elu(a),
        fb.nn.softplus(a),
        fb.nn.selu(a),
        fb.nn.softsign(a),
        fb.nn.leaky_relu(a),
        fb.argmax(a, 1),
        fb.argmin(a, 0),
        fb.where(a > 1.5),
        fb.one_hot([0, 1], 3),
    ]
    return out, {a: b}


def _variable_row():
    v = fb.Variable(np.arange(4.0), name="v")
    up = [
        fb.assign_add(v, [1.0, 1.0, 1.0, 1.0]),
        fb.assign_sub(v, [0.5, 0.5, 0.5, 0.5]),
        apply_gradient_descent(v, 0.25, [1.0, 2.0, 3.0, 4.0]),
        fb.is_variable_initialized(v),
    ]
    with fb.control_dependencies(up):
        out = fb.identity(v.read_value() * 2.0)
    return [out, v.assign(v * 3.0), fb.group(*up)], None, [v.initializer]


def _long_tail_row():
    """Ops the gradient rows do not reach: variable scatters and in_top_k."""
    v = fb.Variable(np.arange(6.0).reshape(3, 2), name="v")
    up = fb.scatter_update(v, [2], [[7.0, 8.0]])
    with fb.control_dependencies([up]):
        add = fb.scatter_add(v, [0, 0], np.ones((2, 2)))
    with fb.control_dependencies([add]):
        sub = fb.scatter_sub(v, 1, [1.0, 1.0])
    ranked = fb.nn.in_top_k(np.array([[0.1, 0.5, 0.5], [0.9, 0.2, 0.3]], np.float32), [2, 1], 1)
    return [sub, ranked], None, [v.initializer]


def _compat_tail_row():
    """TF1's compatibility tail: variable scatters, tensor scatters, FFTs, fake quant."""
    v = fb.Variable(np.arange(1.0, 7.0).reshape(3, 2), name="v")
    done = []
    for f in (fb.scatter_mul, fb.scatter_div, fb.scatter_min, fb.scatter_max):
        with fb.control_dependencies(done[-1:]):
            done.append(f(v, [2, 0, 2], np.full((3, 2), 1.5)))
    for f in (fb.scatter_nd_update, fb.scatter_nd_add, fb.scatter_nd_sub):
        with fb.control_dependencies(done[-1:]):
            done.append(f(v, [[1, 0], [1, 0]], [2.0, 3.0]))
    x = fb.constant(np.linspace(-1.0, 1.0, 12).reshape(3, 4), fb.float64)
    outs = [
        f(x, [[0, 1], [2, 3], [0, 1]], [5.0, -5.0, 0.5])
        for f in (
            fb.tensor_scatter_nd_update,
            fb.tensor_scatter_nd_add,
            fb.tensor_scatter_nd_sub,
            fb.tensor_scatter_nd_min,
            fb.tensor_scatter_nd_max,
        )
    ]
    z = fb.complex(x, x * 0.5)
    outs += [f(fb.reshape(z, [1, 3, 4])) for f in (fb.fft, fb.ifft, fb.fft2d, fb.ifft2d)]
    outs += [f(fb.reshape(z, [1, 3, 4])) for f in (fb.fft3d, fb.ifft3d)]
    q = fb.constant(np.linspace(-3.0, 3.0, 12).reshape(3, 4), fb.float32)
    fq = fb.fake_quant_with_min_max_args(q, -1.0, 2.0, 4) + fb.fake_quant_with_min_max_vars(
        q, -2.0, 1.0
    )
    fq += fb.fake_quant_with_min_max_vars_per_channel(
        q, [-1.0, 0.0, -2.0, -0.5], [1.0, 2.0, 0.5, 3.0]
    )
    outs += [fq, *fb.gradients(fb.reduce_sum(fq * fq), q)]
    return [done[-1], *outs], None, [v.initializer]


def _tfmath_row():
    """tf.math's complex numbers and the binary special functions (not table rows)."""
    z = fb.complex(fb.constant([[1.0, -2.0], [0.5, 3.0]]), fb.constant([0.5, -1.5]))
    q = fb.constant([0.5, 2.0, 7.5], fb.float64)
    special = [fb.zeta(3.0, q), fb.polygamma(1.0, q), fb.igamma(2.0, q), fb.igammac(2.0, q)]
    special.append(fb.betainc(2.0, 3.0, q / 8.0))
    return [z, fb.real(z), fb.imag(z), fb.angle(z), *special], None


def _activation_grad_row():
    """The activations' gradient ops (ReluGrad, EluGrad...) and their own gradients."""
    a = fb.constant([[-1.5, 0.5, 7.0], [2.0, -0.25, 3.0]])
    acts = [fb.nn.relu, fb.nn.relu6, fb.nn.elu, fb.nn.selu, fb.nn.softplus, fb.nn.leaky_relu]
    grads = [fb.gradients(fb.reduce_sum(f(a) ** 2), a)[0] for f in acts]
    return [*grads, *(fb.gradients(fb.reduce_sum(g**2), a)[0] for g in grads)], None


def _cwise_grad_row():
    """TensorFlow's element-wise gradient ops (TanhGrad, SigmoidGrad...) and their gradients."""
    from flowbook.ops._builder import make1
    from flowbook.ops.math.cwise_grad_ops import ROWS

    y = fb.constant([[0.2, 0.5, 0.9], [0.3, 0.7, 0.4]])
    dy = fb.constant([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    outs = [make1(r.op_type, (y, dy) if r.inputs[0] == "y" else (dy, y)) for r in ROWS]
    return [*outs, *(g for o in outs for g in fb.gradients(fb.reduce_sum(o**2), [y, dy]))], None


DIFF_ROWS = (
    [(f"array/{c[0]}", lambda c=c: _array_row(c[1], c[3])) for c in test_ops_array.CASES]
    + [
        (f"array-const/{c[0]}", lambda c=c: _array_const_row(c[1], c[3]))
        for c in test_ops_array.CASES
    ]
    + [(f"source/{c[0]}", lambda c=c: (c[1](), None)) for c in test_ops_array.SOURCES]
    + [
        (f"grad/{c[0]}", lambda c=c: _array_grad_row(c[1], c[2]))
        for c in test_gradients_array.CASES
    ]
    + [(f"binary/{r.op_type}", lambda r=r: _binary_row(r)) for r in math_ops.BINARY]
    + [("binary/AddV2", lambda: _binary_row(math_ops.BINARY[0], "AddV2"))]
    + [(f"unary/{r.op_type}", lambda r=r: _unary_row(r)) for r in math_ops.UNARY]
    + [
        (f"binary-grad/{t}", lambda t=t: _binary_grad_row(t))
        for t in sorted(test_gradients_math.BINARY_DOMAINS)
    ]
    + [
        (f"reduce/{r.op_type}/{kd}", lambda r=r, kd=kd: _reduction_row(r, kd))
        for r in reduction_ops.REDUCTIONS
        for kd in (False, True)
    ]
    + [(f"nn/{k}", lambda v=v: _nn_row(*v)) for k, v in test_nn_blocks.GRADIENT_CASES.items()]
    + [("random/seeded", _seeded_random_row), ("random/stateless", _stateless_random_row)]
    + [("misc", _misc_row), ("variables", _variable_row)]
    + [("long-tail", _long_tail_row), ("tf.math", _tfmath_row)]
    + [("compat-tail", _compat_tail_row)]
    + [("activation-grads", _activation_grad_row)]
    + [("cwise-grads", _cwise_grad_row)]
    + [("bitcast", lambda: ([fb.bitcast(np.arange(4.0, dtype=np.float32), fb.int16)], None))]
    + [("svd", lambda: (list(fb.svd(np.diag([3.0, -4.0]))), None))]
    + [("control-flow", lambda: _control_flow_row())]  # defined below
    + [("tensor-arrays", lambda: _tensor_array_row())]
    + [("image", lambda: _image_row())]
)


def _image_row():
    """tf.image's kernels: the four resizes, their gradients, HSV and the colour adjustments."""
    x = fb.constant(np.linspace(0.0, 1.0, 120, dtype=np.float32).reshape(2, 4, 5, 3))
    sized = [
        fb.image.resize_bilinear(x, [3, 7]),
        fb.image.resize_nearest_neighbor(x, [7, 3], half_pixel_centers=True),
        fb.image.resize_bicubic(x, [6, 6], align_corners=True),
        fb.image.resize_area(x, [3, 2]),
    ]
    grads = fb.gradients(fb.add_n([fb.reduce_sum(s * s) for s in sized[:3]]), x)
    color = [
        fb.image.rgb_to_hsv(x),
        fb.image.hsv_to_rgb(x),
        fb.image.adjust_hue(x, 0.2),
        fb.image.adjust_saturation(x, 1.5),
        fb.image.adjust_contrast(x, 0.7),
    ]
    return [*sized, *grads, *color, *fb.gradients(fb.reduce_sum(color[-1] ** 2), x)], None


def _tensor_array_row():
    """map_fn and scan (TensorArrays on the host, their elements computed on the GPU), grads."""
    x = fb.placeholder(fb.float32, [4, 3])
    m = fb.map_fn(lambda r: fb.tanh(r) * 2.0, x)
    c = fb.scan(lambda a, r: a * 0.5 + r, x, initializer=fb.ones([3]), reverse=True)
    (gx,) = fb.gradients(fb.reduce_sum(m * c), x)
    return [m, c, gx], {x: np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)}


def _control_flow_row():
    """A cond, a while loop with a cond inside, and a ControlTrigger, on fed values."""
    x = fb.placeholder(fb.float32, [3])
    y = fb.cond(fb.reduce_sum(x) > 0.0, lambda: x * 2.0, lambda: x - 1.0)
    i, acc = fb.while_loop(
        lambda i, a: i < 4,
        lambda i, a: (i + 1, fb.cond(i < 2, lambda: a + x, lambda: a * 0.5)),
        [0, fb.zeros([3])],
    )
    t = make("ControlTrigger", [])
    (gx,) = fb.gradients(fb.reduce_sum(acc * acc) + fb.reduce_sum(y), x)
    return [y, i, acc, t, gx], {x: np.array([1.0, -0.5, 2.0], np.float32)}


def _run_both(row):
    """The row's fetches run in a CPU-only session and on the simulated GPU."""
    built = row()
    fetches, feed = built[0], built[1]
    init = built[2] if len(built) > 2 else []
    with fb.Session(config=CPU_ONLY) as s:
        s.run(init)
        on_cpu = s.run(fetches, feed)
    with simulate_gpu(), fb.Session() as s:
        s.run(init)
        on_gpu = s.run(fetches, feed)
        types = {
            op.type
            for plan in s._plans.values()
            for op, d in zip(plan.ops, plan.devices)
            if d is not CPU
        }
    return (on_cpu, on_gpu), types


def _assert_same(cpu, gpu, where=""):
    if isinstance(cpu, list | tuple):
        assert isinstance(gpu, list | tuple) and len(gpu) == len(cpu), where
        for k, (c, g) in enumerate(zip(cpu, gpu)):
            _assert_same(c, g, f"{where}[{k}]")
        return
    assert type(gpu) is type(cpu) or (
        isinstance(cpu, np.generic) and isinstance(gpu, np.generic)
    ), f"{where}: {type(gpu).__name__} != {type(cpu).__name__}"
    if cpu is None:
        return
    c, g = np.asarray(cpu), np.asarray(gpu)
    assert type(g) is np.ndarray and g.dtype == c.dtype and g.shape == c.shape, where
    np.testing.assert_array_equal(g, c, err_msg=where)


@pytest.mark.parametrize("row", [r[1] for r in DIFF_ROWS], ids=[r[0] for r in DIFF_ROWS])
def test_values_on_the_gpu_equal_the_cpu_run(row):
    (cpu, gpu_values), _ = _run_both(row)
    _assert_same(cpu, gpu_values)


STRING_OPS = (
    "StringJoin",
    "StringStrip",
    "StringLength",
    "StringLower",
    "StringUpper",
    "EncodeBase64",
    "DecodeBase64",
    "RegexReplace",
    "Substr",
    "StringToNumber",
    "AsString",
    "ReduceJoin",
    "StringToHashBucketFast",
    "StringToHashBucket",
    "StringToHashBucketStrong",
    "StringSplit",
    "EditDistance",
)
_ACCUMULATOR_OPS = (
    "ConditionalAccumulator",
    "AccumulatorApplyGradient",
    "AccumulatorTakeGradient",
    "AccumulatorSetGlobalStep",
    "AccumulatorNumAccumulated",
)
# op types the rows never run on the GPU, and why
NOT_ON_GPU = {
    "Placeholder": "fed, never executed",
    "Print": "host only",
    "PrintV2": "host only",
    "Assert": "host only",
    "PyFunc": "host only",
    "PyFuncStateless": "host only",
    "ScalarSummary": "strings: host only",
    "HistogramSummary": "strings: host only",
    "MergeSummary": "strings: host only",
    "ImageSummary": "strings: host only",
    "AudioSummaryV2": "strings: host only",
    "TensorSummaryV2": "strings: host only",
    "BroadcastGradientArgs": "shape arithmetic (int32): on the host",
    "BroadcastArgs": "shape arithmetic (int32): on the host",
    "ConcatOffset": "shape arithmetic (int32): on the host",
    "InvertPermutation": "shape arithmetic (int32): on the host",
    "Shape": "reads its input's shape only: on the host",
    "Size": "reads its input's shape only: on the host",
    "Rank": "reads its input's shape only: on the host",
    "LogUniformCandidateSampler": "a data-dependent draw loop: host only",
    "UniformCandidateSampler": "a data-dependent draw loop: host only",
    "SegmentProd": "host only: CuPy has no multiply.at",
    "MakeIterator": "tf.data: host only",
    "IteratorGetNext": "tf.data: host only",
    "DecodeCSV": "strings: host only",
    "DecodeRaw": "strings: host only",
    "ParseExample": "strings: host only",
    "ReadFile": "files: host only",
    "WriteFile": "files: host only",
    "UnsortedSegmentProd": "host only: CuPy has no multiply.at",
    "Stack": "a loop gradient's stack: its handle is a string, host only",
    "StackPush": "a string handle: host only",
    "StackPop": "a string handle: host only",
    **dict.fromkeys(
        ["StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"],
        "TensorFlow's loop-gradient stack: a resource handle, host only",
    ),
    **dict.fromkeys(
        [
            "VarHandleOp",
            "ReadVariableOp",
            "AssignVariableOp",
            "AssignAddVariableOp",
            "AssignSubVariableOp",
            "VarIsInitializedOp",
            "ResourceApplyGradientDescent",
        ],
        "TensorFlow 2's resource variables, imported from its GraphDefs: host only",
    ),
    **dict.fromkeys(
        [
            "SaveV2",
            "RestoreV2",
            "MergeV2Checkpoints",
            "ShardedFilename",
            "ShardedFilespec",
            "StaticRegexFullMatch",
        ],
        "checkpoint files and their names: host only",
    ),
    **{t: "a TensorArray's string handle: host only" for t in OPS if t.startswith("TensorArray")},
    "FIFOQueueV2": "queues and readers: session state, host only",
    **dict.fromkeys(_ACCUMULATOR_OPS, "gradient accumulators: session state, host only"),
    "PaddingFIFOQueueV2": "queues and readers: session state, host only",
    "RandomShuffleQueueV2": "queues and readers: session state, host only",
    "PriorityQueueV2": "queues and readers: session state, host only",
    "QueueEnqueueV2": "queues and readers: session state, host only",
    "QueueEnqueueManyV2": "queues and readers: session state, host only",
    "QueueDequeueV2": "queues and readers: session state, host only",
    "QueueDequeueManyV2": "queues and readers: session state, host only",
    "QueueDequeueUpToV2": "queues and readers: session state, host only",
    "QueueCloseV2": "queues and readers: session state, host only",
    "QueueSizeV2": "queues and readers: session state, host only",
    "QueueIsClosedV2": "queues and readers: session state, host only",
    "CountUpTo": "queues and readers: session state, host only",
    "TextLineReaderV2": "queues and readers: session state, host only",
    "WholeFileReaderV2": "queues and readers: session state, host only",
    "IdentityReaderV2": "queues and readers: session state, host only",
    "TFRecordReaderV2": "queues and readers: session state, host only",
    "FixedLengthRecordReaderV2": "queues and readers: session state, host only",
    "ReaderReadV2": "queues and readers: session state, host only",
    "ReaderReadUpToV2": "queues and readers: session state, host only",
    "ReaderNumRecordsProducedV2": "queues and readers: session state, host only",
    "ReaderNumWorkUnitsCompletedV2": "queues and readers: session state, host only",
    "ReaderResetV2": "queues and readers: session state, host only",
    "RandomShuffle": "TF's order: a swap loop over Philox words, host only (as TF's kernel)",
    "LoopCond": "a loop's bool predicate: on the host (TF keeps it in host memory)",
    "RefSwitch": "a GraphDef's twin of Switch, same kernel (the control-flow row runs Switch)",
    "RefMerge": "a GraphDef's twin of Merge, same kernel",
    "RefEnter": "a GraphDef's twin of Enter, same kernel",
    "RefExit": "a GraphDef's twin of Exit, same kernel",
    "RefNextIteration": "a GraphDef's twin of NextIteration, same kernel",
    **dict.fromkeys(STRING_OPS, "strings: host only"),
    "CTCGreedyDecoder": "a per-sequence decoding loop: host only",
    **dict.fromkeys(
        [
            "_FusedMatMul",
            "_FusedElementwise",
            "_FusedSum",
            "_FusedSparseSoftmaxCrossEntropyWithLogits",
            "_FusedConv2D",
            "_FusedMaxPoolGrad",
        ],
        "made only by the optimiser, for ops placed on the CPU (tests/runtime/test_optimize_fuse.py)",
    ),
    "Timestamp": "the host's clock: host only",
    **dict.fromkeys(
        ["DecodeJpeg", "DecodeAndCropJpeg", "DecodePng", "DecodeGif", "DecodeBmp", "DecodeImage"],
        "image files (Pillow): host only",
    ),
    "EncodeJpeg": "image files (Pillow): host only",
    "EncodeJpegVariableQuality": "image files (Pillow): host only",
    "EncodePng": "image files (Pillow): host only",
    "ExtractJpegShape": "image files (Pillow): host only",
    "CropAndResize": "host only: a numpy gather kernel",
    "DrawBoundingBoxesV2": "host only: a loop over the boxes",
    "NonMaxSuppressionV3": "a data-dependent output size, a greedy loop: host only",
    "NonMaxSuppressionWithOverlaps": "a data-dependent output size, a greedy loop: host only",
    "SampleDistortedBoundingBoxV2": "a draw loop over attempts: host only",
    "_Send": "a cluster task's Send: host only, tested in tests/distributed/test_dist_sessions.py",
    "_Recv": "a cluster task's Recv: host only, tested in tests/distributed/test_dist_sessions.py",
}


def test_the_rows_run_every_registered_op_type_on_the_gpu():
    ran: set[str] = set()
    for _, row in DIFF_ROWS:
        with fb.Graph().as_default():
            ran |= _run_both(row)[1]
    missing = set(OPS) - ran - set(NOT_ON_GPU)
    assert not missing, sorted(missing)
    host_only = {t for t, why in NOT_ON_GPU.items() if "host only" in why}
    assert not ran & host_only, sorted(ran & host_only)


# the names of inputs that kernels read on the host (shape-like ints and scalars)
HOST_INPUT_NAMES = {
    "shape",
    "perm",
    "dim",
    "axis",
    "reduction_indices",
    "dimension",
    "multiples",
    "dims",
    "paddings",
    "constant_values",
    "begin",
    "end",
    "strides",
    "size",
    "split_dim",
    "size_splits",
    "depth",
    "start",
    "limit",
    "delta",
    "num_segments",
    "input_sizes",
    "filter_sizes",
    "orig_input_shape",
    "minval",
    "maxval",
    "k",
    "block_shape",
    "crops",
    "num",
    "shift",
    "num_samples",
    "nbins",
    "pred",
    "max_size",  # StackV2's bound
    "seed",  # a stateless random op's [2] seed: its Philox key is derived on the host
}


@pytest.mark.parametrize("op_type", sorted(n for n, d in OPS.items() if d.host_inputs))
def test_host_inputs_name_shape_like_arguments(op_type):
    opdef = OPS[op_type]
    names = [opdef.inputs[k] for k in opdef.host_inputs]
    assert set(names) <= HOST_INPUT_NAMES, names
    assert len(set(opdef.host_inputs)) == len(opdef.host_inputs)
    assert not set(opdef.host_inputs) & set(opdef.ref_inputs)


def test_shape_only_inputs_are_those_of_shape_size_and_rank():
    assert {n for n, d in OPS.items() if d.meta_inputs} == {"Shape", "Size", "Rank"}


# ------------------------------------------------------------------------ placement
def _fed_x():
    x = fb.placeholder(fb.float32, [None, 3], name="x")
    return x, {x: np.ones((2, 3), np.float32)}


def _fed_text():
    t = fb.placeholder(fb.string, [], name="text")
    return t, {t: "a"}


def _print_op(x):
    return fb.Print(x, [x], message="x: ", name="op")


def _string_op(x, text):
    return fb.add(text, text, name="op")


def _argmax_equal(x):
    return fb.equal(fb.argmax(x, 1, output_type=fb.int32), fb.constant([0, 0]), name="op")


# (id, device scope, build(x) -> a tensor made by the op named "op", config, its device)
PLACEMENT = [
    ("default-first-gpu", None, lambda x: fb.multiply(x, 2.0, name="op"), None, "GPU:0"),
    ("gpu-scope", "/gpu:0", lambda x: fb.multiply(x, 2.0, name="op"), None, "GPU:0"),
    ("gpu-any", "/gpu:*", lambda x: fb.multiply(x, 2.0, name="op"), None, "GPU:0"),
    ("full-name", f"{GPU0}", lambda x: fb.multiply(x, 2.0, name="op"), None, "GPU:0"),
    ("cpu-scope", "/cpu:0", lambda x: fb.multiply(x, 2.0, name="op"), None, "CPU:0"),
    ("missing-gpu-soft", "/gpu:3", lambda x: fb.multiply(x, 2.0, name="op"), SOFT, "GPU:0"),
    ("host-only-default", None, _print_op, None, "CPU:0"),
    ("host-only-soft", "/gpu:0", _print_op, SOFT, "CPU:0"),
    ("strings-default", None, _string_op, None, "CPU:0"),
    ("strings-soft", "/gpu:0", _string_op, SOFT, "CPU:0"),
    ("shape-on-host", "/gpu:0", lambda x: fb.shape(x, name="op"), None, "CPU:0"),
    ("int32-arithmetic", None, lambda x: fb.add(fb.constant(1), 2, name="op"), None, "CPU:0"),
    ("int64-on-gpu", None, lambda x: fb.add(fb.constant(1, fb.int64), 2, name="op"), None, "GPU:0"),
    ("int32-of-gpu-value", None, _argmax_equal, None, "GPU:0"),
    (
        "int32-random",
        None,
        lambda x: fb.random_uniform([2], maxval=9, dtype=fb.int32, name="op"),
        None,
        "GPU:0",
    ),
]


@pytest.mark.parametrize(
    "scope,build,config,want", [r[1:] for r in PLACEMENT], ids=[r[0] for r in PLACEMENT]
)
def test_placement_rules(gpu, scope, build, config, want):
    (x, fx), (text, ft) = _fed_x(), _fed_text()
    args = (x, text) if build is _string_op else (x,)
    if scope is None:
        t = build(*args)
    else:
        with fb.device(scope):
            t = build(*args)
    with fb.Session(config=config) as s:
        s.run(t, {**fx, **ft} if build is _string_op else fx)
        assert placed(s)["op"] == want


# (id, device scope, build(x)): without soft placement, an InvalidArgumentError
CANNOT_PLACE = [
    ("missing-gpu", "/gpu:3", lambda x: fb.multiply(x, x, name="op"), "available devices are"),
    ("host-only", "/gpu:0", _print_op, "no supported kernel for GPU"),
    ("strings", "/gpu:0", _string_op, "no supported kernel for GPU"),
]


@pytest.mark.parametrize(
    "scope,build,match", [r[1:] for r in CANNOT_PLACE], ids=[r[0] for r in CANNOT_PLACE]
)
def test_no_soft_placement_names_the_op_and_its_line(gpu, scope, build, match):
    (x, fx), (text, ft) = _fed_x(), _fed_text()
    with fb.device(scope):
        t = build(x, text) if build is _string_op else build(x)
    with fb.Session() as s, pytest.raises(InvalidArgumentError, match=match) as info:
        s.run(t, {**fx, **ft})
    assert info.value.op is fb.get_default_graph().get_operation_by_name("op")
    message = info.value.message
    assert message.startswith(f"{info.value.op.type} 'op' (") and "test_gpu.py:" in message
    assert "Cannot assign a device for operation op" in message
    assert "allow_soft_placement=True" in message


def test_without_a_gpu_a_gpu_scope_needs_soft_placement():
    assert not gpu_available()
    x, feed = _fed_x()
    with fb.device("/gpu:0"):
        y = fb.multiply(x, 2.0, name="op")
    with fb.Session() as s, pytest.raises(InvalidArgumentError, match="Cannot assign a device"):
        s.run(y, feed)
    with fb.Session(config=SOFT) as s:
        assert s.run(y, feed).tolist() == [[2.0] * 3] * 2
        assert placed(s)["op"] == "CPU:0" and only_plan(s).copies == []
        assert [d.name for d in s.list_devices()] == [CPU0]


def test_variable_updates_run_where_the_variable_lives(gpu):
    with fb.device("/cpu:0"):
        v = fb.Variable([1.0, 2.0], name="v")
    w = fb.Variable([3.0], name="w")  # on the GPU, the default
    with fb.device("/gpu:0"):
        up = v.assign_add([1.0, 1.0], name="up")
    with fb.device("/cpu:0"):
        loss = fb.reduce_sum(w * w) + fb.reduce_sum(v)
    train = fb.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        s.run(up)
        assert s.run(v).tolist() == [2.0, 3.0]
        s.run(train)
        where = placed(s)
        assert where["v"] == where["up"] == "CPU:0" and where["w"] == "GPU:0"
        updates = [
            op
            for plan in s._plans.values()
            for op in plan.ops
            if op.type in ("Assign", "AssignAdd", "AssignSub")
        ]
        assert updates and all(where[op.name] == where[op.inputs[0].op.name] for op in updates)


def test_default_is_the_first_gpu_and_copies_between_gpus(gpu):
    from flowbook.runtime.gpu_sim import SimulatedGPU

    second = devices.register_device(SimulatedGPU(1))
    try:
        x, feed = _fed_x()
        a = fb.multiply(x, 2.0, name="a")
        with fb.device("/gpu:1"):
            b = fb.add(a, 1.0, name="b")
        with fb.Session() as s:
            assert s.run(b, feed).tolist() == [[3.0] * 3] * 2
            assert placed(s)["a"] == "GPU:0" and placed(s)["b"] == "GPU:1"
            copies = [(c.name, c.type) for c in only_plan(s).copies]
            assert ("a/_copy_to_GPU_1", "_CopyDeviceToDevice") in copies
            assert ("b/_copy_to_CPU_0", "_CopyDeviceToHost") in copies
        visible = fb.ConfigProto(gpu_options=fb.GPUOptions(visible_device_list="1"))
        with fb.Session(config=visible) as s:
            s.run(a, feed)
            assert placed(s)["a"] == "GPU:1"
            assert [d.device_type for d in s.list_devices()] == ["CPU", "GPU"]
    finally:
        second.remove()


def test_device_count_gpu_0_turns_the_gpu_off(gpu):
    x, feed = _fed_x()
    y = fb.reduce_sum(fb.matmul(x, fb.ones([3, 2])), name="y")
    with fb.Session(config=CPU_ONLY) as s:
        assert s.run(y, feed) == 12.0
        assert set(placed(s).values()) == {"CPU:0"} and only_plan(s).copies == []
        assert [d.name for d in s.list_devices()] == [CPU0]
    assert gpu.uploads == gpu.downloads == 0
    with fb.Session() as s:
        assert [d.name for d in s.list_devices()] == [CPU0, GPU0]
        assert s.list_devices()[1].device_type == "GPU"


def test_placer_decides_each_op_once(gpu):
    x, _ = _fed_x()
    y = fb.multiply(x, 2.0)
    placer = Placer(fb.ConfigProto())
    assert placer(y.op) is placer(y.op) is local_devices()[1]
    assert placer(x.op).device_type == "GPU"  # a placeholder's value is fed: only its readers copy


# ----------------------------------------------------------------------- copy nodes
def test_copy_nodes_are_named_after_the_value_and_typed_by_direction(gpu):
    x, feed = _fed_x()
    with fb.device("/cpu:0"):
        c = fb.multiply(x, 3.0, name="on_cpu")
    parts = fb.split(fb.matmul(c, fb.ones([3, 4]), name="mm"), 2, axis=1, name="parts")
    total = fb.Print(fb.reduce_sum(parts[0], name="total"), [], name="printed")
    ops_before = len(fb.get_default_graph().get_operations())
    with fb.Session() as s:
        s.run([parts[0], parts[1], total], feed)
        plan = only_plan(s)
    assert [(c.name, c.type) for c in plan.copies] == [
        ("on_cpu/_copy_to_GPU_0", "_CopyHostToDevice"),
        ("total/_copy_to_CPU_0", "_CopyDeviceToHost"),
        ("parts/_copy_to_CPU_0", "_CopyDeviceToHost"),
        ("parts/_copy1_to_CPU_0", "_CopyDeviceToHost"),
    ]
    for c in plan.copies:
        assert isinstance(c, CopyOp) and c.graph is fb.get_default_graph()
        assert c.device == GPU0.rpartition("task:0")[2]  # the GPU side runs a copy
        assert plan.ops.index(c) > plan.ops.index(c.inputs[0].op)
    assert len(fb.get_default_graph().get_operations()) == ops_before  # the graph is untouched


def test_only_fetched_values_come_back_to_the_host(gpu):
    x, feed = _fed_x()
    chain = [x]
    for k in range(6):
        chain.append(fb.add(chain[-1] * 2.0, 1.0, name=f"step{k}"))
    with fb.Session() as s:
        for fetches, downloads in [(chain[-1], 1), ([chain[2], chain[-1]], 2), (chain[1:], 6)]:
            gpu.reset_counters()
            values = s.run(fetches, feed)
            assert gpu.downloads == downloads, fetches
            assert gpu.uploads == 1  # x, once
            for v in values if isinstance(values, list) else [values]:
                assert type(v) is np.ndarray


def test_a_fed_value_is_uploaded_once_however_many_gpu_ops_read_it(gpu):
    x, feed = _fed_x()
    outs = [fb.reduce_sum(x * float(k), name=f"r{k}") for k in range(5)]
    total = fb.add_n(outs, name="total")
    with fb.Session() as s:
        s.run(total, feed)  # binds the plan: its constants go to the GPU once
        gpu.reset_counters()
        assert s.run(total, feed) == 60.0
        copies = [c.name for c in only_plan(s).copies]
    assert copies == ["x/_copy_to_GPU_0", "total/_copy_to_CPU_0"]
    assert (gpu.uploads, gpu.downloads, gpu.implicit_uploads) == (1, 1, 0)


def test_shape_arguments_stay_on_the_host(gpu):
    x, feed = _fed_x()
    dims = fb.placeholder(fb.int32, [2], name="dims")
    y = fb.reshape(x * 2.0, dims, name="y")
    z = fb.reduce_sum(y, axis=fb.shape(y)[0] - 2, name="z")  # axes computed on the host
    with fb.Session() as s:
        s.run([y, z], {**feed, dims: [3, 2]})  # binds the plan: its constants go to the GPU once
        gpu.reset_counters()
        got = s.run([y, z], {**feed, dims: [3, 2]})
        where = placed(s)
        copies = [c.name for c in only_plan(s).copies]
    assert got[0].shape == (3, 2) and got[1].tolist() == [4.0, 4.0, 4.0]
    assert where["y"] == where["z"] == "GPU:0" and where["Shape"] == where["sub"] == "CPU:0"
    assert copies == ["x/_copy_to_GPU_0", "y/_copy_to_CPU_0", "z/_copy_to_CPU_0"]
    assert gpu.implicit_uploads == 0  # no shape was uploaded, and none came back


def test_a_variable_read_across_devices_waits_for_the_reads_control_inputs(gpu):
    with fb.device("/cpu:0"):
        v = fb.Variable([1.0, 2.0], name="v")
        bump = v.assign_add([1.0, 1.0], name="bump")
    with fb.control_dependencies([bump]):
        read = v.read_value()  # on the GPU: the copy of v must wait for the update
    doubled = fb.multiply(read, 2.0, name="doubled")
    for config in (CPU_ONLY, None):
        with fb.Session(config=config) as s:
            s.run(v.initializer)
            got = [s.run(doubled).tolist() for _ in range(3)]
            assert got == [[4.0, 6.0], [6.0, 8.0], [8.0, 10.0]]
            copies = [c for c in only_plan_of(s, doubled).copies if c.inputs[0].op is v.op]
    (copy,) = copies
    assert copy.control_inputs == [bump.op] and copy.name == "v/_copy_to_GPU_0"


# ------------------------------------------------------------------------- training
def _mlp(optimizer, dropout=True, host_init=False):
    """The digits MLP; ``host_init``: weights drawn by numpy (the same on every device)."""
    rng = np.random.default_rng(4)

    def weights(shape, seed):
        if host_init:
            return (rng.standard_normal(shape) * 0.1).astype(np.float32)
        return fb.truncated_normal(shape, stddev=0.1, seed=seed)

    x = fb.placeholder(fb.float32, [None, 64], name="x")
    y = fb.placeholder(fb.int64, [None], name="y")
    w1 = fb.Variable(weights([64, 32], 1), name="w1")
    b1 = fb.Variable(fb.zeros([32]), name="b1")
    h = fb.nn.relu(fb.matmul(x, w1) + b1, name="hidden")
    w2 = fb.Variable(weights([32, 10], 2), name="w2")
    logits = fb.matmul(fb.nn.dropout(h, 0.9, seed=3) if dropout else h, w2)
    loss = fb.reduce_mean(
        fb.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
    )
    return x, y, loss, optimizer.minimize(loss)


@pytest.mark.parametrize(
    "optimizer",
    [fb.train.GradientDescentOptimizer(0.5), fb.train.AdamOptimizer(0.01)],
    ids=["sgd", "adam"],
)
def test_training_on_the_gpu_gives_the_cpu_losses(optimizer, tmp_path):
    from flowbook.data.datasets import load_digits

    digits = load_digits()
    batches = [
        (digits.train.images[k : k + 20], digits.train.labels[k : k + 20])
        for k in range(0, 400, 20)
    ]
    x, y, loss, train = _mlp(optimizer)
    saver = fb.train.Saver()
    losses = {}
    for where in ("cpu", "gpu"):
        gpu = simulate_gpu() if where == "gpu" else None
        try:
            with fb.Session(config=None if gpu else CPU_ONLY) as s:
                s.run(fb.global_variables_initializer())
                losses[where] = [s.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]
                if gpu:
                    assert placed(s)["hidden"] == "GPU:0"
                    uploads, copies = gpu.uploads, len(only_plan_of(s, loss).copies)
                    gpu.reset_counters()
                    s.run([loss, train], {x: batches[0][0], y: batches[0][1]})
                    assert gpu.implicit_uploads == 0  # no kernel sent host data up by itself
                    path = saver.save(s, str(tmp_path / "model"))
                    saved = s.run(fb.trainable_variables())
        finally:
            if gpu is not None:
                gpu.remove()
    assert losses["gpu"] == losses["cpu"]
    assert losses["gpu"][-1] < losses["gpu"][0]
    assert uploads == 3 * len(batches)  # x, y and the mean's element count (a scalar) per step
    assert copies == 4  # those three, and the loss back
    with fb.Session(config=CPU_ONLY) as s:
        saver.restore(s, path)  # saved from the GPU, restored on the CPU
        for got, want in zip(s.run(fb.trainable_variables()), saved):
            np.testing.assert_array_equal(got, want)


def only_plan_of(sess, fetch):
    """The plan that fetched ``fetch`` (with others)."""
    return next(p for p in sess._plans.values() if fetch.op in p.ops)


# ----------------------------------------------------------------- traces and timings
FULL = fb.RunOptions(trace_level=fb.RunOptions.FULL_TRACE)


def _small_model():
    x, feed = _fed_x()
    h = fb.nn.relu(fb.matmul(x, fb.ones([3, 4])), name="h")
    return fb.reduce_sum(h, name="total"), feed


def test_full_trace_has_a_device_lane_and_the_copy_nodes(gpu):
    total, feed = _small_model()
    md = fb.RunMetadata()
    with fb.Session() as s:
        before = time.time_ns() // 1000
        assert s.run(total, feed, options=FULL, run_metadata=md) == 24.0
        after = time.time_ns() // 1000
    by_device = {d.device: {n.node_name: n for n in d.node_stats} for d in md.step_stats.dev_stats}
    assert list(by_device) == [CPU0, GPU0, GPU0 + "/stream:all"]
    assert {n.timeline_label.split(" = ")[1].split("(")[0] for n in by_device[CPU0].values()} == {
        "Const"
    }  # the reduction's axes: int32, kept on the host
    host, lane = by_device[GPU0], by_device[GPU0 + "/stream:all"]
    assert {"x/_copy_to_GPU_0", "h", "total", "total/_copy_to_CPU_0"} <= set(host)
    assert set(lane) == set(host)  # each GPU kernel is timed on the device too
    assert host["x/_copy_to_GPU_0"].timeline_label.startswith(
        "x/_copy_to_GPU_0 = _CopyHostToDevice"
    )
    for name, n in lane.items():
        h = host[name]
        assert before <= h.all_start_micros <= n.all_start_micros
        assert (
            n.all_start_micros + n.all_end_rel_micros
            <= h.all_start_micros + h.all_end_rel_micros + 1
        )
        assert n.all_start_micros + n.all_end_rel_micros <= after
        assert n.output == []  # a lane event describes no tensors
    trace = test_profiling.validate_trace(
        fb.timeline.Timeline(
            md.step_stats, graph=fb.get_default_graph()
        ).generate_chrome_trace_format(show_dataflow=True, show_memory=True)
    )
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    processes = {e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert {f"{GPU0} Compute", f"{GPU0}/stream:all Compute"} <= processes
    assert "GPU:0 stream" in {e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sum(e["name"] == "total/_copy_to_CPU_0" for e in slices) == 2  # host and device lane


def test_profile_counts_device_times_and_draws_the_lane(gpu, tmp_path):
    total, feed = _small_model()
    with fb.Session() as s, fb.profile() as prof:
        for _ in range(3):
            s.run(total, feed)
    rows = {r["op"]: r for r in prof.table(by="op").rows}
    assert rows["x/_copy_to_GPU_0"]["count"] == 3 and rows["h"]["type"] == "Relu"
    assert "_CopyDeviceToHost" in {r["type"] for r in prof.table(by="type").rows}
    lanes = [e for run in prof.events() for e in run if e.lane]
    assert {e.lane for e in lanes} == {"GPU:0 stream"}
    assert len(lanes) == 3 * sum(e.device == GPU0 for e in prof.events()[0])
    assert "GPU:0 stream" in prof.timeline()._repr_html_()
    assert set(prof.node_times()) == set(rows)
    test_profiling.validate_trace(prof.save_trace(tmp_path / "t.json").read_text())


def test_log_device_placement_prints_into_the_cell(gpu, capsys):
    total, feed = _small_model()
    config = fb.ConfigProto(log_device_placement=True)
    with fb.Session(config=config) as s:
        s.run(total, feed)
        first = capsys.readouterr().out.splitlines()
        s.run(total, feed)  # a cached plan: nothing new to say
        assert capsys.readouterr().out == ""
        s.run(fb.get_default_graph().get_tensor_by_name("h:0"), feed)
        second = capsys.readouterr().out.splitlines()
    assert first[:2] == [
        "Device mapping:",
        f"{GPU0} -> device: 0, name: {gpu.description}",
    ]
    assert f"x/_copy_to_GPU_0: (_CopyHostToDevice): {GPU0}" in first
    assert f"h: (Relu): {GPU0}" in first
    assert f"total/_copy_to_CPU_0: (_CopyDeviceToHost): {GPU0}" in first
    assert f"x/_copy_to_GPU_0: (_CopyHostToDevice): {GPU0}" in second
    assert not any(line.startswith("Device mapping") for line in second)


def test_log_device_placement_without_a_gpu(capsys):
    total, feed = _small_model()
    with fb.Session(config=fb.ConfigProto(log_device_placement=True)) as s:
        s.run(total, feed)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Device mapping: no known devices."
    assert f"h: (Relu): {CPU0}" in out and not any("_copy" in line for line in out)


# --------------------------------------------------------------------------- memory
MB = 1_000_000


def _run_as(how: str, sess, fetches, feed):
    """Run on the serial executor (first runs), the compiled function, or the threaded one."""
    options = fb.RunOptions(timeout_in_ms=60_000) if how == "threaded" else None
    if how == "compiled":
        for _ in range(3):
            sess.run(fetches, feed)
        path = sess._paths[only_plan_of(sess, fetches)]
        optimised = [e[1] for e in path.optimized.values() if type(e) is tuple]  # run/optimize
        assert any(p.compiled is not None for p in [path, *optimised])
    return sess.run(fetches, feed, options=options)


@pytest.mark.parametrize("how", ["serial", "compiled", "threaded"])
def test_out_of_memory_names_the_op_and_the_session_stays_usable(how):
    with simulate_gpu(memory_limit=4 * MB) as gpu:
        x = fb.placeholder(fb.float32, [None, None], name="x")
        big = fb.tile(x * 2.0, [8, 1], name="big")  # 8x its input
        out = fb.reduce_sum(big, name="out")
        small = {x: np.ones((10, 10), np.float32)}
        with fb.Session() as s:
            assert _run_as(how, s, out, small) == 1600.0
            baseline = gpu.live_bytes
            with pytest.raises(ResourceExhaustedError) as info:
                _run_as(how, s, out, {x: np.ones((250, 1000), np.float32)})  # 1 MB -> 8 MB
            e = info.value
            assert e.op is big.op and isinstance(e.__cause__, SimulatedOutOfMemoryError)
            assert e.message.startswith("Tile 'big' (") and "test_gpu.py:" in e.message
            assert f"OOM when running on {GPU0}" in e.message
            assert gpu.live_bytes == baseline  # freed though the error (and its traceback) lives
            assert gpu.releases == 1
            assert s.run(out, small) == 1600.0  # the session goes on
            assert s.run(out, {x: np.ones((100, 100), np.float32)}) == 160_000.0


@pytest.mark.parametrize("how", ["serial", "compiled", "threaded"])
def test_device_buffers_are_freed_after_their_last_use(gpu, how):
    x = fb.placeholder(fb.float32, [None, None], name="x")
    chain = [x]
    for k in range(30):
        chain.append(fb.add(chain[-1], 1.0, name=f"a{k}"))
    feed = {x: np.zeros((250, 1000), np.float32)}  # 1 MB a value
    with fb.Session() as s:
        _run_as(how, s, chain[-1], feed)
        gpu.reset_counters()
        _run_as(how, s, chain[-1], feed)
        assert gpu.peak_bytes - gpu.live_bytes <= 2 * MB + 1000  # an input and an output at most
        gpu.reset_counters()
        s.run(chain[1:], feed)  # every value fetched: all of them live at the end
        assert gpu.peak_bytes - gpu.live_bytes >= 30 * MB


# ------------------------------------------------------------- stepper and NaN guard
def test_the_stepper_steps_through_a_gpu_run(gpu):
    x, y, loss, _ = _mlp(fb.train.GradientDescentOptimizer(0.1), dropout=False)
    from flowbook.data.datasets import load_digits

    digits = load_digits()
    feed = {x: digits.train.images[:10], y: digits.train.labels[:10]}
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        st = Stepper(s, loss, feed)
        ready = [op.name for op in st.ready()]
        assert "x/_copy_to_GPU_0" in ready  # copy nodes are steps like any op
        st.run_to("hidden")
        hidden = st.value("hidden:0")
        assert type(hidden) is np.ndarray and hidden.shape == (10, 32)
        assert type(st.value("w1:0")) is np.ndarray  # a variable on the GPU, read to the host
        assert st.cont() == s.run(loss, feed)
        with fb.Session(config=CPU_ONLY) as cpu:
            cpu.run(fb.global_variables_initializer())
            np.testing.assert_array_equal(hidden, cpu.run("hidden:0", feed))


def test_the_nan_guard_names_the_gpu_op(gpu):
    x, feed = _fed_x()
    bad = fb.sqrt(x - 3.0, name="root")
    out = fb.reduce_sum(bad * 2.0)
    with fb.Session() as s:
        with pytest.raises(InvalidArgumentError, match="produced NaN") as info:
            s.run(out, feed, options=fb.RunOptions(check_numerics=True))
        assert info.value.op is bad.op and placed(s)["root"] == "GPU:0"
        assert "float32[2, 3] nan=6" in info.value.message
        assert NanGuard.last_bad_op is bad.op
    with fb.Session(config=fb.ConfigProto(check_numerics=True)) as s:
        st = Stepper(s, out, feed)
        with pytest.raises(InvalidArgumentError, match="Sqrt 'root'"):
            st.run_to("root")


def test_runs_from_several_threads_on_the_gpu(gpu):
    x, feed = _fed_x()
    y = fb.reduce_sum(fb.matmul(x, fb.ones([3, 5])) * 2.0)
    results = []
    with fb.Session() as s:

        def work():
            results.extend(s.run(y, feed) for _ in range(20))

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [60.0] * 80


def test_sim_arrays_refuse_host_arrays_like_cupy():
    a = np.ones(3).view(SimArray)
    with pytest.raises(TypeError, match="without a copy"):
        a + np.ones(3)
    with simulate_gpu() as gpu, pytest.raises(TypeError, match="left the device"):
        gpu.to_host(np.ones(2))
    with pytest.raises(RuntimeError, match="already registered"), simulate_gpu(), simulate_gpu():
        pass


# ------------------------------------------------------------------ a real GPU (CuPy)
def _cupy():
    """CuPy with at least one CUDA device, else the test is skipped."""
    cupy = pytest.importorskip("cupy")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CuPy without a driver
        pytest.skip(f"CuPy finds no CUDA device: {e}")
    if not count:
        pytest.skip("CuPy finds no CUDA device")
    return cupy


def test_cupy_gpu_is_the_default_device_and_trains_like_the_cpu():
    cupy = _cupy()
    from flowbook.data.datasets import load_digits

    digits = load_digits()
    x, y, loss, train = _mlp(fb.train.GradientDescentOptimizer(0.5), dropout=False, host_init=True)
    feed = {x: digits.train.images[:100], y: digits.train.labels[:100]}
    losses = []
    for config in (CPU_ONLY, None):
        with fb.Session(config=config) as s:
            s.run(fb.global_variables_initializer())
            losses.append([s.run([loss, train], feed)[0] for _ in range(5)])
            if config is None:
                assert placed(s)["hidden"] == "GPU:0"
                assert s.list_devices()[1].memory_limit_bytes > 0
                st = Stepper(s, loss, feed)
                st.run_to("hidden")
                assert isinstance(
                    st._outputs[st._index[st.graph.get_operation_by_name("hidden")]][0],
                    cupy.ndarray,
                )
                assert type(st.value("hidden:0")) is np.ndarray
    assert type(losses[1][0]) is np.float32
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)  # float32 sums differ in order


def test_cupy_full_trace_times_kernels_with_cuda_events():
    _cupy()
    a = fb.placeholder(fb.float32, [512, 512], name="a")
    y = fb.reduce_sum(fb.matmul(fb.matmul(a, a, name="m1"), a, name="m2"), name="y")
    md = fb.RunMetadata()
    with fb.Session() as s:
        s.run(y, {a: np.ones((512, 512), np.float32)})
        before = time.time_ns() // 1000
        s.run(y, {a: np.ones((512, 512), np.float32)}, options=FULL, run_metadata=md)
        after = time.time_ns() // 1000
    devices = [d.device for d in md.step_stats.dev_stats]
    assert GPU0 in devices and GPU0 + "/stream:all" in devices
    lane = {
        n.node_name: n
        for d in md.step_stats.dev_stats
        if d.device.endswith("stream:all")
        for n in d.node_stats
    }
    assert {"m1", "m2", "y", "a/_copy_to_GPU_0"} <= set(lane)
    for n in lane.values():
        assert (
            before - 1000 <= n.all_start_micros
            and n.all_start_micros + n.all_end_rel_micros <= after + 1000
        )
    assert (
        lane["m1"].all_start_micros + lane["m1"].all_end_rel_micros
        <= lane["m2"].all_start_micros + 1
    )


def test_cupy_out_of_memory_names_the_op_and_the_session_stays_usable():
    _cupy()
    n = fb.placeholder(fb.int32, [], name="n")
    huge = fb.fill(fb.stack([n, n, n]), 1.0, name="huge")  # n**3 floats
    out = fb.reduce_sum(huge, name="out")
    with fb.Session() as s:
        with pytest.raises(ResourceExhaustedError, match="Fill 'huge'") as info:
            s.run(out, {n: 1 << 14})  # 16 TB
        assert info.value.op is huge.op and "OOM when running on" in info.value.message
        assert s.run(out, {n: 4}) == 64.0
