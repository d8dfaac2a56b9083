"""``tf.train.QueueRunner``: threads that keep a queue filled, and ``start_queue_runners``.

A QueueRunner holds a queue's enqueue ops (one thread each), its close op
and its cancel op.  Each thread runs its enqueue op in a loop on the
session until the coordinator stops or the input ends: an
``OutOfRangeError`` or ``CancelledError`` (``queue_closed_exception_types``)
ends that thread quietly, and the last thread to end closes the queue, so
its consumers read what is left and then get ``OutOfRangeError``.  Any
other error is reported to the coordinator (``request_stop(e)``; ``join``
re-raises it).  With a coordinator, one more thread waits for the stop and
runs the cancel op (the queue closed with ``cancel_pending_enqueues``), so
a thread waiting to enqueue into a full queue wakes at once.  The threads
block only inside ``Session.run``, where a waiting enqueue holds no pool
thread (``flowbook.state.pending``).

    >>> import flowbook as tf
    >>> with tf.Graph().as_default(), tf.Session() as s:
    ...     q = tf.FIFOQueue(10, tf.int32)
    ...     qr = QueueRunner(q, [q.enqueue(7)])
    ...     coord = tf.train.Coordinator()
    ...     threads = qr.create_threads(s, coord, start=True)
    ...     x = int(s.run(q.dequeue()))
    ...     coord.request_stop(); coord.join(threads)
    >>> x
    7
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from flowbook.framework import errors
from flowbook.framework.graph import GraphKeys, get_default_graph
from flowbook.runtime.session import get_default_session
from flowbook.train.coordinator import Coordinator


class QueueRunner:
    """Holds a list of enqueue ops for a queue, each run in its own thread."""

    def __init__(
        self,
        queue: Any = None,
        enqueue_ops: list[Any] | None = None,
        close_op: Any = None,
        cancel_op: Any = None,
        queue_closed_exception_types: tuple[type, ...] | None = None,
        queue_runner_def: Any = None,
        import_scope: str | None = None,
    ) -> None:
        if queue_runner_def is not None:
            raise NotImplementedError("QueueRunner from a QueueRunnerDef is not supported")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops or ())
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else queue.close(True)
        self._exception_types = queue_closed_exception_types or (
            errors.OutOfRangeError,
            errors.CancelledError,
        )
        self._lock = threading.Lock()  # guards the two fields below
        self._runs_per_session: dict[Any, int] = {}  # session -> enqueue threads still running
        self._exceptions_raised: list[BaseException] = []  # errors of threads with no coordinator

    @property
    def queue(self) -> Any:
        return self._queue

    @property
    def enqueue_ops(self) -> list[Any]:
        return self._enqueue_ops

    @property
    def close_op(self) -> Any:
        return self._close_op

    @property
    def cancel_op(self) -> Any:
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple[type, ...]:
        return self._exception_types

    @property
    def exceptions_raised(self) -> list[BaseException]:
        """Errors of threads run without a coordinator."""
        return self._exceptions_raised

    @property
    def name(self) -> str:
        return self._queue.name

    def _run(self, sess: Any, enqueue_op: Any, coord: Coordinator | None) -> None:
        decremented = False
        try:
            while coord is None or not coord.should_stop():
                try:
                    sess.run(enqueue_op)
                except self._exception_types:
                    with self._lock:  # the input ended: the last thread closes the queue
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        last = self._runs_per_session[sess] == 0
                    if last:
                        with contextlib.suppress(Exception):  # the session went first
                            sess.run(self._close_op)
                    return
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess: Any, coord: Coordinator) -> None:
        coord.wait_for_stop()
        try:
            if not sess.closed:
                sess.run(self._cancel_op)
        except Exception:  # the session closed meanwhile: its queues are cancelled already
            pass

    def create_threads(
        self,
        sess: Any,
        coord: Coordinator | None = None,
        daemon: bool = False,
        start: bool = False,
    ) -> list[threading.Thread]:
        """One thread per enqueue op (plus the canceller, with ``coord``); started if asked."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []  # already running for this session
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(
                target=self._run,
                args=(sess, op, coord),
                daemon=daemon,
                name=f"QueueRunner:{self.name}:{k}",
            )
            for k, op in enumerate(self._enqueue_ops)
        ]
        if coord is not None:
            threads.append(
                threading.Thread(
                    target=self._close_on_stop,
                    args=(sess, coord),
                    daemon=daemon,
                    name=f"QueueRunner:{self.name}:cancel",
                )
            )
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    """Add ``qr`` to the graph's queue-runner collection (``start_queue_runners`` starts it)."""
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(
    sess: Any = None,
    coord: Coordinator | None = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = GraphKeys.QUEUE_RUNNERS,
) -> list[threading.Thread]:
    """Start the threads of every queue runner in ``collection``; returns them."""
    sess = sess if sess is not None else get_default_session()
    if sess is None:
        raise ValueError("Cannot start queue runners: no default session is registered.")
    threads: list[threading.Thread] = []
    with sess.graph.as_default():
        for qr in sess.graph.get_collection(collection):
            threads.extend(qr.create_threads(sess, coord, daemon, start))
    return threads


__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]
