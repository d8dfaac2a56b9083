"""RunOptions, ConfigProto and RunMetadata turn into TensorFlow's messages."""

from __future__ import annotations

from tensorboard.compat.proto import config_pb2

import flowbook as tf


def _traced_run() -> tf.RunMetadata:
    with tf.Graph().as_default(), tf.Session() as s:
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = tf.reduce_sum(x * 2.0, name="total")
        md = tf.RunMetadata()
        opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        s.run(y, {x: [[1.0, 2.0]]}, options=opts, run_metadata=md)
    return md


def test_traced_run_metadata_serializes_to_tensorflow_bytes():
    md = _traced_run()
    parsed = config_pb2.RunMetadata.FromString(md.SerializeToString())
    nodes = parsed.step_stats.dev_stats[0].node_stats
    assert [n.node_name for n in nodes] == [
        n.node_name for n in md.step_stats.dev_stats[0].node_stats
    ]
    total = next(n for n in nodes if n.node_name == "total")
    assert total.output[0].tensor_description.dtype == 1  # DT_FLOAT
    assert total.timeline_label.startswith("total = Sum(")
    assert str(md).startswith("step_stats {\n  dev_stats {")


def test_run_options_keep_tensorflow_s_fields_only():
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=5, check_numerics=True)
    proto = opts.to_proto()
    assert isinstance(proto, config_pb2.RunOptions)
    assert (proto.trace_level, proto.timeout_in_ms) == (config_pb2.RunOptions.FULL_TRACE, 5)


def test_config_proto_as_tensorflow_s_message():
    opts = tf.OptimizerOptions(opt_level=tf.OptimizerOptions.L0)
    config = tf.ConfigProto(
        graph_options=tf.GraphOptions(optimizer_options=opts),
        device_count={"GPU": 0, "CPU": 1},
        inter_op_parallelism_threads=2,
        operation_timeout_in_ms=7,
        allow_soft_placement=True,
    )
    parsed = config_pb2.ConfigProto.FromString(config.SerializeToString())
    assert parsed.graph_options.optimizer_options.opt_level == config_pb2.OptimizerOptions.L0
    assert dict(parsed.device_count) == {"GPU": 0, "CPU": 1}
    assert (parsed.inter_op_parallelism_threads, parsed.operation_timeout_in_ms) == (2, 7)
    assert parsed.allow_soft_placement and not parsed.HasField("gpu_options")
    assert str(tf.ConfigProto()) == ""
