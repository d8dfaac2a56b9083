"""The input family: parsing (CSV, Example protos, raw bytes), readers, queues,
the ops that read a ``tf.data`` iterator, and the summary ops."""
