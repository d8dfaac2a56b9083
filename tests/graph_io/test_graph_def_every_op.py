"""Every op in the registry survives ``as_graph_def`` -> bytes -> ``import_graph_def``.

One graph holds at least one op of every registered type (the gradients
bring the backprop ops); it is written to GraphDef bytes, parsed back and
imported, and every op must come back with the same type, inputs, control
inputs, device and attrs.  A new op type that this graph does not build fails
``test_the_graph_has_every_op`` until it is added here.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import flowbook as tf
from flowbook.framework.dtypes import DType
from flowbook.framework.registry import OPS
from flowbook.graph_io import graph_def as gdef


def long_tail_ops(x, v):
    """The ops of the long tail (scans, segments...); ``v`` a [2, 3] variable."""
    tf.scatter_update(v, [1], [[1.0, 2.0, 3.0]])
    tf.scatter_add(v, [0, 0], tf.ones([2, 3]))
    tf.scatter_sub(v, 1, [1.0, 2.0, 3.0])
    ids = [0, 0]
    parts = [
        tf.cumsum(x, 1, exclusive=True),
        tf.cumprod(x, 1, reverse=True),
        *(f(x, ids) for f in (tf.segment_sum, tf.segment_mean, tf.segment_max)),
        *(f(x, ids) for f in (tf.segment_min, tf.segment_prod)),
        *(f(x, ids, 1) for f in (tf.unsorted_segment_max, tf.unsorted_segment_min)),
        tf.unsorted_segment_prod(x, ids, 1),
        tf.gather_nd(x, [[1, 2], [0, 0]]),
        tf.scatter_nd([[1], [0]], x, [3, 3]),
        tf.dynamic_stitch([[1], [0]], tf.dynamic_partition(x, [1, 0], 2)),
        tf.nn.top_k(x, 2).values,
        tf.einsum("ij,kj->ik", x, x),
        tf.reverse_sequence(x, [1, 3], seq_axis=1),
    ]
    tf.nn.in_top_k(x, [0, 1], 1)
    parts += nn_conv_tail_ops(x)
    total = tf.add_n([tf.reduce_sum(p) for p in parts])
    return total


def control_flow_ops(x):
    """cond, while_loop, and a loop written with the Ref twins of the primitives by hand."""
    y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * 2.0, lambda: x - 1.0)
    _, acc = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + y), [0, tf.zeros([2, 3])])
    g = x.graph
    e = g.create_op(
        "RefEnter", [x], {"frame_name": "raw", "is_constant": False, "parallel_iterations": 1}
    ).outputs[0]
    m = g.create_op("RefMerge", [e, e]).outputs[0]
    c = g.create_op("LoopCond", [tf.reduce_sum(m) > 1e9]).outputs[0]
    f, t = g.create_op("RefSwitch", [m, c]).outputs
    out = g.create_op("RefExit", [f]).outputs[0]
    nxt = g.create_op("RefNextIteration", [t]).outputs[0]
    m.op.inputs = (e, nxt)
    g.create_op("ControlTrigger", [], control_inputs=[out.op])
    tf.gradients(tf.reduce_sum(acc * acc), x)  # the loop's gradient: stacks, a backward loop
    return acc + out


def tensor_array_ops(x):
    """The TensorArray ops, their gradients (TensorArrayGradV3), and a close."""
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[3]).unstack(x)
    grown = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False)
    grown = grown.split(tf.reshape(x, [6]), [2, 4]).write(2, x[0])
    y = ta.read(1) * ta.gather([0]) + tf.reduce_sum(grown.concat()) + tf.cast(ta.size(), tf.float32)
    tf.gradients(tf.reduce_sum(y * y), x)
    ta.close()
    return y


def nn_conv_tail_ops(x):
    """Convolution, pooling and spatial ops: depthwise, space/batch/depth moves, argmax pool."""
    img = tf.reshape(tf.tile(x, [2, 4]), [2, 4, 3, 2])
    d = tf.nn.depthwise_conv2d(img, tf.ones([2, 2, 2, 3]), [1, 1, 1, 1], "SAME", rate=[2, 2])
    s2d = tf.nn.depth_to_space(tf.nn.space_to_depth(tf.reshape(d, [2, 4, 6, 3]), 2), 2)
    pooled, arg = tf.nn.max_pool_with_argmax(img, [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    with_arg = pooled + tf.cast(arg, tf.float32)
    (gx,) = tf.gradients(tf.reduce_sum(d**2) + tf.reduce_sum(s2d) + tf.reduce_sum(with_arg), img)
    return [d, s2d, with_arg, tf.gradients(tf.reduce_sum(gx**2), img)[0]]


def tfcore_ops(x, n):
    """The top-level ``tf.*`` math and array names (trigonometry, linalg...)."""
    t = tf.tanh(x) * 0.5  # in (-0.5, 0.5): every inverse function's domain
    parts = [
        tf.tan(t),
        tf.asin(t),
        tf.acos(t),
        tf.atan(t),
        tf.sinh(t),
        tf.cosh(t),
        tf.asinh(t),
        tf.acosh(tf.cosh(t) + 1.0),
        tf.atanh(t),
        tf.expm1(t),
        tf.rint(x),
        tf.atan2(t, x + 3.0),
        tf.div_no_nan(x, t),
    ]
    sq = tf.matmul(x, x, transpose_b=True) + tf.eye(2) * 3.0
    parts += [
        tf.matrix_diag(x),
        tf.matrix_set_diag(tf.zeros([2, 3, 3]), x),
        tf.diag(x),
        tf.diag_part(tf.diag(x)),
        tf.trace(sq),
        tf.matrix_band_part(x, 0, -1),
        tf.cholesky(sq),
        tf.matrix_solve(sq, x, adjoint=True),
        tf.matrix_triangular_solve(sq, x, lower=False),
        tf.cross(x, x * x),
    ]
    flat = tf.reshape(n, [-1])
    parts += [
        tf.linspace(0.0, 1.0, 4),
        tf.broadcast_to(x, [2, 2, 3]),
        tf.roll(x, [1, 1], [0, 1]),
        tf.reduce_logsumexp(x, 1),
        tf.cast(tf.broadcast_dynamic_shape([2, 1], [3]), tf.float32),
        tf.cast(tf.unique(flat).idx, tf.float32),
        tf.cast(tf.unique_with_counts(flat, tf.int64).count, tf.float32),
        tf.cast(tf.setdiff1d(flat, [1]).out, tf.float32),
    ]
    tf.assert_positive(x + 10.0, summarize=4, message="x + 10 > 0")
    parts.append(tf.where_v2(x > 0, tf.placeholder_with_default(x, [None, 3]), 0.0))
    parts.append(tf.cast(tf.multinomial(x, 2, seed=3, output_dtype=tf.int32), tf.float32))
    counts = [
        tf.bincount(flat, minlength=4),
        tf.histogram_fixed_width(x, [-1.0, 1.0], 3),
        tf.searchsorted(x, x, "left"),
        tf.searchsorted(x, x, "right", tf.int64),
        tf.unravel_index(flat, [2, 3]),
    ]
    parts += [tf.cast(c, tf.float32) for c in counts]
    parts.append(tf.reshape(tf.py_func(lambda a: a * 2, [x], tf.float32), [2, 3]))
    parts.append(tf.numpy_function(lambda a: a, [x], [tf.float32], stateful=False)[0])
    ni = tf.truncatediv(n, 2) + tf.truncatemod(n, 3)
    return tf.add_n([tf.reduce_sum(p) for p in parts]) + tf.cast(tf.reduce_sum(ni), tf.float32)


def tfmore_ops(x):
    """Identities, casts and repeat."""
    a, b = tf.identity_n([x, tf.ensure_shape(x, [None, 3])])
    bits = tf.bitcast(tf.bitcast(x, tf.int16), tf.float32)
    sym = tf.matmul(x, x, transpose_b=True) + tf.eye(2)
    s, u, v = tf.svd(x)
    e, vec = tf.self_adjoint_eig(sym)
    parts = [a, b, bits, tf.repeat(x, [1, 2, 0], axis=1), s, u, v, e, vec]
    parts += [tf.svd(x, compute_uv=False), tf.self_adjoint_eigvals(sym)]
    img = tf.reshape(tf.tile(x, [1, 2]), [1, 2, 6, 1])
    patches = tf.extract_image_patches(img, [1, 2, 2, 1], [1, 1, 2, 1], [1, 1, 2, 1], "SAME")
    (gi,) = tf.gradients(tf.reduce_sum(patches**2), img)
    parts += [patches, tf.gradients(tf.reduce_sum(gi**2), img)[0]]
    return tf.add_n([tf.reduce_sum(p) for p in parts])


def tfmath_ops(x):
    """``tf.math``'s complex numbers and special functions, with their gradients."""
    z = tf.complex(x, x * 2.0)
    p = tf.sigmoid(x) * 0.9 + 0.05  # in (0, 1)
    parts = [tf.real(z), tf.imag(z), tf.angle(z), tf.erf(x), tf.erfc(x), tf.lgamma(p)]
    parts += [tf.digamma(p), tf.math.erfinv(p), tf.math.ndtri(p), tf.zeta(3.0, p)]
    parts += [tf.polygamma(2.0, p), tf.math.nextafter(x, 0.0), tf.igamma(2.0, p)]
    parts += [tf.igammac(2.0, p), tf.betainc(2.0, 3.0, p)]
    parts += [f(x) for f in (tf.math.bessel_i0, tf.math.bessel_i0e, tf.math.bessel_i1)]
    parts.append(tf.math.bessel_i1e(x))
    (gx,) = tf.gradients(tf.add_n([tf.reduce_sum(p) for p in parts]), x)
    return tf.reduce_sum(gx)


def every_op():
    """One or more ops of every registered type (gradients bring the *Grad ops)."""
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    n = tf.placeholder(tf.int32, [2, 3], name="n")
    v = tf.Variable(tf.ones([2, 3]), name="v")
    y = tf.abs(x) + tf.add_n([x, x]) - tf.negative(x) * tf.exp(x) / tf.sqrt(tf.square(x) + 1.0)
    y = (
        tf.maximum(tf.minimum(y, 2.0), -2.0)
        + tf.pow(tf.abs(x) + 1.0, 2.0)
        + tf.log(tf.abs(x) + 1)
        + tf.log1p(tf.abs(x))
    )
    y = (
        y
        + tf.sin(x)
        + tf.cos(x)
        + tf.tanh(x)
        + tf.sigmoid(x)
        + tf.nn.relu(x)
        + tf.nn.relu6(x)
        + tf.nn.elu(x)
        + tf.nn.softplus(x)
        + tf.nn.selu(x)
        + tf.nn.softsign(x)
        + tf.nn.leaky_relu(x, 0.3)
    )
    y = (
        y
        + tf.rsqrt(tf.abs(x) + 1)
        + tf.reciprocal(tf.abs(x) + 1)
        + tf.sign(x)
        + tf.floor(x)
        + tf.ceil(x)
        + tf.round(x)
        + tf.squared_difference(x, 1.0)
    )
    y = y + tf.cast(tf.conj(tf.cast(x, tf.complex64)), tf.float32) + tf.stop_gradient(x)
    y = y + tf.get_default_graph().create_op("AddV2", [x, x]).outputs[0]
    xu = tf.placeholder(tf.float32, [None, 3], name="xu")
    y = tf.where(
        tf.logical_and(
            tf.greater(x, 0), tf.logical_or(tf.less(x, 1), tf.logical_not(tf.equal(x, 2)))
        ),
        y,
        x,
    )
    y = (
        y
        + tf.cast(tf.logical_and(tf.greater_equal(x, 0), tf.less_equal(x, 1)), tf.float32)
        + tf.cast(tf.not_equal(x, 3), tf.float32)
    )
    ni = (
        tf.floordiv(n, 2)
        + tf.floormod(n, 3)
        + tf.cast(tf.is_nan(x), tf.int32)
        + tf.cast(tf.is_inf(x), tf.int32)
        + tf.cast(tf.is_finite(x), tf.int32)
    )
    r = (
        tf.reduce_sum(y)
        + tf.reduce_mean(y)
        + tf.reduce_max(y, 1)[0]
        + tf.reduce_min(y, 0)[0]
        + tf.reduce_prod(y[:, :1])
    )
    r += (
        tf.cast(tf.reduce_all(x > 0), tf.float32)
        + tf.cast(tf.reduce_any(x > 0), tf.float32)
        + tf.cast(tf.argmax(x, 1)[0] + tf.argmin(x, 1)[0], tf.float32)
    )
    m = (
        tf.matmul(x, tf.transpose(x))
        + tf.matrix_determinant(tf.constant(np.eye(2), tf.float32) + 0.1)
        + tf.matrix_inverse(tf.constant(np.eye(2), tf.float32) * 2.0)
        + tf.qr(tf.constant(np.eye(2), tf.float32) * 2.0)[1]
    )
    b = tf.matmul(tf.expand_dims(x, 0), tf.expand_dims(tf.transpose(x), 0))
    img = tf.reshape(tf.tile(x, [1, 6]), [1, 6, 6, 1])
    k = tf.ones([2, 2, 1, 2])
    c = tf.nn.bias_add(tf.nn.conv2d(img, k, [1, 1, 1, 1], "SAME"), [0.5, 0.1])
    p = tf.nn.max_pool(c, [1, 2, 2, 1], [1, 2, 2, 1], "VALID") + tf.nn.avg_pool(
        c, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"
    )
    s = tf.nn.softmax(x) + tf.nn.log_softmax(x)
    loss = tf.reduce_sum(tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(x), logits=x))
    loss += tf.reduce_sum(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1], logits=x)
    ) + tf.nn.l2_loss(x)
    a = (
        tf.concat([x, x], 1)
        + tf.pad(tf.reverse(x, [1]), [[0, 0], [0, 3]])
        + tf.pad(x, [[0, 0], [1, 2]], "REFLECT")
        + tf.pad(x, [[0, 0], [0, 3]], constant_values=1.0)
    )
    a = (
        tf.stack(tf.unstack(a, axis=0))
        + tf.split(a, 2, axis=1)[0][:, :1]
        + tf.split(a, [2, 4], axis=1)[1][:, :1]
    )
    g = (
        tf.gather(x, [1, 0])
        + tf.one_hot([0, 2], 3)
        + tf.zeros_like(x)
        + tf.ones_like(x)
        + tf.fill([2, 3], 2.0)
    )
    g = (
        g
        + tf.squeeze(tf.slice(tf.expand_dims(x, 0), [0, 0, 0], [1, 2, 3]), [0])
        + tf.cast(tf.rank(x) + tf.size(x) + tf.shape(x)[0], tf.float32)
    )
    g = (
        g
        + tf.cast(tf.range(3)[None, :], tf.float32)
        + tf.random_uniform([2, 3])
        + tf.random_normal([2, 3])
        + tf.truncated_normal([2, 3])
    )
    g = (
        g
        + tf.cast(tf.random_uniform([2, 3], 0, 5, dtype=tf.int32), tf.float32)
        + tf.random_shuffle(x)
    )
    u = tf.unsorted_segment_sum(x, [0, 0], 1)
    tf.cast(tf.where(x > 0), tf.float32)
    total = (
        tf.reduce_sum(y)
        + r
        + tf.reduce_sum(m)
        + tf.reduce_sum(b)
        + tf.reduce_sum(p)
        + tf.reduce_sum(tf.nn.lrn(c, 1, alpha=0.25))
        + tf.reduce_sum(s)
        + loss
    )
    total += (
        tf.reduce_sum(a)
        + tf.reduce_sum(g)
        + tf.reduce_sum(u)
        + tf.reduce_sum(v)
        + tf.reduce_sum(tf.cast(ni, tf.float32))
    )
    total += long_tail_ops(x, v)
    total += tfcore_ops(x, n)
    total += tfmore_ops(x)
    total += tfmath_ops(x)
    total = tf.check_numerics(total, "bad")
    grads = tf.gradients(total, [x, v])
    tf.gradients(tf.reduce_sum(xu * tf.reduce_sum(xu, 0)), xu)
    tf.gradients(
        tf.reduce_sum(
            tf.gradients(
                tf.reduce_sum(tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID") ** 2), img
            )[0]
        ),
        img,
    )
    tf.assign(v, x)
    tf.assign_add(v, x)
    tf.assign_sub(v, x)
    fused_ops(x, v)
    tf.is_variable_initialized(v)
    control_flow_ops(x)
    tensor_array_ops(x)
    tf.Print(total, [total], "total")
    tf.print("total is", total, "{}")
    tf.summary.merge([tf.summary.scalar("t", total), tf.summary.histogram("h", x)])
    tf.no_op(name="nop")
    tf.nn.log_uniform_candidate_sampler([[1]], 1, 2, True, 5, seed=1)
    tf.nn.uniform_candidate_sampler([[1, 2]], 2, 3, False, 5)
    data_ops()
    compat_tail_ops(x, v)
    newer_ops(x)
    feed = {
        "x:0": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
        "n:0": np.ones((2, 3), np.int32),
    }
    return feed, grads[0].name


def resource_ops():
    """TensorFlow 2's resource variables and the StackV2 family (as TF's GraphDefs hold them)."""
    from flowbook.ops._builder import make, make1

    g = tf.get_default_graph()
    h = make1("VarHandleOp", (), {"dtype": tf.float32, "shape": (2,), "shared_name": "rv"})
    init = make("AssignVariableOp", (h, tf.constant([1.0, 2.0])), {"dtype": tf.float32})
    with tf.control_dependencies([init]):
        read = make1("ReadVariableOp", (h,), {"dtype": tf.float32})
    for kind in ("AssignAddVariableOp", "AssignSubVariableOp"):
        make(kind, (h, tf.constant([1.0, 1.0])), {"dtype": tf.float32})
    make1("VarIsInitializedOp", (h,))
    g.create_op("ResourceApplyGradientDescent", (h, tf.constant(0.1), read), {"use_locking": False})
    s = make1("StackV2", (tf.constant(-1),), {"elem_type": tf.float32, "stack_name": "s"})
    push = make1("StackPushV2", (s, read), {"swap_memory": False})
    with tf.control_dependencies([push]):
        make1("StackPopV2", (s,), {"elem_type": tf.float32})
    g.create_op("StackCloseV2", (s,))


def saving_and_media_ops(x):
    """TensorFlow's own save and restore ops (a Saver builds them), its sharded-file ops, and
    the image, audio and text summaries."""
    g = tf.get_default_graph()
    tf.train.Saver([tf.Variable([1.0], name="saved")])  # SaveV2, RestoreV2
    prefix = tf.constant("ckpt/model")
    shard = g.create_op("ShardedFilename", (prefix, tf.constant(0), tf.constant(1)), {})
    g.create_op("ShardedFilespec", (prefix, tf.constant(1)), {})
    g.create_op("StaticRegexFullMatch", (prefix,), {"pattern": "^s3://.*"})
    g.create_op(
        "MergeV2Checkpoints",
        (tf.reshape(shard.outputs[0], [1]), prefix),
        {"delete_old_dirs": True, "allow_missing_files": False},
    )
    tf.summary.image("img", tf.zeros([1, 2, 2, 3]))
    tf.summary.audio("snd", tf.zeros([1, 8]), 8000)
    tf.summary.text("words", tf.constant("hello"))
    tf.summary.tensor_summary("values", x)


def fused_ops(x, v):
    """ApplyGradientDescent, and the fused ops only the optimiser makes (here by hand)."""
    from flowbook.ops.state.training_ops import apply_gradient_descent

    apply_gradient_descent(v, 0.1, x)
    g, w, labels = x.graph, tf.ones([3, 3]), tf.constant([0, 1])
    img, one = tf.reshape(x, [1, 2, 3, 1]), (1, 1, 1, 1)
    conv = {
        "strides": one,
        "padding": "SAME",
        "data_format": "NHWC",
        "dilations": one,
        "use_cudnn_on_gpu": True,
    }
    pool = {
        "ksize": (1, 1, 3, 1),
        "strides": (1, 1, 3, 1),
        "padding": "VALID",
        "data_format": "NHWC",
    }
    pooled = tf.nn.max_pool(img, pool["ksize"], pool["strides"], "VALID")
    for kind, inputs, attrs in [
        (
            "_FusedMatMul",
            [x, w, w[0]],
            {"transpose_a": False, "transpose_b": True, "fused_ops": ["Add", "Relu"]},
        ),
        ("_FusedElementwise", [x, x, x], {"head": "Mul", "fused_ops": ["Sub"]}),
        ("_FusedSum", [x], {"axes": [0], "keep_dims": False, "fused_ops": []}),
        (
            "_FusedSparseSoftmaxCrossEntropyWithLogits",
            [x, labels, x],
            {"with_loss": True, "fused_ops": ["Mul"]},
        ),
        (
            "_FusedConv2D",
            [img, tf.ones([1, 1, 1, 2]), tf.ones([2])],
            {**conv, "fused_ops": ["BiasAdd", "Relu"]},
        ),
        (
            "_FusedMaxPoolGrad",
            [img, pooled, pooled],
            {**pool, "fused_ops": ["ReluGrad"], "pooled": False},
        ),
    ]:
        g.create_op(kind, inputs, attrs, name=kind[1:])


def image_ops(x):
    """tf.image's ops: decoders and encoders, resizes and their gradients, colour, boxes."""
    img = tf.reshape(x, [1, 2, 3, 1])
    rgb = tf.tile(img, [1, 1, 1, 3])
    png = tf.image.encode_png(tf.cast(rgb[0], tf.uint8), compression=3)
    jpg = tf.image.encode_jpeg(tf.cast(rgb[0], tf.uint8), quality=80)
    tf.image.decode_png(png, channels=3, dtype=tf.uint16)
    tf.image.decode_jpeg(jpg, channels=1, ratio=2, dct_method="INTEGER_ACCURATE")
    tf.image.decode_gif(png)
    tf.image.decode_bmp(png, channels=3)
    tf.image.decode_image(png, channels=3, dtype=tf.float32, expand_animations=False)
    tf.image.extract_jpeg_shape(jpg, tf.int64)
    tf.image.decode_and_crop_jpeg(jpg, [0, 0, 1, 1], channels=3)
    tf.image.adjust_jpeg_quality(rgb[0], 70)
    sized = [
        tf.image.resize_bilinear(img, [3, 4], half_pixel_centers=True),
        tf.image.resize_nearest_neighbor(img, [4, 5], align_corners=True),
        tf.image.resize_bicubic(img, [3, 3]),
    ]
    tf.image.resize_area(img, [1, 2])
    tf.gradients(tf.add_n([tf.reduce_sum(s) for s in sized]), img)
    tf.image.rgb_to_hsv(rgb)
    tf.image.hsv_to_rgb(rgb)
    tf.image.adjust_hue(rgb, 0.1)
    tf.image.adjust_saturation(rgb, 0.5)
    tf.image.adjust_contrast(rgb, 1.5)
    boxes = [[0.0, 0.0, 1.0, 1.0], [0.1, 0.2, 0.5, 0.9]]
    tf.image.crop_and_resize(rgb, boxes, [0, 0], [2, 2], extrapolation_value=0.5)
    tf.image.draw_bounding_boxes(rgb, [boxes], [[1.0, 0.0, 0.0, 1.0]])
    tf.image.non_max_suppression(boxes, [0.9, 0.8], 2, 0.4, 0.1)
    tf.image.non_max_suppression_overlaps([[1.0, 0.2], [0.2, 1.0]], [0.9, 0.8], 2, 0.4)
    tf.image.sample_distorted_bounding_box([2, 3, 3], [boxes], seed=2, area_range=(0.1, 1.0))


def stateless_random_ops():
    """tf.random's stateless ops: a shape and a [2] seed in, TensorFlow's values out."""
    seed = tf.constant([1, 2], tf.int64)
    tf.random.stateless_uniform([2], seed)
    tf.random.stateless_normal([2], seed, dtype=tf.float64)
    tf.random.stateless_truncated_normal([2], [3, 4])
    tf.random.stateless_uniform([2], seed, 0, 5, tf.int32)
    tf.random.split(seed)


def newer_ops(x):
    from flowbook.ops._builder import make1
    from flowbook.ops.math.cwise_grad_ops import ROWS

    image_ops(x)
    stateless_random_ops()
    resource_ops()
    saving_and_media_ops(x)
    y = tf.sigmoid(x)
    for row in ROWS:  # TensorFlow's element-wise gradient ops, as its gradient graphs hold them
        make1(row.op_type, (y, x), name=row.op_type)


def data_ops():
    """tf.data's iterator ops and the parsing ops (strings and files)."""
    it = tf.data.Dataset.range(3).batch(2).make_initializable_iterator()
    it.get_next()
    tf.data.Dataset.from_tensors((1.0, "a")).make_one_shot_iterator().get_next()
    tf.decode_csv(["1,a"], [[0], ["z"]], field_delim=",", na_value="NA", select_cols=[0, 1])
    tf.decode_raw(["ab"], tf.int16, little_endian=False)
    tf.io.write_file("/nonexistent/x", tf.read_file("/nonexistent/y"))
    spec = {"a": tf.FixedLenFeature([2], tf.float32, [0.0, 1.0]), "b": tf.VarLenFeature(tf.int64)}
    tf.parse_example([""], spec)
    queue_ops()


def queue_ops():
    """Queues, readers and CountUpTo (built, never run here)."""
    queues = [
        tf.FIFOQueue(3, [tf.int32, tf.string], shapes=[[], [2]]),
        tf.PaddingFIFOQueue(3, [tf.float32], shapes=[[None]]),
        tf.RandomShuffleQueue(5, 1, [tf.int32], seed=4),
        tf.PriorityQueue(3, [tf.float32], shapes=[[]]),
    ]
    q = queues[0]
    q.enqueue([1, ["a", "b"]])
    q.enqueue_many([[1], [["a", "b"]]])
    q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(2), q.size(), q.is_closed()
    q.close(cancel_pending_enqueues=True)
    names = tf.FIFOQueue(3, tf.string)
    readers = [
        tf.TextLineReader(skip_header_lines=1),
        tf.WholeFileReader(),
        tf.IdentityReader(),
        tf.TFRecordReader(),
        tf.FixedLengthRecordReader(4, 1, 2),
    ]
    for r in readers:
        r.read(names), r.num_records_produced(), r.num_work_units_completed(), r.reset()
    readers[0].read_up_to(names, 3)
    tf.count_up_to(tf.Variable(0, name="counter"), 3)
    sendrecv_ops()
    acc = tf.ConditionalAccumulator(tf.float32, [2], shared_name="w/grad_accum")
    acc.apply_grad([1.0, 2.0], local_step=3), acc.take_grad(2), acc.num_accumulated()
    acc.set_global_step(4)


def sendrecv_ops():
    """The Send/Recv pair, as a partition of a cluster run holds them (never run here)."""
    g = tf.get_default_graph()
    where = {
        "tensor_name": "edge_1_c",
        "send_device": "/job:ps/replica:0/task:0/device:CPU:0",
        "send_device_incarnation": 1,
        "client_terminated": False,
        "recv_device": "/job:worker/replica:0/task:0/device:CPU:0",
    }
    g.create_op("_Send", [tf.constant(1.0)], dict(where), name="send")
    g.create_op("_Recv", [], {**where, "tensor_type": tf.float32, "shape": (2, None)}, name="recv")


def compat_tail_ops(x, v):
    """Scatters, FFTs (and their gradients), strings, sparse."""
    for f in (tf.scatter_mul, tf.scatter_div, tf.scatter_min, tf.scatter_max):
        f(v, [1, 0], tf.ones([2, 3]))
    for f in (tf.scatter_nd_update, tf.scatter_nd_add, tf.scatter_nd_sub):
        f(v, [[0, 1]], [2.0])
    parts = [
        f(x, [[0, 1]], [2.0])
        for f in (
            tf.tensor_scatter_nd_update,
            tf.tensor_scatter_nd_add,
            tf.tensor_scatter_nd_sub,
            tf.tensor_scatter_nd_min,
            tf.tensor_scatter_nd_max,
        )
    ]
    z = tf.complex(x, x)
    for f in (tf.fft, tf.ifft, tf.fft2d, tf.ifft2d, tf.fft3d, tf.ifft3d):
        parts.append(tf.real(f(tf.reshape(z, [1, 2, 3]))))
    tf.gradients(tf.add_n([tf.reduce_sum(p) for p in parts]), x)
    words = tf.string_strip(tf.string_join([["a b", " c"], "d"], separator="-"))
    words = tf.regex_replace(tf.decode_base64(tf.encode_base64(words, pad=True)), "a", "b")
    n = tf.string_to_number(tf.substr(tf.as_string([1.5, 2.0], precision=2), 0, 3))
    tf.reduce_join(tf.strings.upper(tf.strings.lower(words)), 0, separator=",")
    tf.strings.length(words)
    for f in (tf.string_to_hash_bucket_fast, tf.string_to_hash_bucket):
        f(words, 5)
    tf.string_to_hash_bucket_strong(words, 5, [1, 2])
    split = tf.string_split(words)
    tf.edit_distance(split, split)
    q = tf.fake_quant_with_min_max_args(x, -1.0, 1.0, 4, True) + tf.fake_quant_with_min_max_vars(
        x, -1.0, 1.0
    )
    q += tf.fake_quant_with_min_max_vars_per_channel(x, [-1.0] * 3, [1.0] * 3)
    tf.gradients(q, x)
    tf.timestamp()
    tf.nn.ctc_greedy_decoder(tf.reshape(x, [2, 1, 3]), [2])
    return n


def _built():
    g = tf.Graph()
    with g.as_default():
        feed, fetch = every_op()
    return g, feed, fetch


def _imported(g):
    data = gdef.to_graph_def(g).SerializeToString()
    _, graph_pb2, _, _ = gdef._pb()
    gd = graph_pb2.GraphDef()
    gd.ParseFromString(data)
    g2 = tf.Graph()
    with g2.as_default():
        gdef.import_graph_def(gd, name="")
    return g2


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, DType) or isinstance(b, DType):
        return a == b
    return a == b and type(a) is type(b)


def test_the_graph_has_every_op():
    g, _, _ = _built()
    assert sorted(set(OPS) - {op.type for op in g.get_operations()}) == []


def test_every_op_round_trips():
    g, _feed, _fetch = _built()
    g2 = _imported(g)
    ops = g.get_operations()
    assert [op.name for op in g2.get_operations()] == [op.name for op in ops]
    for op in ops:
        back = g2.get_operation_by_name(op.name)
        where = f"{op.type} '{op.name}'"
        assert back.type == op.type, where
        assert [t.name for t in back.inputs] == [t.name for t in op.inputs], where
        assert [c.name for c in back.control_inputs] == [c.name for c in op.control_inputs], where
        assert back.device == op.device, where
        assert set(back.attrs) == set(op.attrs), where
        for key, value in op.attrs.items():
            assert _same(back.attrs[key], value), (
                f"{where}: attr {key}: {back.attrs[key]!r} != {value!r}"
            )
        assert [t.dtype for t in back.outputs] == [t.dtype for t in op.outputs], where


def test_the_imported_graph_computes_the_same():
    g, feed, fetch = _built()
    g2 = _imported(g)
    with tf.Session(graph=g) as s:
        s.run("v/Assign")  # the variable's initializer, by name in both graphs
        want = s.run(fetch, feed)
    with tf.Session(graph=g2) as s:
        s.run("v/Assign")
        got = s.run(fetch, feed)
    np.testing.assert_allclose(got, want, rtol=1e-6)
