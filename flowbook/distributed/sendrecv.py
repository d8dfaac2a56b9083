"""The whitepaper's Send and Receive nodes (§3.2): ``_Send``/``_Recv`` and the rendezvous they meet at.

When a run's ops are split over tasks (``flowbook.distributed.partition``),
each edge that crosses from task S to task T becomes a ``_Send`` in S's
partition and a ``_Recv`` in T's, as TensorFlow names and types them: both
carry ``tensor_name`` (the key they meet under, ``edge_7_layer1/MatMul``),
``send_device``, ``send_device_incarnation``, ``recv_device`` and
``client_terminated`` (True where the other end is the client: a fed value).
``_Recv`` also says its ``tensor_type`` and, as flowbook's addition, the
static ``shape`` of the value, so the ops after it infer their shapes when
the partition is imported on its task.

The kernels never see Dask: each gets the task's :class:`Rendezvous` bound
in (``resource="rendezvous"``; the task's session binds it, see
``flowbook.distributed.server``).  A rendezvous is a table of values keyed
by (step, tensor name):

- ``send`` hands the value to the transport the task server gave the
  rendezvous (a one-way message to the receiving task's server, worker to
  worker: the receiving partition's success is the delivery's proof);
- ``put`` (the receiving server, when a value arrives) stores it, or settles
  the ``_Recv`` already waiting for it;
- ``recv`` takes the value, or returns a ``flowbook.state.pending.Pending`` that
  the threaded scheduler parks while the partition's other ops run: a
  partition may have to send before it can receive, so a receive never
  blocks its thread;
- ``when_all(step, names)`` is a Pending settled once every named value of
  the step has arrived: the task server waits on it before running a
  partition that receives everything first (``flowbook.distributed.stages``);
- ``abort(step)`` fails the step's waiting receives and gates with
  ``AbortedError`` (another task of the step failed) and drops what
  arrives later; the step's other waits (a queue's dequeue, an
  accumulator's take, which the rendezvous watches while the step runs:
  ``flowbook.state.pending.watching``) are cancelled, so a closed client session
  leaves no step waiting on a task.

Which step a kernel belongs to is the run's thread's: the server sets it
(``Rendezvous.stepping``) around the partition's run, and Send/Recv kernels
run inline on that thread.

    >>> r = Rendezvous(lambda step, device, name, value: None)
    >>> with r.stepping(7):
    ...     r.put(7, "edge_1_x", 3.0)
    ...     r.recv("edge_1_x", "x")
    3.0
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import AbortedError, InternalError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OpDef, Out, register
from flowbook.state.pending import Pending, settle, watching

__all__ = ["Rendezvous"]

Transport = Callable[[int, str, str, Any], None]  # (step, recv device, tensor name, value)
MAX_ABORTED = 1024  # aborted steps remembered, so their late values are dropped


class Rendezvous:
    """Where one task's Send and Recv kernels meet the values of each step."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport  # delivers a sent value to the receiving task
        self._lock = threading.Lock()  # guards the five tables below
        self._values: dict[int, dict[str, Any]] = {}  # step -> tensor name -> value arrived
        self._waiting: dict[int, dict[str, Pending]] = {}  # step -> tensor name -> its Recv
        self._gates: dict[int, list[tuple[set[str], Pending]]] = {}  # step -> (missing, gate)
        self._aborted: OrderedDict[int, str] = OrderedDict()  # step -> why, newest last
        self._waits: dict[int, list[Pending]] = {}  # step -> its kernels' other waits
        self._local = threading.local()  # .step: the step this thread runs

    @contextlib.contextmanager
    def stepping(self, step: int) -> Iterator[None]:
        """Run a partition of ``step`` on this thread (its kernels send and receive in it)."""
        before = getattr(self._local, "step", None)
        self._local.step = step
        try:
            with watching(lambda p: self._watch(step, p)):
                yield
        finally:
            self._local.step = before

    def _watch(self, step: int, pending: Pending) -> None:
        """A kernel of ``step`` waits: keep the wait (cancelled at once if the step was aborted)."""
        with self._lock:
            why = self._aborted.get(step)
            if why is None:
                self._waits.setdefault(step, []).append(pending)
        if why is not None:
            pending.cancel(f"step {step} was aborted: {why}")

    def _step(self) -> int:
        step = getattr(self._local, "step", None)
        if step is None:
            raise InternalError(None, None, "a _Send or _Recv ran outside a distributed step")
        return step

    # ---------------------------------------------------------------- send
    def send(self, tensor_name: str, recv_device: str, value: Any) -> None:
        """Deliver ``value`` to ``recv_device``'s task under ``tensor_name`` (not waited for)."""
        self._transport(self._step(), recv_device, tensor_name, value)

    # ------------------------------------------------------------- receive
    def put(self, step: int, tensor_name: str, value: Any) -> None:
        """A value of ``step`` arrived: settle its waiting Recv, or keep it for the Recv."""
        opened: list[Pending] = []
        with self._lock:
            if step in self._aborted:
                return
            waiter = self._waiting.get(step, {}).pop(tensor_name, None)
            if waiter is None:
                self._values.setdefault(step, {})[tensor_name] = value
                gates = self._gates.get(step)
                for missing, gate in gates or ():
                    missing.discard(tensor_name)
                    if not missing:
                        opened.append(gate)
                if opened:
                    self._gates[step] = [g for g in gates if g[0]]
        if waiter is not None:
            waiter.resolve(value)
        for gate in opened:
            gate.resolve(None)

    def when_all(self, step: int, names: list[str]) -> Pending:
        """A Pending settled once every value ``names`` of ``step`` has arrived (or failed).

        >>> r = Rendezvous(lambda *a: None)
        >>> gate = r.when_all(3, ["a", "b"]); r.put(3, "a", 1); gate.done
        False
        >>> r.put(3, "b", 2); gate.done
        True
        """
        gate = Pending(f"the values {names} of step {step}")
        with self._lock:
            why = self._aborted.get(step)
            missing = set(names).difference(self._values.get(step, ()))
            if why is None and missing:
                self._gates.setdefault(step, []).append((missing, gate))
                return gate
        if why is not None:
            gate.fail(AbortedError(None, None, f"Step {step} was aborted: {why}"))
        else:
            gate.resolve(None)
        return gate

    def recv(self, tensor_name: str, what: str) -> Any:
        """The value of ``tensor_name`` in this thread's step, or a Pending for it."""
        step = self._step()
        with self._lock:
            why = self._aborted.get(step)
            if why is not None:
                raise AbortedError(None, None, f"Step {step} was aborted: {why}")
            arrived = self._values.get(step, {})
            if tensor_name in arrived:
                return arrived.pop(tensor_name)
            pending = Pending(what)
            self._waiting.setdefault(step, {})[tensor_name] = pending
            pending.on_cancel = lambda: self._withdraw(step, tensor_name, pending)
        return settle(pending)

    def _withdraw(self, step: int, tensor_name: str, pending: Pending) -> bool:
        with self._lock:
            waiting = self._waiting.get(step, {})
            if waiting.get(tensor_name) is pending:
                del waiting[tensor_name]
                return True
            return False

    # ------------------------------------------------------------ lifecycle
    def abort(self, step: int, why: str) -> None:
        """Fail ``step``'s waiting Recvs and gates with AbortedError; drop its values, now and later."""
        with self._lock:
            self._aborted[step] = why
            while len(self._aborted) > MAX_ABORTED:
                self._aborted.popitem(last=False)
            self._values.pop(step, None)
            waiting = list(self._waiting.pop(step, {}).values())
            waiting += [gate for _, gate in self._gates.pop(step, ())]
            others = self._waits.pop(step, [])
        for pending in waiting:
            pending.fail(AbortedError(None, None, f"Step {step} was aborted: {why}"))
        for pending in others:
            pending.cancel(f"step {step} was aborted: {why}")

    def end(self, step: int) -> None:
        """Forget what is left of ``step`` here (its partition finished)."""
        with self._lock:
            self._values.pop(step, None)
            self._waiting.pop(step, None)
            self._gates.pop(step, None)
            self._waits.pop(step, None)

    def pending_steps(self) -> int:
        """How many steps still hold values or waiting Recvs here (0 between steps)."""
        with self._lock:
            return len({*(s for s, v in self._values.items() if v), *self._waiting, *self._gates})


# ------------------------------------------------------------------- the ops
_ATTRS = (
    "tensor_name",
    "send_device",
    "send_device_incarnation",
    "recv_device",
    "client_terminated",
)


def _send_kernel(
    xp: Any, value: Any, *, rendezvous: Rendezvous | None = None, **attrs: Any
) -> tuple:
    _bound(rendezvous, attrs).send(attrs["tensor_name"], attrs["recv_device"], value)
    return ()


def _recv_kernel(xp: Any, *, rendezvous: Rendezvous | None = None, **attrs: Any) -> Any:
    what = f"tensor '{attrs['tensor_name']}' from {attrs['send_device']}"
    return _bound(rendezvous, attrs).recv(attrs["tensor_name"], what)


def _bound(rendezvous: Rendezvous | None, attrs: dict[str, Any]) -> Rendezvous:
    if rendezvous is None:
        raise InternalError(
            None,
            None,
            f"_Send/_Recv of '{attrs['tensor_name']}' runs only in a task of a cluster "
            "session (tf.Session('dask://...')); a local session has no rendezvous",
        )
    return rendezvous


def _recv_infer(*, tensor_type: Any, shape: Any = None, **_: Any) -> Out:
    return Out(dtypes.as_dtype(tensor_type), shape)


# their attrs' kinds in a GraphDef (the names alone mislead)
_KINDS = {
    **{k: "string" for k in ("tensor_name", "send_device", "recv_device")},
    "client_terminated": "bool",
}

_COMMON = {
    "stateful": True,
    "host_only": True,
    "grad": NOT_DIFFERENTIABLE,
    "resource": "rendezvous",
}
register(
    OpDef(
        "_Send",
        ("tensor",),
        _ATTRS,
        infer=lambda x, **_: [],
        kernel=_send_kernel,
        attr_kinds=_KINDS,
        doc="Sends a value to the task of recv_device (the whitepaper's Send node).",
        **_COMMON,
    )
)
register(
    OpDef(
        "_Recv",
        (),
        ("tensor_type", "shape", *_ATTRS),
        infer=_recv_infer,
        kernel=_recv_kernel,
        blocking=True,
        attr_kinds={**_KINDS, "tensor_type": "type"},
        doc="Receives a value sent by the task of send_device (the whitepaper's Receive node).",
        **_COMMON,
    )
)


def dummy_value() -> np.ndarray:
    """What a Send carries for a control edge between tasks: a float32 zero (TF's dummy)."""
    return np.zeros((), np.float32)
