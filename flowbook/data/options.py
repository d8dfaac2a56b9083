"""``tf.data.Options`` and its companions: the settings a pipeline carries, the cardinality
constants, ``DatasetSpec`` and ``NumpyIterator``.

flowbook's pipelines run in one producer per iterator and have no graph
rewriter, so no option changes how elements are made: they are accepted,
type-checked where TF checks them, kept, merged and given back by
``Dataset.options()``, which is what TF1 code reads them for.  An option group
(``threading``, ``experimental_optimization``...) is an object of its own; an
unknown attribute is an ``AttributeError``, as in TF.

``Dataset.with_options`` wraps a dataset in :class:`OptionsDataset`, which
passes chunks through unchanged and remembers the options; ``options()``
merges those of a dataset's inputs with its own, the later winning.  Both
methods are attached to :class:`~flowbook.data.dataset.Dataset` here, where the
options are defined.

    >>> import flowbook as tf
    >>> o = tf.data.Options()
    >>> o.threading.private_threadpool_size = 4
    >>> tf.data.Dataset.range(3).with_options(o).options().threading.private_threadpool_size
    4
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flowbook.data.dataset import Chunk, Context, Dataset
from flowbook.framework.tensor_shape import as_shape

__all__ = [
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "DatasetSpec",
    "NumpyIterator",
    "Options",
    "ThreadingOptions",
    "get_output_classes",
]

INFINITE_CARDINALITY = -1  # what TF's cardinality() says of an endless dataset
UNKNOWN_CARDINALITY = -2  # ... and of one whose length it cannot tell


class _OptionGroup:
    """Named options, each with a default and the types it accepts; others are refused."""

    _fields: dict[str, tuple[Any, tuple[type, ...]]] = {}

    def __init__(self) -> None:
        for key, (default, _) in self._fields.items():
            object.__setattr__(self, key, default() if callable(default) else default)

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in self._fields:
            raise AttributeError(f"Cannot set the property {key} on {type(self).__name__}.")
        kinds = self._fields[key][1]
        if value is not None and kinds and not isinstance(value, kinds):
            raise TypeError(
                f'Property "{key}" must be of type {kinds[0]}, got: {value} (type: {type(value)})'
            )
        object.__setattr__(self, key, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def _merged(self, other: _OptionGroup) -> _OptionGroup:
        out = type(self)()
        for key in self._fields:
            mine, theirs = getattr(self, key), getattr(other, key)
            if isinstance(mine, _OptionGroup):
                object.__setattr__(out, key, mine._merged(theirs))
            else:
                object.__setattr__(out, key, mine if theirs is None else theirs)
        return out


class ThreadingOptions(_OptionGroup):
    """``options.threading``: the pipeline's own thread pool size and per-op parallelism."""

    _fields = {
        "max_intra_op_parallelism": (None, (int,)),
        "private_threadpool_size": (None, (int,)),
    }


class AutotuneOptions(_OptionGroup):
    _fields = {
        "enabled": (None, (bool,)),
        "cpu_budget": (None, (int,)),
        "ram_budget": (None, (int,)),
        "autotune_algorithm": (None, ()),
        "initial_parallelism": (None, (int,)),
        "min_parallelism": (None, (int,)),
    }


class DistributeOptions(_OptionGroup):
    _fields = {"auto_shard_policy": (None, ()), "num_devices": (None, (int,))}


class OptimizationOptions(_OptionGroup):
    _fields = {
        k: (None, (bool,))
        for k in (
            "apply_default_optimizations", "filter_fusion", "filter_parallelization",
            "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
            "map_parallelization", "noop_elimination", "parallel_batch", "seq_interleave_prefetch",
            "shuffle_and_repeat_fusion",
        )
    }  # fmt: skip


class ServiceOptions(_OptionGroup):
    _fields = {"pinned": (None, (bool,))}


class Options(_OptionGroup):
    """TF's ``tf.data.Options``: settings for a pipeline (module docstring).

    >>> o = Options()
    >>> o.deterministic = False
    >>> o.merge(Options()).deterministic
    False
    """

    _fields = {
        "autotune": (AutotuneOptions, (AutotuneOptions,)),
        "dataset_name": (None, (str,)),
        "deterministic": (None, (bool,)),
        "experimental_distribute": (DistributeOptions, (DistributeOptions,)),
        "experimental_external_state_policy": (None, ()),
        "experimental_optimization": (OptimizationOptions, (OptimizationOptions,)),
        "experimental_service": (ServiceOptions, (ServiceOptions,)),
        "experimental_slack": (None, (bool,)),
        "experimental_symbolic_checkpoint": (None, (bool,)),
        "experimental_warm_start": (None, (bool,)),
        "framework_type": (None, (list,)),
        "threading": (ThreadingOptions, (ThreadingOptions,)),
    }

    @property
    def experimental_deterministic(self) -> Any:  # TF's older names for two options
        return self.deterministic

    @experimental_deterministic.setter
    def experimental_deterministic(self, value: Any) -> None:
        self.deterministic = value

    @property
    def experimental_threading(self) -> ThreadingOptions:
        return self.threading

    @experimental_threading.setter
    def experimental_threading(self, value: ThreadingOptions) -> None:
        self.threading = value

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(getattr(type(self), key, None), property):
            object.__setattr__(self, key, value)  # through the property's setter
        else:
            super().__setattr__(key, value)

    def merge(self, options: Options) -> Options:
        """These options with every option ``options`` sets (not None) taking its value."""
        return self._merged(options)  # type: ignore[return-value]


class OptionsDataset(Dataset):
    """``Dataset.with_options``: the input's elements, unchanged, with options attached."""

    def __init__(self, input: Dataset, options: Options) -> None:
        if not isinstance(options, Options):
            raise TypeError(f"with_options: expected a tf.data.Options, got {type(options)}")
        super().__init__(input._spec, (input,))
        self._options = options

    def _chunks(self, ctx: Context) -> Iterator[Chunk]:
        yield from self._inputs[0]._chunks(ctx)


def _options(self: Dataset) -> Options:
    """The options of this dataset and those it reads, merged (later ones winning)."""
    merged = Options()
    for d in self._inputs:
        merged = merged.merge(_options(d))
    own = getattr(self, "_options", None)
    return merged.merge(own) if isinstance(own, Options) else merged


def _with_options(self: Dataset, options: Options, name: str | None = None) -> Dataset:
    """This dataset with ``options`` attached (merged over any it already has)."""
    return OptionsDataset(self, options)


Dataset.options = _options  # type: ignore[attr-defined]
Dataset.with_options = _with_options  # type: ignore[attr-defined]


class NumpyIterator:
    """What ``as_numpy_iterator`` iterates with, as a class (TF's ``tf.data.NumpyIterator``).

    >>> import flowbook as tf
    >>> [int(v) for v in NumpyIterator(tf.data.Dataset.range(2))]
    [0, 1]
    """

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset
        self._iterator = dataset.as_numpy_iterator()

    def __iter__(self) -> NumpyIterator:
        return self

    def __next__(self) -> Any:
        return next(self._iterator)

    def next(self) -> Any:
        return next(self._iterator)

    def __repr__(self) -> str:
        return f"NumpyIterator(iterator={self._dataset!r})"


class DatasetSpec:
    """The type of a dataset value: its element spec and the shape of the dataset itself.

    >>> import flowbook as tf
    >>> DatasetSpec(tf.data.TensorSpec([], tf.int64)).element_spec.dtype.name
    'int64'
    """

    def __init__(self, element_spec: Any, dataset_shape: Any = ()) -> None:
        self._element_spec = element_spec
        self._dataset_shape = as_shape(dataset_shape)

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    @property
    def value_type(self) -> type:
        return Dataset

    @staticmethod
    def from_value(value: Dataset) -> DatasetSpec:
        return DatasetSpec(value.element_spec)

    def is_compatible_with(self, spec_or_value: Any) -> bool:
        other = (
            DatasetSpec.from_value(spec_or_value)
            if isinstance(spec_or_value, Dataset)
            else spec_or_value
        )
        return isinstance(other, DatasetSpec) and repr(other._element_spec) == repr(
            self._element_spec
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DatasetSpec)
            and repr(other._element_spec) == repr(self._element_spec)
            and other._dataset_shape == self._dataset_shape
        )

    def __hash__(self) -> int:
        return hash(repr(self._element_spec))

    def __repr__(self) -> str:
        return f"DatasetSpec({self._element_spec!r}, {self._dataset_shape!r})"


def get_output_classes(dataset_or_iterator: Any) -> Any:
    """The element's classes (``tf.Tensor`` for each component), as TF1's helper gives them."""
    return dataset_or_iterator.output_classes
