"""TF1's ``tf.io`` names that flowbook has: writing and reading GraphDefs, and ``gfile``.

>>> import flowbook as tf
>>> callable(tf.io.write_graph), tf.io.gfile.exists("/")
(True, True)
"""

from flowbook import gfile
from flowbook.graph_def import read_graph_def, write_graph

__all__ = ["gfile", "read_graph_def", "write_graph"]
