"""TF1's ``tf.io`` names that flowbook has: GraphDefs, ``gfile``, TFRecord files, parsing.

>>> import flowbook as tf
>>> callable(tf.io.write_graph), tf.io.gfile.exists("/")
(True, True)
"""

from flowbook import gfile
from flowbook.graph_def import read_graph_def, write_graph
from flowbook.ops.example_ops import (
    FixedLenFeature,
    SparseTensor,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from flowbook.ops.parsing_ops import decode_csv, decode_raw, read_file, write_file
from flowbook.tfrecord import TFRecordWriter, tf_record_iterator

__all__ = [
    "FixedLenFeature",
    "SparseTensor",
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
