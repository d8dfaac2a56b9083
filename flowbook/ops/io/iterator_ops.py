"""The ops that read a ``tf.data`` dataset: MakeIterator and IteratorGetNext.

A dataset is a Python object (``flowbook.data``), not graph, so, as
``script_ops`` does for Python functions, the ops hold a ``token`` string and
this module's ``DATASETS`` maps it to the dataset (a graph imported from a
GraphDef in the same process still finds it).  The tensors a dataset reads
(``from_tensor_slices(placeholder)``, file names) are the ops' inputs, so
they are computed, or fed, in the run that starts the iterator.

The iterator's position is session state (``resource="iterator"``): the
Session binds the ``IteratorState`` of the op's ``shared_name`` into the
kernel as the ``iterator`` keyword, one per session, shared by its runs.

- ``MakeIterator(*captured, shared_name, token)``: no outputs; (re)starts the
  iterator on the dataset, from its beginning (the initializer).
- ``IteratorGetNext(*captured, shared_name, token, output_types,
  output_shapes)``: the next element's components; with a ``token`` (a
  one-shot iterator) the first read starts the iterator itself.  At the end
  of the data it raises ``OutOfRangeError`` naming the op.

Both run on the host and are not differentiable.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     x = fb.data.Dataset.range(3).make_one_shot_iterator().get_next()
    ...     [int(s.run(x)) for _ in range(3)]
    [0, 1, 2]
"""

from __future__ import annotations

import itertools
from typing import Any

from flowbook.framework.errors import NotFoundError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.state.iterator_state import IteratorState

__all__ = ["DATASETS", "new_token"]

DATASETS: dict[str, Any] = {}  # token -> the dataset an iterator op reads
_tokens = itertools.count()  # numbers the tokens: dataset_0, dataset_1...
_ITERATOR = {"stateful": True, "resource": "iterator", "host_only": True}


def new_token(dataset: Any) -> str:
    """Register ``dataset`` under a new token (what the iterator ops' ``token`` attr holds).

    >>> t = new_token("a dataset"); DATASETS.pop(t)
    'a dataset'
    """
    token = f"dataset_{next(_tokens)}"
    DATASETS[token] = dataset
    return token


def _dataset(token: str) -> Any:
    dataset = DATASETS.get(token)
    if dataset is None:
        raise NotFoundError(None, None, f"No dataset is registered for {token!r}")
    return dataset


def _make_iterator(
    xp: Any, *captured: Any, iterator: IteratorState, shared_name: str, token: str
) -> tuple:
    iterator.start(_dataset(token).elements(list(captured)))
    return ()


def _get_next(
    xp: Any,
    *captured: Any,
    iterator: IteratorState,
    shared_name: str,
    token: str,
    output_types: list,
    output_shapes: list,
) -> Any:
    if token:  # a one-shot iterator starts itself
        iterator.start_once(lambda: _dataset(token).elements(list(captured)))
    element = iterator.next()
    return element[0] if len(element) == 1 else tuple(element)


def _make_infer(*captured: Any, shared_name: str, token: str) -> list[Out]:
    return []


def _get_next_infer(
    *captured: Any, shared_name: str, token: str, output_types: list, output_shapes: list
) -> list[Out]:
    return [Out(t, None if s is None else tuple(s)) for t, s in zip(output_types, output_shapes)]


op(
    "MakeIterator",
    ("*captured",),
    ("shared_name", "token"),
    _make_infer,
    _make_iterator,
    grad=NOT_DIFFERENTIABLE,
    **_ITERATOR,
    attr_kinds={"shared_name": "string"},
)
op(
    "IteratorGetNext",
    ("*captured",),
    ("shared_name", "token", "output_types", "output_shapes"),
    _get_next_infer,
    _get_next,
    grad=NOT_DIFFERENTIABLE,
    **_ITERATOR,
    attr_kinds={
        "output_types": "list(type)",
        "output_shapes": "list(shape)",
        "shared_name": "string",
    },
)
