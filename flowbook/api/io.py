"""TF1's ``tf.io`` names that flowbook has: GraphDefs, ``gfile``, TFRecord files, parsing.

>>> import flowbook as tf
>>> callable(tf.io.write_graph), tf.io.gfile.exists("/")
(True, True)
"""

from flowbook.graph_io.graph_def import read_graph_def, write_graph
from flowbook.graph_io.tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from flowbook.ops.io.example_ops import (
    FixedLenFeature,
    SparseTensor,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from flowbook.ops.io.parsing_ops import decode_csv, decode_raw, read_file, write_file
from flowbook.platform import gfile

__all__ = [
    "FixedLenFeature",
    "SparseTensor",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "VarLenFeature",
    "decode_csv",
    "decode_raw",
    "gfile",
    "parse_example",
    "parse_single_example",
    "read_file",
    "read_graph_def",
    "tf_record_iterator",
    "write_file",
    "write_graph",
]
