"""The SavedModel format (TF1's ``tf.saved_model``): its message, constants and signatures.

A SavedModel is a folder: ``saved_model.pb`` (or ``saved_model.pbtxt``), one
``SavedModel`` message holding ``saved_model_schema_version = 1`` and
``meta_graphs = 2``, a ``MetaGraphDef`` per tag set (``serve``, ``train``...),
beside ``variables/variables.index`` and ``variables/variables.data-*`` (a
checkpoint of format V2) and ``assets/``.  A ``SignatureDef`` in a MetaGraph
names a model's inputs and outputs: ``TensorInfo`` messages, each a tensor's
name, dtype and shape.

TensorFlow's ``saved_model.proto`` is not among tensorboard's compiled
messages, so its one message is described here at import time, with
TensorFlow's field numbers, on top of tensorboard's ``MetaGraphDef`` (as
``flowbook.train.tensor_bundle`` describes the bundle's messages).  Saving and
loading (they need a Session and a Saver) are ``flowbook.train.saved_model``.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     x = fb.placeholder(fb.float32, [None, 3], name="x")
    ...     sig = predict_signature_def({"x": x}, {"y": x * 2.0})
    >>> sig.method_name, sig.inputs["x"].name, [d.size for d in sig.inputs["x"].tensor_shape.dim]
    ('tensorflow/serving/predict', 'x:0', [-1, 3])
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import DecodeError
from tensorboard.compat.proto import meta_graph_pb2, types_pb2

from flowbook.framework.graph import get_default_graph

__all__ = [
    "SavedModel",
    "build_signature_def",
    "build_tensor_info",
    "classification_signature_def",
    "get_tensor_from_tensor_info",
    "predict_signature_def",
    "read_saved_model",
    "regression_signature_def",
    "signature_constants",
    "tag_constants",
    "write_saved_model",
]

SCHEMA_VERSION = 1
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"

tag_constants = SimpleNamespace(
    SERVING="serve", TRAINING="train", GPU="gpu", TPU="tpu", EVAL="eval"
)
signature_constants = SimpleNamespace(
    DEFAULT_SERVING_SIGNATURE_DEF_KEY="serving_default",
    CLASSIFY_INPUTS="inputs",
    CLASSIFY_METHOD_NAME="tensorflow/serving/classify",
    CLASSIFY_OUTPUT_CLASSES="classes",
    CLASSIFY_OUTPUT_SCORES="scores",
    PREDICT_INPUTS="inputs",
    PREDICT_METHOD_NAME="tensorflow/serving/predict",
    PREDICT_OUTPUTS="outputs",
    REGRESS_INPUTS="inputs",
    REGRESS_METHOD_NAME="tensorflow/serving/regress",
    REGRESS_OUTPUTS="outputs",
)


# ----------------------------------------------------------- the message
def _saved_model_file() -> descriptor_pb2.FileDescriptorProto:
    """``message SavedModel { int64 saved_model_schema_version = 1;
    repeated MetaGraphDef meta_graphs = 2; }``"""
    f = descriptor_pb2.FileDescriptorProto(
        name="flowbook/graph_io/saved_model.proto",
        package="flowbook.saved_model",
        syntax="proto3",
        dependency=[meta_graph_pb2.DESCRIPTOR.name],
    )
    fd = descriptor_pb2.FieldDescriptorProto
    msg = f.message_type.add(name="SavedModel")
    msg.field.add(
        name="saved_model_schema_version", number=1, label=fd.LABEL_OPTIONAL, type=fd.TYPE_INT64
    )
    msg.field.add(
        name="meta_graphs",
        number=2,
        label=fd.LABEL_REPEATED,
        type=fd.TYPE_MESSAGE,
        type_name=".tensorboard.MetaGraphDef",
    )
    return f


def _saved_model_class() -> type:
    pool = descriptor_pool.Default()
    proto = _saved_model_file()
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("flowbook.saved_model.SavedModel")
    )


SavedModel = _saved_model_class()


def write_saved_model(proto: Any, export_dir: str, as_text: bool = False) -> str:
    """Write ``saved_model.pb`` (or ``.pbtxt``) into ``export_dir``; returns its path."""
    if as_text:
        path = os.path.join(export_dir, SAVED_MODEL_FILENAME_PBTXT)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(proto))
    else:
        path = os.path.join(export_dir, SAVED_MODEL_FILENAME_PB)
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
    return path


def read_saved_model(export_dir: str) -> Any:
    """The ``SavedModel`` message of a folder; ``OSError`` when it has none, ``ValueError``
    naming the file when it does not parse.

    >>> read_saved_model("/no/such/dir")
    Traceback (most recent call last):
    OSError: SavedModel file does not exist at: /no/such/dir/{saved_model.pbtxt|saved_model.pb}
    """
    pb = os.path.join(export_dir, SAVED_MODEL_FILENAME_PB)
    txt = os.path.join(export_dir, SAVED_MODEL_FILENAME_PBTXT)
    if os.path.isfile(pb):
        with open(pb, "rb") as f:
            data = f.read()
        proto = SavedModel()
        try:
            proto.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as e:
            raise ValueError(f"{pb}: not a SavedModel (the bytes do not parse: {e})") from None
        if not proto.meta_graphs:
            raise ValueError(f"{pb}: not a SavedModel (it holds no MetaGraph)")
        return proto
    if os.path.isfile(txt):
        with open(txt, "rb") as f:
            data = f.read()
        try:
            return text_format.Parse(data.decode("utf-8"), SavedModel())
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise ValueError(f"{txt}: not a SavedModel in text format: {e}") from None
    raise OSError(
        f"SavedModel file does not exist at: {export_dir}/"
        f"{{{SAVED_MODEL_FILENAME_PBTXT}|{SAVED_MODEL_FILENAME_PB}}}"
    )


# ------------------------------------------------------------ signatures
def _dt_enum(dtype: Any) -> int:
    name = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF"}.get(dtype.name)
    return types_pb2.DataType.Value(f"DT_{name or dtype.name.upper()}")


def build_tensor_info(tensor: Any) -> Any:
    """The ``TensorInfo`` of a tensor (its name, dtype and shape); TF1's
    ``tf.saved_model.utils.build_tensor_info``."""
    t = (
        getattr(tensor, "_as_tensor", lambda: tensor)()
        if not hasattr(tensor, "value_index")
        else tensor
    )
    info = meta_graph_pb2.TensorInfo(name=t.name, dtype=_dt_enum(t.dtype))
    shape = t._shape
    if shape is None:
        info.tensor_shape.unknown_rank = True
    else:
        for d in shape:
            info.tensor_shape.dim.add(size=-1 if d is None else int(d))
    return info


def get_tensor_from_tensor_info(
    tensor_info: Any, graph: Any = None, import_scope: str | None = None
) -> Any:
    """The tensor of ``graph`` (the default one) a ``TensorInfo`` names."""
    graph = get_default_graph() if graph is None else graph
    if tensor_info.WhichOneof("encoding") != "name":
        raise ValueError(f"Only TensorInfo of a dense tensor (by name) is supported: {tensor_info}")
    name = f"{import_scope}/{tensor_info.name}" if import_scope else tensor_info.name
    return graph.get_tensor_by_name(name)


def build_signature_def(
    inputs: dict | None = None, outputs: dict | None = None, method_name: str | None = None
) -> Any:
    """A ``SignatureDef`` from {key: TensorInfo} maps and a method name."""
    sig = meta_graph_pb2.SignatureDef()
    for key, info in (inputs or {}).items():
        sig.inputs[key].CopyFrom(info)
    for key, info in (outputs or {}).items():
        sig.outputs[key].CopyFrom(info)
    if method_name is not None:
        sig.method_name = method_name
    return sig


def predict_signature_def(inputs: dict, outputs: dict) -> Any:
    """A predict ``SignatureDef`` from {key: tensor} maps."""
    if not inputs or not outputs:
        raise ValueError("predict_signature_def needs inputs and outputs.")
    return build_signature_def(
        {k: build_tensor_info(t) for k, t in inputs.items()},
        {k: build_tensor_info(t) for k, t in outputs.items()},
        signature_constants.PREDICT_METHOD_NAME,
    )


def regression_signature_def(examples: Any, predictions: Any) -> Any:
    """A regress ``SignatureDef``: serialized examples in, predictions out."""
    return build_signature_def(
        {signature_constants.REGRESS_INPUTS: build_tensor_info(examples)},
        {signature_constants.REGRESS_OUTPUTS: build_tensor_info(predictions)},
        signature_constants.REGRESS_METHOD_NAME,
    )


def classification_signature_def(examples: Any, classes: Any, scores: Any) -> Any:
    """A classify ``SignatureDef``: serialized examples in, classes and/or scores out."""
    outputs = {}
    if classes is not None:
        outputs[signature_constants.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
    if scores is not None:
        outputs[signature_constants.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
    return build_signature_def(
        {signature_constants.CLASSIFY_INPUTS: build_tensor_info(examples)},
        outputs,
        signature_constants.CLASSIFY_METHOD_NAME,
    )
