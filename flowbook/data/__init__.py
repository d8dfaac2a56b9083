"""``tf.data``: input pipelines as Python descriptions, read by iterator ops in a Session.

The pieces: ``structure`` (element nesting), ``function`` (a dataset's
function traced into a flowbook graph), ``dataset`` (the base class and how
elements move, as chunks), ``sources``, ``transforms`` (those running a
function), ``batching`` (the rest), ``prefetch`` (a producer thread), ``iterator``
(the ops), ``experimental``
(TF1's fused transformations), ``options`` (``tf.data.Options``, which
``Dataset.with_options`` attaches, and the cardinality constants).  Importing this
package registers every transformation.

    >>> import flowbook as tf
    >>> ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).map(lambda a, b: a + b)
    >>> with tf.Session() as s:
    ...     x = ds.make_one_shot_iterator().get_next()
    ...     [int(s.run(x)) for _ in range(3)]
    [5, 7, 9]
"""

from flowbook.data import batching, experimental, prefetch, transforms  # noqa: F401
from flowbook.data.dataset import Dataset
from flowbook.data.experimental import AUTOTUNE
from flowbook.data.iterator import (
    Iterator,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from flowbook.data.options import (
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    DatasetSpec,
    NumpyIterator,
    Options,
    ThreadingOptions,
    get_output_classes,
)
from flowbook.data.sources import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from flowbook.data.structure import TensorSpec

__all__ = [
    "AUTOTUNE",
    "INFINITE_CARDINALITY",
    "UNKNOWN_CARDINALITY",
    "Dataset",
    "DatasetSpec",
    "FixedLengthRecordDataset",
    "Iterator",
    "NumpyIterator",
    "Options",
    "TFRecordDataset",
    "TensorSpec",
    "TextLineDataset",
    "ThreadingOptions",
    "experimental",
    "get_output_classes",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]
