"""Graphs and tensors as TensorFlow's files: GraphDefs, tensor protos, TFRecords.

``graph_def`` writes a Graph as a GraphDef and ``graph_def_import`` reads one
back into the default graph; ``tensor_protos`` converts ndarrays to and from
``TensorProto``; ``tfrecord`` and ``record_files`` read and write record files."""
