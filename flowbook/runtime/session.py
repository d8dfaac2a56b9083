"""Session: run (parts of) a graph, TF1 style, and hold the variables' values.

``Session.run(fetches, feed_dict)`` in five steps:

1. **fetches** (a tensor, op, name like ``"c:0"``/``"c"``, variable, or any
   nesting of list, tuple, dict) are flattened into unique graph elements and
   a recipe to rebuild the structure; an op fetch gives None.
2. **feeds** (for any tensor, by object or name) are converted to the
   tensor's dtype and checked against its static shape.  A run with the last
   run's signature (same fetched tensors and ops, same feed keys: a training
   loop) skips steps 1-3's lookups, its feeds checked against what the last
   runs accepted (``flowbook.runtime.run_args.LastRun``; errors stay the general
   path's).
3. the **plan** for (fetches, feeds) comes from the cache (adding ops keeps it,
   edits of its ops drop it: ``flowbook.runtime.plan_cache``), or is built once
   (``flowbook.runtime.plan``), with its ``RunPath`` (``flowbook.runtime.codegen.compile``):
   what its runs learn, such as its compiled straight line.
4. the **optimiser** (``flowbook.runtime.optimize.optimizer.optimized``) may swap in the
   plan rewritten for the fed values' shapes (from the second run of a
   signature on; ``ConfigProto.graph_options.optimizer_options`` picks its
   passes) -- for runs no observer watches: a watched run (the live graph,
   ``tf.profile``, traces, the NaN guard) and ``prepare`` (the Stepper) run
   the plan as written, op for op.
5. ``flowbook.runtime.executor.execute`` runs it, on the path it chooses, with the
   observers attached (``observe``, ``Session.observers``) and those the
   run's options and the session's config ask for
   (``flowbook.runtime.observers.observers_for``: traces, the NaN guard).

The session owns per-op state that kernels are bound to: each variable's
value (``VarState``), each random op's generator, each
tf.data iterator's position (``IteratorState``) and each queue and reader
(``flowbook.state.resources``: cells by container, which ``Session.reset``
releases, and ``close`` too, cancelling the runs that wait on a queue), and it decides where
each op runs (``flowbook.runtime.placement``: device scopes, soft placement, the
first GPU by default); a plan built for it carries the copy nodes between
devices, and with ``ConfigProto(log_device_placement=True)`` each new plan
prints its ops' devices into the cell.  It is safe to call ``run`` from
several threads at once, and ``close`` from any thread ends the runs in flight
with a CancelledError naming the op they were in (``flowbook.platform.cancel``:
an exception raised in each running thread, so runs pay no check per op; a run
leaving its ``run`` withdraws a cancel it has not seen yet).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, name="x"); y = x * 2
    ...     with tf.Session() as sess:
    ...         float(sess.run(y, {x: 3.0}))
    6.0
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterator
from functools import partial
from threading import get_ident
from typing import Any

from flowbook.framework import errors, hooks
from flowbook.framework.devices import CPU, Device
from flowbook.framework.graph import Graph, get_default_graph
from flowbook.framework.tensor import Operation, Tensor
from flowbook.kernels.philox import OpRandom
from flowbook.platform.cancel import RunCancelled, raise_in, withdraw
from flowbook.runtime import blas
from flowbook.runtime.codegen.compile import RunPath
from flowbook.runtime.config import ConfigProto, RunOptions
from flowbook.runtime.executor import execute
from flowbook.runtime.observers import Observer, observers_for
from flowbook.runtime.op_errors import cancelled_error, note_interrupt
from flowbook.runtime.optimize.optimizer import optimized, passes_for
from flowbook.runtime.placement import Placer, log_placement
from flowbook.runtime.plan import Plan, build_plan
from flowbook.runtime.plan_cache import PlanCache
from flowbook.runtime.run_args import LastRun, feeds, fetch_elements, unpack
from flowbook.runtime.values import flatten, host_value, rebuild
from flowbook.state.iterator_state import IteratorState
from flowbook.state.resources import ResourceCell, cell_key
from flowbook.state.var_state import VarState

_observers: list[Observer] = []  # process-wide observers (fb.observe)
_open: weakref.WeakSet[BaseSession] = weakref.WeakSet()  # open sessions, for Session.reset
CANCEL_GRACE_S = 0.1  # after a close, runs waiting on its queues end first, with their own error


@contextlib.contextmanager
def observe(observer: Observer) -> Iterator[Observer]:
    """Attach ``observer`` to every run inside the ``with`` block, in any session.

    >>> import flowbook as fb
    >>> class Names(fb.Observer):
    ...     def __init__(self): self.seen = []
    ...     def before_op(self, op): self.seen.append(op.name)
    >>> with fb.Graph().as_default(), fb.Session() as s, observe(Names()) as names:
    ...     _ = s.run(fb.constant(1, name="one") + 1)
    >>> names.seen
    ['one', 'add/y', 'add']
    """
    _observers.append(observer)
    try:
        yield observer
    finally:
        _observers.remove(observer)


class BaseSession:
    """The machinery shared by Session and InteractiveSession."""

    observed = True  # False: observe()'s process-wide observers skip its runs

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        self.graph = graph if graph is not None else get_default_graph()
        self.config = config or ConfigProto()
        self.target = target
        blas.apply(self.config.intra_op_parallelism_threads)  # BLAS threads (run/blas.py)
        self._cache = PlanCache(self.graph)  # plans by run signature (flowbook.runtime.plan_cache)
        self._plans = self._cache.plans  # (*fetches, None, *fed tensors) -> plan, LRU last
        self._paths = self._cache.paths  # plan -> what its runs here have learnt
        # VariableV2 op -> its value, random op -> its generator; weak: a removed op's state goes
        self._variables: weakref.WeakKeyDictionary[Operation, VarState] = (
            weakref.WeakKeyDictionary()
        )
        self._rngs: weakref.WeakKeyDictionary[Operation, Any] = weakref.WeakKeyDictionary()
        self._iterators: dict[str, IteratorState] = {}  # tf.data iterator name -> its position
        self._cells: dict[tuple, ResourceCell] = {}  # queues, readers: resources.cell_key -> cell
        self._state_lock = threading.Lock()  # guards creating entries of the two dicts above
        self._closed = False
        self._running: dict[object, int] = {}  # each run in flight -> its thread's id
        self._run_lock = threading.Lock()  # held by close() while it cancels, and by a withdraw
        self.observers: list[Observer] = []  # observers of this session's runs
        self._placer: Placer | None = None  # op -> device; made on the first plan
        self._logged_mapping = False  # log_device_placement printed the device mapping
        self._passes = passes_for(
            self.config
        )  # the optimiser's passes (flowbook.runtime.optimize.optimizer)
        self._last: LastRun | None = None  # the last run's signature, for the next run like it
        _open.add(self)

    # ------------------------------------------------------------------ run
    def run(
        self,
        fetches: Any,
        feed_dict: dict | None = None,
        options: RunOptions | None = None,
        run_metadata: Any = None,
    ) -> Any:
        """Compute ``fetches``, feeding ``feed_dict``; returns numpy values in the fetches' shape.

        >>> import flowbook as tf
        >>> with tf.Graph().as_default(), tf.Session() as s:
        ...     a = tf.constant(1.0, name="a")
        ...     out = s.run({"a": a, "pair": (a, "a:0"), "op": a.op})
        >>> float(out["a"]), [float(v) for v in out["pair"]], out["op"]
        (1.0, [1.0, 1.0], None)
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        edited = self.graph._edit_log.count != self._cache.seen  # existing ops were edited
        last = self._last  # the last run's signature (flowbook.runtime.run_args.LastRun)
        if (
            last is not None
            and not edited
            and last.plan is self._cache.last
            and (feed_values := last.values(fetches, feed_dict)) is not None
        ):
            plan, path, structure = last.plan, last.path, last.structure
        else:
            elements, structure = fetch_elements(self.graph, fetches)
            feed_tensors, feed_values = feeds(self.graph, feed_dict) if feed_dict else ((), ())
            key = (*elements, None, *feed_tensors)
            if edited:
                self._cache.sweep(self._placer)
            plan = self._plans.get(key)
            if plan is None or (path := self._paths.get(plan)) is None:
                plan, path = self._plan(elements, feed_tensors, key)
            elif plan is not self._cache.last:  # least recently used plans go first
                self._cache.touch(key, plan)
            self._last = LastRun.of(
                self.graph, fetches, feed_dict, elements, structure, feed_tensors, key, plan, path
            )
        observers = self.observers + _observers if _observers and self.observed else self.observers
        # RunOptions.timeout_in_ms, else ConfigProto.operation_timeout_in_ms, as TF
        ms = (options is not None and options.timeout_in_ms) or self.config.operation_timeout_in_ms
        deadline = time.monotonic() + ms / 1000 if ms else None
        if options is not None or self.config.check_numerics:
            observers = [*observers, *observers_for(options, self.config, run_metadata)]
        opt = self._passes and not plan.control_flow  # optimised unless watched op by op
        faster = partial(optimized, plan, path, feed_values, self._passes) if opt else None
        threads = self.config.inter_op_parallelism_threads
        token = object()  # this run, in _running while it may be cancelled
        try:
            self._running[token] = get_ident()
            if self._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            return unpack(
                structure, execute(plan, path, feed_values, observers, deadline, threads, faster)
            )
        except RunCancelled as e:
            if isinstance(e.__context__, errors.OpError):  # it came as the run failed anyway
                raise e.__context__ from None
            raise cancelled_error(plan, path, e) from None
        except KeyboardInterrupt as e:  # Ctrl-C, Jupyter's Interrupt: say where it stopped
            note_interrupt(plan, path, e)
            raise
        finally:
            while True:  # a cancel landing in the clean-up finds the run over: clean up again
                try:
                    self._left_run(token)
                    break
                except RunCancelled:
                    continue

    def _left_run(self, token: object) -> None:
        """The run ``token`` ended: forget it; after a close, withdraw a cancel it has not seen
        (each step can be repeated: a cancel may land anywhere in this, until the withdraw)."""
        self._running.pop(token, None)
        if self._closed:  # close() cancels under the lock: after it, nothing more comes
            with self._run_lock:
                withdraw(get_ident())

    def _plan(self, elements: list[Any], feed_tensors: Any, key: tuple) -> tuple[Plan, RunPath]:
        plan = build_plan(self.graph, elements, (), feed_tensors, self._bind)
        if self.config.log_device_placement:
            devices = None if self._logged_mapping else self.placer.devices
            self._logged_mapping = True
            log_placement(plan, devices)
        return plan, self._cache.add(key, plan)

    def prepare(self, fetches: Any, feed_dict: dict | None = None) -> Prepared:
        """What ``run(fetches, feed_dict)`` would execute, without running it (for the Stepper).

        >>> import numpy as np
        >>> import flowbook as tf
        >>> with tf.Graph().as_default(), tf.Session() as s:
        ...     x = tf.placeholder(tf.float32, name="x")
        ...     p = s.prepare({"y": x * 2.0}, {x: 3.0})
        >>> [op.name for op in p.plan.ops], p.unpack([np.float32(6.0)])
        (['mul/y', 'mul'], {'y': np.float32(6.0)})
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        elements, structure = flatten(self.graph, fetches)
        tensors, values = self._feeds(feed_dict) if feed_dict else ((), ())
        plan = build_plan(self.graph, elements, (), tensors, self._bind)
        return Prepared(plan, values, dict(zip(tensors, values)), structure)

    @property
    def placer(self) -> Placer:
        """Where this session's ops run (``flowbook.runtime.placement.Placer``), made on first use."""
        if self._placer is None:
            self._placer = Placer(self.config)
        return self._placer

    @property
    def _bind(self) -> _Binder:
        """``bind`` for ``build_plan``: op -> its kernel on its device; ``.place`` says which."""
        return _Binder(self)

    def _bind_on(self, op: Operation, device: Device) -> Any:
        opdef = op._opdef
        attrs = op.attrs
        if opdef.resource == "variable":
            attrs = {**attrs, "var": self._variable_state(op)}
        elif opdef.resource == "rng":
            attrs = {**attrs, "rng": self._rng(op, device)}
        elif opdef.resource == "iterator":
            attrs = {**attrs, "iterator": self._iterator_state(op.attrs["shared_name"])}
        elif opdef.resource == "container":
            attrs = {**attrs, "cell": self._cell(op)}
        if device is CPU:
            return opdef.bound_kernel(device.xp, attrs)
        return device.wrap(opdef.bound_kernel(device.xp, attrs))

    def _variable_state(self, var_op: Operation) -> VarState:
        with self._state_lock:
            state = self._variables.get(var_op)
            if state is None:
                state = self._variables[var_op] = VarState(var_op)
            return state

    def _iterator_state(self, name: str) -> IteratorState:
        with self._state_lock:
            state = self._iterators.get(name)
            if state is None:
                state = self._iterators[name] = IteratorState(name)
            return state

    def _cell(self, op: Operation) -> ResourceCell:
        key = cell_key(op)
        with self._state_lock:
            cell = self._cells.get(key)
            if cell is None:
                cell = self._cells[key] = ResourceCell(key[0], key[1])
            return cell

    def _rng(self, op: Operation, device: Device = CPU) -> Any:
        with self._state_lock:
            rng = self._rngs.get(op)
            if rng is None:
                rng = self._rngs[op] = OpRandom.of(op.attrs, device)  # TF's Philox, the device's
            return rng

    def _feeds(self, feed_dict: dict) -> tuple[tuple[Tensor, ...], tuple[Any, ...]]:
        """The fed tensors and checked values of ``feed_dict`` (``run_args.feeds``)."""
        return feeds(self.graph, feed_dict)

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Release the session's variables, queues and plans; later runs raise RuntimeError.

        Runs waiting on one of its queues or accumulators end first, with the
        CancelledError that resource gives; the other runs in flight in other threads
        end CANCEL_GRACE_S later, at their next Python step, with a CancelledError naming
        the op they were in (:mod:`flowbook.platform.cancel`).
        """
        with self._run_lock:
            self._closed = True
        _open.discard(self)
        for cell in list(self._cells.values()):
            cell.release("the session was closed")
        if self._running:
            timer = threading.Timer(CANCEL_GRACE_S, self._cancel_runs, (get_ident(),))
            timer.daemon = True
            timer.start()
        self._cache.clear()
        self._variables.clear()
        self._rngs.clear()
        self._iterators.clear()

    def _cancel_runs(self, closer: int) -> None:
        """End the runs still in flight after a close (not one in the closing thread: a hook
        that closes its own session lets that run finish)."""
        with self._run_lock:
            for tid in set(self._running.values()):
                if tid != closer:
                    raise_in(tid, RunCancelled)

    @staticmethod
    def reset(target: str = "", containers: list[str] | None = None, config: Any = None) -> None:
        """Release the variables, queues and readers of ``containers`` (all when None), in
        every open session (TF1's ``tf.Session.reset``); a reset queue's waiters are cancelled.

        >>> import flowbook as tf
        >>> with tf.Graph().as_default(), tf.Session() as s:
        ...     with tf.container("experiment"):
        ...         q = tf.FIFOQueue(3, tf.int32)
        ...     s.run(q.enqueue(1)); tf.Session.reset("", ["experiment"])
        ...     int(s.run(q.size()))
        0
        """
        for session in list(_open):
            session._reset(None if containers is None else set(containers))

    def _reset(self, containers: set[str] | None) -> None:
        for cell in list(self._cells.values()):
            if containers is None or cell.container in containers:
                cell.release("its container was reset")
        placed = getattr(self.graph, "_containers", {})  # VariableV2 op name -> its container
        for op, state in list(self._variables.items()):
            if containers is None or placed.get(op.name, "") in containers:
                state.value = None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def graph_def(self) -> Any:
        return self.graph.as_graph_def()

    def as_default(self) -> Any:
        """Make this the default session (for ``Tensor.eval()``) inside a ``with`` block."""
        return _default_session(self)

    def list_devices(self) -> list[Any]:
        """The devices this session can place ops on, CPU first.

        >>> import flowbook as tf
        >>> with tf.Session(config=tf.ConfigProto(device_count={"GPU": 0})) as s:
        ...     [d.name for d in s.list_devices()]
        ['/job:localhost/replica:0/task:0/device:CPU:0']
        """
        return [
            _DeviceAttributes(d.full_name, d.device_type, d.memory_limit_bytes)
            for d in self.placer.devices
        ]

    def make_callable(self, fetches: Any, feed_list: Any = None) -> Any:
        """A function running ``fetches`` with positional feeds (TF1's make_callable)."""
        feed_list = list(feed_list or ())

        def call(*values: Any) -> Any:
            return self.run(fetches, dict(zip(feed_list, values)))

        return call


class Session(BaseSession):
    """A TF1 Session.  ``with Session() as s:`` makes it (and its graph) the default.

    >>> import flowbook as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     c = tf.constant(5)
    >>> with tf.Session(graph=g) as sess:
    ...     int(c.eval())
    5
    """

    def __new__(cls, target: Any = "", *args: Any, **kwargs: Any) -> Session:  # "dask://..."
        return super().__new__(hooks.cluster_session(cls, target))  # a DaskSession, or cls

    def __enter__(self) -> Session:
        self._contexts = [self.graph.as_default(), self.as_default()]
        for c in self._contexts:
            c.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        for c in reversed(self._contexts):
            c.__exit__(*exc)
        self.close()


class InteractiveSession(BaseSession):
    """A session that makes itself the default on creation, for notebooks and shells.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     s = tf.InteractiveSession(); v = float(tf.constant(2.0).eval()); s.close()
    >>> v
    2.0
    """

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        super().__init__(target, graph, config)
        _DEFAULT.interactive = self

    def close(self) -> None:
        if _DEFAULT.interactive is self:
            _DEFAULT.interactive = None
        super().close()


class Prepared:
    """A run made ready by ``Session.prepare``: its plan, its converted feeds, and how to
    shape its fetched values."""

    __slots__ = ("fed", "feeds", "plan", "structure")

    def __init__(self, plan: Plan, feeds: tuple, fed: dict[Tensor, Any], structure: Any) -> None:
        self.plan = plan  # built as run() builds it: same pruning, kernels, devices
        self.feeds = feeds  # the fed values, converted, in plan.feed_slots order
        self.fed = fed  # fed tensor -> its value
        self.structure = structure  # the fetches' nesting

    def unpack(self, values: list[Any]) -> Any:
        """Host copies of the fetched ``values`` (fetch order) in the fetches' structure."""
        return rebuild(self.structure, [None if v is None else host_value(v) for v in values])


class _Binder:
    """A session's ``bind`` for ``build_plan``: an op's kernel, bound on the op's device.

    ``place`` is the session's Placer, so a plan built with this binder (by
    the session, or by the Stepper) places ops and inserts copies the same way.
    """

    __slots__ = ("session",)

    def __init__(self, session: BaseSession) -> None:
        self.session = session

    @property
    def place(self) -> Placer:
        return self.session.placer

    def __call__(self, op: Operation) -> Any:
        return self.session._bind_on(op, self.session.placer(op))


class _DeviceAttributes:
    def __init__(self, name: str, device_type: str, memory_limit_bytes: int = 0) -> None:
        self.name = name
        self.device_type = device_type
        self.memory_limit_bytes = memory_limit_bytes

    def __repr__(self) -> str:
        return f"_DeviceAttributes({self.name}, {self.device_type})"


# ----------------------------------------------------------- default session
class _DefaultSessions(threading.local):
    def __init__(self) -> None:
        self.stack: list[BaseSession] = []


_STACK = _DefaultSessions()


class _Interactive:
    interactive: BaseSession | None = None  # the process's InteractiveSession, if any


_DEFAULT = _Interactive()


@contextlib.contextmanager
def _default_session(session: BaseSession) -> Iterator[BaseSession]:
    _STACK.stack.append(session)
    try:
        yield session
    finally:
        _STACK.stack.remove(session)


def get_default_session() -> BaseSession | None:
    """The innermost ``with session`` block's session, or the InteractiveSession."""
    if _STACK.stack:
        return _STACK.stack[-1]
    return _DEFAULT.interactive


def _session_for(graph: Graph, session: BaseSession | None) -> BaseSession:
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError(
                "Cannot evaluate tensor using `eval()`: No default session is registered. Use "
                "`with sess.as_default()` or pass an explicit session to `eval(session=sess)`"
            )
    if session.graph is not graph:
        raise ValueError(
            "Cannot use the given session to evaluate tensor: the tensor's graph is different "
            "from the session's graph."
        )
    return session


hooks.session_for.fill(_session_for)  # Tensor.eval, Operation.run, Variable.load
