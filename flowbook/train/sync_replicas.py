"""``tf.train.SyncReplicasOptimizer``: synchronous data parallelism between graphs (the whitepaper's §7).

Every worker process builds the same model (``replica_device_setter`` puts
the variables on the ps) and wraps its optimizer.  ``apply_gradients`` then
builds, as TF1 does:

- per trained variable, on the variable's device, a ``ConditionalAccumulator``
  (``shared_name`` ``<var name>/grad_accum``, so every worker's graph names the
  same one on the ps); the worker's train op pushes its gradient with its
  ``local_step`` (``apply_grad``), and the chief's sync op takes the average
  of ``replicas_to_aggregate`` of them (``take_grad``).  A gradient whose
  local step is older than the accumulator's step is dropped: stale;
- ``sync_rep_local_step``: a local variable on the worker (not the ps), the
  global step this worker's gradients were computed at;
- the token queue ``sync_token_q`` on the global step's device: the train op
  pushes the gradients, then waits for a token and sets its local step to it;
  the chief's **sync op** applies the averaged gradients with the wrapped
  optimizer (incrementing ``global_step``) and only then enqueues
  ``max(total_num_replicas, replicas_to_aggregate)`` tokens holding the new
  step, which lets every replica start its next step;
- the chief's ``QueueRunner`` (``get_chief_queue_runner``, on a ``dummy_queue``
  as in TF, so closing it never closes the token queue) runs the sync op in a
  loop; ``chief_init_op`` sets every accumulator's step to the global step,
  ``local_step_init_op`` sets a worker's local step; ``get_init_tokens_op``
  puts the first tokens in.

``make_session_run_hook(is_chief)`` does the rest in a monitored session:
it checks the global variables are initialised (the chief's doing), runs
the local init op, the chief's init tokens, and starts the chief's queue
runner on the session's coordinator.  Below, one replica: its first step
takes an init token at once, so its second gradient is still computed at
step 0 -- after the first update it is stale and dropped, as in TF.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     w = tf.Variable(1.0, name="w")
    ...     step = tf.train.get_or_create_global_step()
    ...     opt = SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.5), 1)
    ...     train = opt.minimize(w * w, global_step=step)
    ...     hooks = [opt.make_session_run_hook(is_chief=True)]
    ...     with tf.train.MonitoredTrainingSession(hooks=hooks) as s:
    ...         _ = s.run(train); _ = s.run(train)
    ...         float(s.run(w)), int(s.run(step))
    (0.0, 1)
"""

from __future__ import annotations

from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import GraphKeys, get_default_graph
from flowbook.ops.array import array_ops
from flowbook.ops.control_flow.control_flow_ops import group, no_op
from flowbook.ops.io.queues import FIFOQueue
from flowbook.ops.state import state_ops
from flowbook.ops.state.accumulators import ConditionalAccumulator
from flowbook.platform.tf_logging import info
from flowbook.train.optimizer import Optimizer
from flowbook.train.queue_runner import QueueRunner
from flowbook.train.session_run_hook import SessionRunHook
from flowbook.variables.variables import Variable, global_variables, report_uninitialized_variables

__all__ = ["SyncReplicasOptimizer"]


class SyncReplicasOptimizer(Optimizer):
    """Aggregates the replicas' gradients on the ps and applies their mean once per step.

    ``total_num_replicas`` defaults to ``replicas_to_aggregate``; more replicas
    than that are backups (the slowest ones' gradients arrive stale and are
    dropped), fewer means each replica contributes several batches per step.
    """

    def __init__(
        self,
        opt: Optimizer,
        replicas_to_aggregate: int,
        total_num_replicas: int | None = None,
        variable_averages: Any = None,
        variables_to_average: Any = None,
        use_locking: bool = False,
        name: str = "sync_replicas",
    ) -> None:
        super().__init__(use_locking, name)
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        info(
            f"SyncReplicasV2: replicas_to_aggregate={replicas_to_aggregate}; "
            f"total_num_replicas={total_num_replicas}"
        )
        self._opt = opt  # the optimizer that applies the averaged gradients
        self._replicas_to_aggregate = int(replicas_to_aggregate)  # gradients per update
        self._total_num_replicas = int(total_num_replicas)  # replicas training
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._variable_averages = variable_averages  # an ExponentialMovingAverage, or None
        self._variables_to_average = variables_to_average  # what it averages
        self._gradients_applied = False  # apply_gradients ran: the ops below exist
        self._global_step: Any = None  # the model's global step variable
        self._sync_token_queue: Any = None  # tokens: the global step, once per replica
        self._chief_queue_runner: QueueRunner | None = None  # runs the sync op on the chief
        self._accumulator_list: list[tuple[ConditionalAccumulator, str]] = []  # with devices
        self._local_step: Any = None  # sync_rep_local_step, on this worker
        self.local_step_init_op: Any = None  # local step := global step
        self.chief_init_op: Any = None  # that, and every accumulator's step := global step
        self.ready_for_local_init_op: Any = None  # names of uninitialised global variables

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's ``compute_gradients``."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
    ) -> Any:
        """Push the gradients to the accumulators, then wait for a token: the train op.

        Also builds the chief's sync op and queue runner (see the module docstring).
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        graph = get_default_graph()
        self._global_step = global_step
        local_anchor = no_op()  # placed on this worker by the device scope in force
        with graph.device(local_anchor.device):  # keeps the local step off the ps
            self._local_step = Variable(
                0,
                trainable=False,
                collections=[GraphKeys.LOCAL_VARIABLES],
                dtype=global_step.dtype.base_dtype,
                name="sync_rep_local_step",
            )
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())
        train_ops, aggregated, var_list = [], [], []
        with graph.name_scope(self._name):
            for grad, var in grads_and_vars:
                var_list.append(var)
                with graph.device(var.device):
                    if grad is None:
                        aggregated.append(None)  # passes through
                        continue
                    accum = ConditionalAccumulator(
                        grad.dtype, shape=var.get_shape(), shared_name=var.name + "/grad_accum"
                    )
                    train_ops.append(accum.apply_grad(grad, local_step=self._local_step))
                    aggregated.append(accum.take_grad(self._replicas_to_aggregate))
                    self._accumulator_list.append((accum, var.device))
            with graph.device(global_step.device), graph.name_scope(None):
                update_op = self._opt.apply_gradients(zip(aggregated, var_list), global_step)
                self._sync_token_queue = FIFOQueue(
                    -1,
                    global_step.dtype.base_dtype,
                    shapes=(),
                    name="sync_token_q",
                    shared_name="sync_token_q",
                )
                dummy_queue = FIFOQueue(
                    1, dtypes.int32, shapes=(), name="dummy_queue", shared_name="dummy_queue"
                )
                with graph.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with graph.control_dependencies([update_op]):
                    tokens = array_ops.fill([self._tokens_per_step], global_step)
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with graph.control_dependencies([sync_op]):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = QueueRunner(dummy_queue, [sync_op])
            for accum, device in self._accumulator_list:
                with graph.device(device):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init_ops)
        self._gradients_applied = True
        return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner the chief runs: take the averages, apply them, hand out tokens."""
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner  # type: ignore[return-value]

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped optimizer's slot."""
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        """The wrapped optimizer's slot names."""
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list[Variable]:
        """The wrapped optimizer's variables (not the local step)."""
        return self._opt.variables()

    def get_init_tokens_op(self, num_tokens: int = -1) -> Any:
        """The op putting the first ``num_tokens`` tokens (default ``replicas_to_aggregate``) in
        the token queue; the chief runs it once."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(
                f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                f"{needed} (needed)"
            )
        if num_tokens <= 0:
            return no_op(name="no_init_tokens")
        graph = get_default_graph()
        with graph.device(self._global_step.device), graph.name_scope(None):
            tokens = array_ops.fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,))

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook that initialises this replica (and, on the chief, starts the sync)."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the local (or chief) init op, the init tokens and the chief's queue runner."""

    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._opt = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self) -> None:
        opt = self._opt
        if not opt._gradients_applied:
            raise ValueError(
                "SyncReplicasOptimizer.apply_gradient should be called before using the hook."
            )
        self._ready_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session: Any, coord: Any) -> None:
        missing = session.run(self._ready_op)
        if len(missing):
            names = [m.decode() if isinstance(m, bytes) else str(m) for m in missing]
            raise RuntimeError(
                "Init operations did not make model ready for SyncReplicasOptimizer local_init. "
                f"Init op: {self._local_init_op.name}, error: Variables not initialized: "
                f"{', '.join(names)}"
            )
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
