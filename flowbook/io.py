"""TF1's ``tf.io`` names that flowbook has: GraphDefs, ``gfile``, and TFRecord files.

>>> import flowbook as tf
>>> callable(tf.io.write_graph), tf.io.gfile.exists("/")
(True, True)
"""

from flowbook import gfile
from flowbook.graph_def import read_graph_def, write_graph
from flowbook.tfrecord import TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordWriter", "gfile", "read_graph_def", "tf_record_iterator", "write_graph"]
