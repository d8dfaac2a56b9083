"""Session: run (parts of) a graph, TF1 style, and hold the variables' values.

``Session.run(fetches, feed_dict)`` in four steps:

1. **fetches** (a tensor, op, name like ``"c:0"``/``"c"``, variable, or any
   nesting of list, tuple, dict) are flattened into unique graph elements and
   a recipe to rebuild the structure; an op fetch gives None.
2. **feeds** (for any tensor, by object or name) are converted to the
   tensor's dtype and checked against its static shape.
3. the **plan** for (fetches, feeds, graph version) comes from the cache, or is
   built once (``flowbook.plan``): a repeated run does no graph work.
4. an **executor** runs it (``flowbook.executor``): the plan's compiled
   straight-line form (from its second run; the serial reference the first
   time) when nothing calls for more, else the threaded scheduler: for a
   deadline, per-op observers, ops off the CPU, or heavy ops that may go to
   the thread pool (a plan whose heavy ops all ran inline last time, with
   feeds of the same shapes, runs straight: see ``_dispatch``).

The session owns per-op state that kernels are bound to: each variable's
value (``VarState``) and each random op's generator, and it decides where
each op runs (``flowbook.placement``: device scopes, soft placement, the
first GPU by default); a plan built for it carries the copy nodes between
devices, and with ``ConfigProto(log_device_placement=True)`` each new plan
prints its ops' devices into the cell.  It is safe to call ``run`` from
several threads at once.

    >>> import flowbook as tf
    >>> with tf.Graph().as_default():
    ...     x = tf.placeholder(tf.float32, name="x"); y = x * 2
    ...     with tf.Session() as sess:
    ...         float(sess.run(y, {x: 3.0}))
    6.0
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from flowbook import executor
from flowbook.config import ConfigProto, RunOptions
from flowbook.devices import CPU, Device
from flowbook.graph import Graph, get_default_graph
from flowbook.observers import timings_hooks
from flowbook.ops.state_ops import VarState
from flowbook.placement import Placer, log_placement
from flowbook.plan import COMPILE_AFTER_RUNS, Plan, build_plan, compile_plan
from flowbook.tensor import Operation, Tensor
from flowbook.tensor_shape import compatible, fmt

MAX_PLANS = 256  # cached run signatures per session, for one graph version
_observers: list[executor.Observer] = []  # process-wide observers (fb.observe)


@contextlib.contextmanager
def observe(observer: executor.Observer) -> Iterator[executor.Observer]:
    """Attach ``observer`` to every run inside the ``with`` block, in any session.

    >>> import flowbook as fb
    >>> class Names(fb.executor.Observer):
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

    def __init__(
        self, target: str = "", graph: Graph | None = None, config: ConfigProto | None = None
    ) -> None:
        self.graph = graph if graph is not None else get_default_graph()
        self.config = config or ConfigProto()
        self.target = target
        self._plans: dict[tuple, Plan] = {}  # (fetches, feeds, graph version) -> plan
        # VariableV2 op -> its value here; random op -> its generator here.  Weak keys: an op
        # removed from the graph (a re-run notebook cell) takes its state with it.
        self._variables: weakref.WeakKeyDictionary[Operation, VarState] = (
            weakref.WeakKeyDictionary()
        )
        self._rngs: weakref.WeakKeyDictionary[Operation, Any] = weakref.WeakKeyDictionary()
        self._state_lock = threading.Lock()  # guards creating entries of the two dicts above
        self._closed = False
        self.observers: list[executor.Observer] = []  # observers of this session's runs
        self._placer: Placer | None = None  # op -> device; made on the first plan
        self._logged_mapping = False  # log_device_placement printed the device mapping

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
        if type(fetches) is Tensor and fetches.op.graph is self.graph:  # the common case, fast
            elements: list[Any] = [fetches]
            structure: Any = 0
        else:
            elements, structure = _flatten(self.graph, fetches)
        if feed_dict:
            feed_tensors, feed_values = self._feeds(feed_dict)
        else:
            feed_tensors, feed_values = (), ()
        key = (*elements, None, *feed_tensors, self.graph._version)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(elements, feed_tensors, key)
        values = self._execute(plan, feed_values, options, run_metadata)
        if structure == 0:
            return _to_numpy(values[0])
        return _rebuild(structure, [None if v is None else _to_numpy(v) for v in values])

    def _plan(self, elements: list[Any], feed_tensors: Any, key: tuple) -> Plan:
        plan = build_plan(self.graph, elements, (), feed_tensors, self._bind)
        if self.config.log_device_placement:
            devices = None if self._logged_mapping else self.placer.devices
            self._logged_mapping = True
            log_placement(plan, devices)
        if len(self._plans) >= MAX_PLANS or any(k[-1] != key[-1] for k in list(self._plans)[:1]):
            self._plans.clear()  # plans of an older graph version are never hit again
        self._plans[key] = plan
        return plan

    def _execute(
        self, plan: Plan, feed_values: Any, options: RunOptions | None, run_metadata: Any = None
    ) -> list[Any]:
        observers = self.observers + _observers if (self.observers or _observers) else ()
        timeout = 0
        if options is not None:
            timeout = options.timeout_in_ms
            observers = self._option_observers(options, run_metadata, observers)
        if self.config.check_numerics:
            from flowbook.debug import NanGuard

            observers = [*observers, NanGuard()]
        whole: list[executor.Observer] = []  # observers of this run as a whole (no per-op hooks)
        if observers:
            per_op = []
            for o in observers:
                r = o.for_run(plan)
                (whole if r is None else per_op).append(o if r is None else r)
            observers = per_op
        if whole:
            return self._execute_watched(plan, feed_values, observers, timeout, whole)
        return self._dispatch(plan, feed_values, observers, timeout)

    def _execute_watched(
        self, plan: Plan, feed_values: Any, observers: Any, timeout: int, whole: list
    ) -> list[Any]:
        """Run with ``whole`` seeing only the start and the end (the run keeps its fast path)."""
        for o in whole:
            o.on_start(plan)
        error: BaseException | None = None
        try:
            return self._dispatch(plan, feed_values, observers, timeout)
        except BaseException as e:
            error = e
            raise
        finally:
            for o in whole:
                o.on_finish(plan, error)

    def _dispatch(self, plan: Plan, feed_values: Any, observers: Any, timeout: int) -> list[Any]:
        """Run ``plan`` on the cheapest path that serves the run.

        The compiled straight line (timed when the observers want only timings)
        serves plans with no heavy op, and plans with heavy ops whose last run
        on the threaded scheduler, with feeds of the same shapes, ran every
        kernel inline (too small for the pool): the same order, without the
        scheduler.  A deadline, per-op hooks, a timed run with ops off the CPU
        or a run that may use the pool take the threaded scheduler.
        """
        with np.errstate(all="ignore"):  # TF semantics: 1/0 is inf, silently
            shapes = None  # the fed values' shapes, where read
            if timeout:
                straight = False
            elif plan.any_heavy:
                shapes = executor.feed_shapes(feed_values)
                straight = plan.inline_feeds == shapes
            else:
                straight = True
            # a timed run off the CPU needs the scheduler's device timers (CUDA events)
            hooks = timings_hooks(observers) if observers and not plan.off_host else None
            if straight and (not observers or hooks):
                plan.runs += 1
                if plan.compiled is None and (plan.runs > COMPILE_AFTER_RUNS or plan.any_heavy):
                    compile_plan(plan)
                if plan.compiled is not None:
                    if hooks:
                        return executor.run_compiled_timed(
                            plan, feed_values, observers, hooks, shapes
                        )
                    return executor.run_compiled(plan, feed_values)
                if not observers:
                    return executor.run_serial(plan, feed_values)
            deadline = time.monotonic() + timeout / 1000 if timeout else None
            limit = self.config.inter_op_parallelism_threads
            return executor.run_threaded(plan, feed_values, observers, deadline, limit)

    @staticmethod
    def _option_observers(options: RunOptions, run_metadata: Any, observers: Any) -> Any:
        """Observers one run's options ask for: the step-stats tracer, the NaN guard."""
        extra: list[executor.Observer] = []
        if options.trace_level != RunOptions.NO_TRACE and run_metadata is not None:
            extra.append(_step_stats_collector()(run_metadata))
        if options.check_numerics:
            from flowbook.debug import NanGuard

            extra.append(NanGuard())
        return [*observers, *extra] if extra else observers

    @property
    def placer(self) -> Placer:
        """Where this session's ops run (``flowbook.placement.Placer``), made on first use."""
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
        if device is CPU:
            return opdef.bound_kernel(device.xp, attrs)
        return device.wrap(opdef.bound_kernel(device.xp, attrs))

    def _variable_state(self, var_op: Operation) -> VarState:
        with self._state_lock:
            state = self._variables.get(var_op)
            if state is None:
                state = self._variables[var_op] = VarState(var_op)
            return state

    def _rng(self, op: Operation, device: Device = CPU) -> Any:
        with self._state_lock:
            rng = self._rngs.get(op)
            if rng is None:
                rng = device.rng(op.attrs.get("seed", 0), op.attrs.get("seed2", 0))
                self._rngs[op] = rng
            return rng

    # ---------------------------------------------------------------- feeds
    def _feeds(self, feed_dict: dict) -> tuple[tuple[Tensor, ...], tuple[Any, ...]]:
        tensors: list[Tensor] = []
        values: list[Any] = []
        for key, value in feed_dict.items():
            t = _feed_target(self.graph, key)
            tensors.append(t)
            values.append(_feed_value(t, value))
        return tuple(tensors), tuple(values)

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Release the session's variables and plans; later runs raise RuntimeError."""
        self._closed = True
        self._plans.clear()
        self._variables.clear()
        self._rngs.clear()

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


# ------------------------------------------------------------------- fetches
def _flatten(graph: Graph, fetches: Any) -> tuple[list[Any], Any]:
    """Unique graph elements of a nested fetch, and a structure of indices into them."""
    elements: list[Any] = []
    position: dict[Any, int] = {}

    def walk(f: Any) -> Any:
        if isinstance(f, list):
            return [walk(x) for x in f]
        if isinstance(f, tuple) and not hasattr(f, "_fields"):
            return tuple(walk(x) for x in f)
        if hasattr(f, "_fields"):  # namedtuple
            return type(f)(*[walk(x) for x in f])
        if isinstance(f, dict):
            return type(f)((k, walk(v)) for k, v in f.items())
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        element = _fetch_element(graph, f)
        i = position.get(element)
        if i is None:
            i = position[element] = len(elements)
            elements.append(element)
        return _Leaf(i)

    return elements, walk(fetches)


class _Leaf:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def _rebuild(structure: Any, values: list[Any]) -> Any:
    if isinstance(structure, _Leaf):
        return values[structure.i]
    if isinstance(structure, list):
        return [_rebuild(s, values) for s in structure]
    if hasattr(structure, "_fields"):
        return type(structure)(*[_rebuild(s, values) for s in structure])
    if isinstance(structure, tuple):
        return tuple(_rebuild(s, values) for s in structure)
    return type(structure)((k, _rebuild(v, values)) for k, v in structure.items())


def _fetch_element(graph: Graph, f: Any) -> Tensor | Operation:
    try:
        element = graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
    except TypeError as e:
        raise TypeError(
            f"Fetch argument {f!r} has invalid type {type(f)}, must be a string or Tensor. ({e})"
        ) from None
    except KeyError as e:
        raise KeyError(
            f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e.args[0]})"
        ) from None
    except ValueError as e:
        raise ValueError(f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})") from None
    return element


def _to_numpy(value: Any) -> Any:
    t = type(value)
    if t is np.ndarray:
        if value.ndim == 0:
            return value[()]
        return value if value.flags.writeable else value.copy()
    if isinstance(value, np.generic):
        return value
    if t is VarState:  # a fetch of a variable's own output ("W:0") gives its value
        return _to_numpy(value.read())
    return np.asarray(value)


# --------------------------------------------------------------------- feeds
def _feed_target(graph: Graph, key: Any) -> Tensor:
    try:
        t = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (TypeError, ValueError, KeyError) as e:
        msg = e.args[0] if e.args else str(e)
        raise TypeError(f"Cannot interpret feed_dict key {key!r} as a Tensor: {msg}") from None
    return t  # type: ignore[return-value]


def _feed_value(t: Tensor, value: Any) -> Any:
    if isinstance(value, Tensor) or hasattr(value, "_as_tensor"):
        raise TypeError(
            f"The value fed to '{t.name}' is a symbolic tensor. Acceptable feed values are Python "
            "scalars, strings, lists and numpy arrays: run it first and feed the result."
        )
    target = t.dtype.np
    arr = value if type(value) is np.ndarray else np.asarray(value)
    if arr.dtype != target:
        if t.dtype.is_integer and arr.dtype.kind == "f" and not np.array_equal(arr, np.trunc(arr)):
            raise TypeError(
                f"Cannot feed non-integer values of dtype {arr.dtype} to '{t.name}', which is "
                f"{t.dtype.name} ({t.op.type} '{t.op.name}' created at {t.op.site.describe()})"
            )
        try:
            arr = arr.astype(target)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"Cannot convert the value fed to '{t.name}' to {t.dtype.name}: {e}"
            ) from None
    if not compatible(t._shape, arr.shape):
        raise ValueError(
            f"Cannot feed value of shape {fmt(arr.shape)} for Tensor '{t.name}', which has shape "
            f"{fmt(t._shape)} ({t.op.type} '{t.op.name}' created at {t.op.site.describe()})"
        )
    return arr


@functools.cache
def _step_stats_collector() -> Any:
    """``flowbook.profiling.StepStatsCollector``, imported on the first traced run."""
    from flowbook.profiling import StepStatsCollector

    return StepStatsCollector
