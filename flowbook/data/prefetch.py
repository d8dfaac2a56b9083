"""``Dataset.prefetch``: a thread that computes elements ahead of the runs that read them.

Each pass over a ``PrefetchDataset`` starts one producer thread that reads
the input's chunks into a queue of at most ``buffer_size`` chunks (AUTOTUNE:
a few), so the input pipeline works while the model's step runs, as far as
the two release the GIL (numpy's large kernels, file reads, decoding).  The
consumer, the iterator op's kernel, takes chunks from the queue in order; an
error in the producer reaches it in its place in the sequence.

Who owns the thread: the pass's generator.  When it ends, is closed, or is
dropped (a re-run initializer replaces the iterator; ``Session.close``
drops every iterator), its ``finally`` sets the stop flag, and the producer,
which never blocks for longer than ``POLL_S``, exits; it holds no reference
to the consumer, so nothing keeps a dropped pass alive.

    >>> import flowbook as fb
    >>> [int(v) for v in fb.data.Dataset.range(4).prefetch(2).as_numpy_iterator()]
    [0, 1, 2, 3]
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

from flowbook.data.dataset import MAKERS, Chunk, Context, Dataset

POLL_S = 0.05  # the producer's longest block: how soon it sees the stop flag
AUTOTUNE_CHUNKS = 4  # the queue's bound for buffer_size=AUTOTUNE
_END = object()  # the producer's last item after the input's end


class PrefetchDataset(Dataset):
    """``Dataset.prefetch``: the same elements, computed ahead on a producer thread."""

    def __init__(self, input: Dataset, buffer_size: Any) -> None:
        size = int(buffer_size)
        self.buffer_size = AUTOTUNE_CHUNKS if size < 0 else size  # chunks held ahead
        super().__init__(input._spec, (input,))

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        if self.buffer_size == 0:
            yield from self._inputs[0]._chunks(ctx)
            return
        items: queue.Queue = queue.Queue(self.buffer_size)
        stop = threading.Event()
        source = self._inputs[0]._chunks(ctx)
        thread = threading.Thread(
            target=_produce, args=(source, items, stop), name="flowbook-prefetch", daemon=True
        )
        thread.start()
        try:
            while True:
                item = items.get()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()


def _produce(source: Iterator[Chunk], items: queue.Queue, stop: threading.Event) -> None:
    """The producer: the input's chunks into ``items``, then ``_END`` (or the error)."""
    try:
        for chunk in source:
            if not _put(items, chunk, stop):
                return
        _put(items, _END, stop)
    except BaseException as e:  # handed to the consumer, raised there in order
        _put(items, e, stop)
    finally:
        source.close()


def _put(items: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Put ``item``, waiting while the queue is full; False once the consumer has gone."""
    while not stop.is_set():
        try:
            items.put(item, timeout=POLL_S)
            return True
        except queue.Full:
            continue
    return False


MAKERS.update(prefetch=PrefetchDataset)
