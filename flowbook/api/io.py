"""TF1's ``tf.io`` names that flowbook has: GraphDefs, ``gfile``, TFRecord files, parsing,
serialization, and the codecs and queues TF1 also files under ``tf.image`` and ``tf``.

Most names are defined where their family lives and only gathered here; the
one defined here, :func:`match_filenames_once`, needs a variable, which the op
layer below cannot make.

>>> import flowbook as tf
>>> callable(tf.io.write_graph), tf.io.gfile.exists("/")
(True, True)
"""

from __future__ import annotations

from typing import Any

from flowbook.framework.graph import GraphKeys, name_scope
from flowbook.graph_io.graph_def import read_graph_def, write_graph
from flowbook.graph_io.tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)
from flowbook.ops.image.codec_ops import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
    is_jpeg,
)
from flowbook.ops.io.example_ops import (
    FixedLenFeature,
    SparseTensor,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from flowbook.ops.io.parsing_ops import decode_csv, decode_raw, read_file, write_file
from flowbook.ops.io.queues import (
    PaddingFIFOQueue,
    PriorityQueue,
    QueueBase,
    RandomShuffleQueue,
)
from flowbook.ops.io.serialization_ops import (
    decode_compressed,
    deserialize_many_sparse,
    matching_files,
    parse_tensor,
    serialize_many_sparse,
    serialize_sparse,
    serialize_tensor,
)
from flowbook.ops.strings.string_ops import decode_base64, encode_base64
from flowbook.platform import gfile
from flowbook.variables.variables import Variable

__all__ = [
    "FixedLenFeature",
    "PaddingFIFOQueue",
    "PriorityQueue",
    "QueueBase",
    "RandomShuffleQueue",
    "SparseTensor",
    "TFRecordCompressionType",
    "TFRecordOptions",
    "TFRecordWriter",
    "VarLenFeature",
    "decode_and_crop_jpeg",
    "decode_base64",
    "decode_bmp",
    "decode_compressed",
    "decode_csv",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "decode_raw",
    "deserialize_many_sparse",
    "encode_base64",
    "encode_jpeg",
    "encode_png",
    "extract_jpeg_shape",
    "gfile",
    "is_jpeg",
    "match_filenames_once",
    "matching_files",
    "parse_example",
    "parse_single_example",
    "parse_tensor",
    "read_file",
    "read_graph_def",
    "serialize_many_sparse",
    "serialize_sparse",
    "serialize_tensor",
    "tf_record_iterator",
    "write_file",
    "write_graph",
]


def match_filenames_once(pattern: Any, name: str | None = None) -> Variable:
    """A local variable initialised to ``matching_files(pattern)``: the matches, found once.

    As in TF1 it sits in LOCAL_VARIABLES, so ``tf.local_variables_initializer()``
    runs the glob; reading it later gives the same list however the files change.
    """
    with name_scope(name, "matching_filenames", [pattern]) as scope:
        return Variable(
            matching_files(pattern),
            trainable=False,
            collections=[GraphKeys.LOCAL_VARIABLES],
            name=scope.rstrip("/"),
            validate_shape=False,
        )
