"""``fb.train``: optimizers, the global step and checkpoints, as TF1's ``tf.train``.

- ``optimizer``: the ``Optimizer`` base (``minimize`` = ``compute_gradients`` +
  ``apply_gradients``; slot variables), and one module per optimizer:
  ``GradientDescentOptimizer``, ``MomentumOptimizer``, ``AdamOptimizer``,
  ``AdagradOptimizer``, ``RMSPropOptimizer``, ``AdadeltaOptimizer``, ``FtrlOptimizer``,
  and the proximal family (``proximal``: ``ProximalGradientDescentOptimizer``,
  ``ProximalAdagradOptimizer``, ``AdagradDAOptimizer``).  Updates are ordinary graph ops
  ending in ``assign``/``assign_add``/``assign_sub``, with TF's kernel formulas,
  so they show in the graph and match TensorFlow to float32 round-off.
- ``training_util``: ``get_or_create_global_step`` and friends;
  ``learning_rate_decay``: the schedules (``exponential_decay``,
  ``piecewise_constant``, ``polynomial_decay``, ``cosine_decay``...).
- hooks and monitored sessions: ``session_run_hook`` (the protocol),
  ``basic_hooks`` (stop, log, NaN, feed, final ops), ``saving_hooks``
  (checkpoints, summaries, step rate), ``monitored_session`` (``Scaffold``,
  ``MonitoredSession``, ``MonitoredTrainingSession``, ``WorkerSessionCreator``).
- distribution: ``ClusterSpec``, ``replica_device_setter`` and ``Server``
  (``flowbook.distributed``), ``SyncReplicasOptimizer`` (``sync_replicas``).
- ``moving_averages``: ``ExponentialMovingAverage`` (shadow variables).
- ``saver``: ``Saver`` (TensorFlow's checkpoint format V2, ``tensor_bundle``; the older ``.npz``
  with ``write_version=SaverDef.V1``; written atomically);
  ``checkpoint_management``: ``latest_checkpoint`` and the ``checkpoint`` file;
  ``checkpoint_utils``: the file format, ``list_variables``, ``load_variable``;
  ``checkpoint_tools``: ``load_checkpoint``, ``checkpoints_iterator``...;
  ``checkpoint_reader``: reading damaged or hostile checkpoints (DataLossError).

    >>> import flowbook as fb
    >>> from flowbook import train
    >>> with fb.Graph().as_default():
    ...     w = fb.Variable(0.0, name="w")
    ...     step = train.get_or_create_global_step()
    ...     op = train.MomentumOptimizer(0.1, 0.9).apply_gradients([(fb.constant(1.0), w)], step)
    ...     with fb.Session() as s:
    ...         _ = s.run(fb.global_variables_initializer())
    ...         _ = s.run(op); _ = s.run(op)
    ...         round(float(s.run(w)), 4), int(s.run(step))
    (-0.29, 2)
"""

import importlib
from typing import Any

from flowbook.distributed.cluster import ClusterSpec, replica_device_setter
from flowbook.distributed.server_api import Server
from flowbook.graph_io.graph_def import write_graph
from flowbook.ops.io.example_ops import example_pb2
from flowbook.summary.writer import FileWriter as SummaryWriter
from flowbook.train.adadelta import AdadeltaOptimizer
from flowbook.train.adagrad import AdagradOptimizer
from flowbook.train.adam import AdamOptimizer
from flowbook.train.basic_hooks import (
    FeedFnHook,
    FinalOpsHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StopAtStepHook,
)
from flowbook.train.checkpoint_management import (
    CheckpointState,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
    update_checkpoint_state,
)
from flowbook.train.checkpoint_tools import (
    CheckpointReader,
    NewCheckpointReader,
    checkpoints_iterator,
    get_checkpoint_mtimes,
    load_checkpoint,
    remove_checkpoint,
)
from flowbook.train.checkpoint_utils import list_variables, load_variable
from flowbook.train.coordinator import Coordinator, LooperThread
from flowbook.train.ftrl import FtrlOptimizer
from flowbook.train.gradient_descent import GradientDescentOptimizer
from flowbook.train.input import (
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    match_filenames_once,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from flowbook.train.learning_rate_decay import (
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    noisy_linear_cosine_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from flowbook.train.meta_graph import export_meta_graph, import_meta_graph
from flowbook.train.momentum import MomentumOptimizer
from flowbook.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
    SingularMonitoredSession,
    WorkerSessionCreator,
    basic_train_loop,
)
from flowbook.train.moving_averages import ExponentialMovingAverage
from flowbook.train.optimizer import Optimizer
from flowbook.train.proximal import (
    AdagradDAOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
)
from flowbook.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from flowbook.train.rmsprop import RMSPropOptimizer
from flowbook.train.saver import Saver
from flowbook.train.saving_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    StepCounterHook,
    SummarySaverHook,
)
from flowbook.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from flowbook.train.sync_replicas import SyncReplicasOptimizer
from flowbook.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from flowbook.train.warm_start import (
    GlobalStepWaiterHook,
    SessionCreator,
    VocabInfo,
    generate_checkpoint_state_proto,
    init_from_checkpoint,
    summary_iterator,
    warm_start,
)

__all__ = [
    "AdadeltaOptimizer",
    "AdagradDAOptimizer",
    "AdagradOptimizer",
    "AdamOptimizer",
    "CheckpointReader",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "CheckpointState",
    "ChiefSessionCreator",
    "ClusterSpec",
    "Coordinator",
    "ExponentialMovingAverage",
    "FeedFnHook",
    "FinalOpsHook",
    "FtrlOptimizer",
    "GlobalStepWaiterHook",
    "GradientDescentOptimizer",
    "LoggingTensorHook",
    "LooperThread",
    "MomentumOptimizer",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "NewCheckpointReader",
    "Optimizer",
    "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer",
    "QueueRunner",
    "RMSPropOptimizer",
    "Saver",
    "Scaffold",
    "SecondOrStepTimer",
    "Server",
    "SessionCreator",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "SingularMonitoredSession",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "SummaryWriter",
    "SyncReplicasOptimizer",
    "VocabInfo",
    "WorkerSessionCreator",
    "add_queue_runner",
    "assert_global_step",
    "basic_train_loop",
    "batch",
    "batch_join",
    "checkpoint_exists",
    "checkpoints_iterator",
    "cosine_decay",
    "cosine_decay_restarts",
    "create_global_step",
    "exponential_decay",
    "export_meta_graph",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "import_meta_graph",
    "init_from_checkpoint",
    "input_producer",
    "inverse_time_decay",
    "latest_checkpoint",
    "limit_epochs",
    "linear_cosine_decay",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "match_filenames_once",
    "natural_exp_decay",
    "noisy_linear_cosine_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
    "range_input_producer",
    "remove_checkpoint",
    "replica_device_setter",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "start_queue_runners",
    "string_input_producer",
    "summary_iterator",
    "update_checkpoint_state",
    "warm_start",
    "write_graph",
]

# tf.train.Example and its parts: protobuf classes from the tfrecord package, loaded on first use
_EXAMPLE_PROTOS = (
    "Example",
    "Features",
    "Feature",
    "BytesList",
    "FloatList",
    "Int64List",
    "FeatureList",
    "FeatureLists",
    "SequenceExample",
)


def __getattr__(name: str) -> Any:
    if name in _EXAMPLE_PROTOS:
        return getattr(example_pb2(), name)
    if name == "SaverDef":  # TensorFlow's message, from the tensorboard package (loaded on use)
        return importlib.import_module("tensorboard.compat.proto.saver_pb2").SaverDef
    raise AttributeError(f"module 'flowbook.train' has no attribute {name!r}")
