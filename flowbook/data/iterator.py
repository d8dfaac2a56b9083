"""``tf.data.Iterator``: the graph ops that read a dataset in a Session.

An iterator has a name (``shared_name``), under which each Session keeps its
position (``flowbook.state.iterator_state``).  ``get_next()`` builds an
``IteratorGetNext`` op whose outputs are the element's components, packed
back into the element's nesting; ``make_initializer(dataset)`` builds the
``MakeIterator`` op that (re)starts the iterator on ``dataset``, whose
captured tensors are its inputs (so a placeholder the dataset reads is fed in
the run of the initializer).  A one-shot iterator's ``get_next`` op names its
dataset itself and starts on its first run; its dataset's captured tensors
must then be computable without feeds, as in TF.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     it = fb.data.Iterator.from_structure(fb.int64, [])
    ...     x = it.get_next()
    ...     s.run(it.make_initializer(fb.data.Dataset.range(5, 7)))
    ...     [int(s.run(x)) for _ in range(2)]
    [5, 6]
"""

from __future__ import annotations

from typing import Any

from flowbook.data.dataset import MAKERS, Dataset
from flowbook.data.structure import Spec, flatten, is_nested, pack
from flowbook.framework import dtypes
from flowbook.framework.graph import get_default_graph
from flowbook.framework.tensor_shape import as_shape, compatible
from flowbook.ops._builder import make
from flowbook.ops.io.iterator_ops import new_token


class Iterator:
    """Reads a dataset's elements in a Session (TF's ``tf.data.Iterator``)."""

    def __init__(
        self, spec: Spec, shared_name: str | None = None, one_shot: Dataset | None = None
    ) -> None:
        graph = get_default_graph()
        self._spec = spec  # what its elements look like
        self._shared_name = shared_name or graph.unique_name("Iterator")  # its session state
        self._one_shot = one_shot  # the dataset a one-shot iterator reads, else None
        self._token = new_token(one_shot) if one_shot is not None else ""
        self._initializer: Any = None

    @staticmethod
    def from_structure(
        output_types: Any,
        output_shapes: Any = None,
        shared_name: str | None = None,
        output_classes: Any = None,
    ) -> Iterator:
        """An iterator for any dataset with this element structure; start it with
        ``make_initializer(dataset)``."""
        types = [dtypes.as_dtype(t) for t in flatten(output_types)]
        if output_shapes is None:
            shapes: list[Any] = [None] * len(types)
        else:
            shapes = [as_shape(s) for s in _shape_leaves(output_types, output_shapes)]
        template = pack(output_types, [0] * len(types)) if is_nested(output_types) else 0
        return Iterator(Spec(template, types, shapes), shared_name)

    # ------------------------------------------------------------- ops
    def get_next(self, name: str | None = None) -> Any:
        """The next element's tensors, in the element's nesting; OutOfRangeError at the end."""
        captured = self._one_shot.captured() if self._one_shot is not None else []
        attrs = {
            "shared_name": self._shared_name,
            "token": self._token,
            "output_types": list(self._spec.types),
            "output_shapes": list(self._spec.shapes),
        }
        op = make("IteratorGetNext", captured, attrs, name=name or "IteratorGetNext")
        return pack(self._spec.template, list(op.outputs))

    def make_initializer(self, dataset: Dataset, name: str | None = None) -> Any:
        """The op that (re)starts this iterator at the beginning of ``dataset``."""
        mine, theirs = self._spec, dataset._spec
        if mine.types != theirs.types or flatten(mine.template) != flatten(theirs.template):
            raise TypeError(
                f"Expected output types {mine.output_types!r} but got dataset with output types "
                f"{theirs.output_types!r}."
            )
        for want, have in zip(mine.shapes, theirs.shapes):
            if not compatible(want, have):
                raise TypeError(
                    f"Expected output shapes compatible with {mine.output_shapes!r} but got "
                    f"dataset with output shapes {theirs.output_shapes!r}."
                )
        attrs = {"shared_name": self._shared_name, "token": new_token(dataset)}
        return make("MakeIterator", dataset.captured(), attrs, name=name or "MakeIterator")

    @property
    def initializer(self) -> Any:
        """The initializer op of an iterator made by ``make_initializable_iterator``."""
        if self._initializer is None:
            raise ValueError("Iterator does not have an initializer.")
        return self._initializer

    # ---------------------------------------------------------- structure
    @property
    def output_types(self) -> Any:
        return self._spec.output_types

    @property
    def output_shapes(self) -> Any:
        return self._spec.output_shapes

    @property
    def element_spec(self) -> Any:
        return self._spec.element_spec


def _shape_leaves(template: Any, shapes: Any) -> list[Any]:
    if isinstance(template, dict):
        return [x for k in sorted(template) for x in _shape_leaves(template[k], shapes[k])]
    if isinstance(template, tuple):
        return [x for t, s in zip(template, shapes) for x in _shape_leaves(t, s)]
    return [shapes]


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """An iterator that starts itself on its first read (``tf.compat.v1.data``'s function)."""
    return Iterator(dataset._spec, one_shot=dataset)


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """An iterator whose ``initializer`` (re)starts it on ``dataset``."""
    it = Iterator(dataset._spec, shared_name)
    it._initializer = it.make_initializer(dataset)
    return it


def get_output_types(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    return dataset_or_iterator.output_shapes


MAKERS.update(one_shot=make_one_shot_iterator, initializable=make_initializable_iterator)
