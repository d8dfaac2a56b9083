"""The protobuf face of the run options: ``RunOptions``, ``ConfigProto``, ``RunMetadata``...

flowbook keeps these as dataclasses (``flowbook.runtime.config``,
``flowbook.runtime.step_stats``): they are built on every traced run, some
fill themselves lazily (``LazyStepStats``), and a few carry flowbook's own
fields (``check_numerics``, a node's ``frame_name``).  What a TF1 program does
with the messages themselves (``SerializeToString()``, ``print(run_metadata)``,
handing the bytes to TensorFlow or TensorBoard) goes through :class:`ProtoView`,
a mixin that turns the dataclass into TensorFlow's message
(``tensorboard.compat.proto.config_pb2`` / ``step_stats_pb2``) on demand.

The conversion is by field name: every dataclass field the message also has is
copied (nested dataclasses, lists of them and maps recursively); fields the
message lacks are flowbook's own and are left out, as are ``None`` values
(``OptimizerOptions.do_constant_folding`` unset).  A class whose field differs
in kind from TensorFlow's (``TensorDescription.dtype``, a name here and an
enum there) overrides :meth:`ProtoView._fill`.  The protobuf modules are
imported on first use, so ``import flowbook`` loads none of them.

    >>> from flowbook.runtime.config import RunOptions
    >>> RunOptions(trace_level=RunOptions.FULL_TRACE, check_numerics=True).to_proto()
    trace_level: FULL_TRACE
    <BLANKLINE>
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, ClassVar


class ProtoView:
    """Mixin: a dataclass with the same fields as a TensorFlow message, and its methods.

    ``_PROTO`` names the message: (module under ``tensorboard.compat.proto``,
    the message's name, dotted for a nested one).

    >>> from flowbook.runtime.config import ConfigProto
    >>> len(ConfigProto(log_device_placement=True).SerializeToString())
    2
    """

    _PROTO: ClassVar[tuple[str, str]] = ("", "")

    @classmethod
    def proto_class(cls) -> Any:
        """TensorFlow's message class for this dataclass (``config_pb2.RunOptions``...)."""
        module, name = cls._PROTO
        found: Any = importlib.import_module("tensorboard.compat.proto." + module)
        for part in name.split("."):
            found = getattr(found, part)
        return found

    def to_proto(self) -> Any:
        """A new message holding this object's TensorFlow fields."""
        message = self.proto_class()()
        self._fill(message)
        return message

    def _fill(self, message: Any) -> None:
        """Copy every field ``message`` also has into it (None: left unset)."""
        fields = message.DESCRIPTOR.fields_by_name
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name in fields and value is not None:
                _set(message, fields[f.name], value)

    def SerializeToString(self, **kwargs: Any) -> bytes:  # protobuf's name
        """The message's wire bytes, as TensorFlow's ``SerializeToString``."""
        return self.to_proto().SerializeToString(**kwargs)

    def ByteSize(self) -> int:  # protobuf's name
        return self.to_proto().ByteSize()

    def __str__(self) -> str:
        """The message's text format, as ``print`` shows a TensorFlow message."""
        from google.protobuf import text_format  # lazy: protobuf is slow to import

        return text_format.MessageToString(self.to_proto())


def _set(message: Any, field: Any, value: Any) -> None:
    """Set one field of ``message`` from a dataclass value (a message, list, map or scalar)."""
    target = getattr(message, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        target.update(value)
    elif _repeated(field):
        for item in value:
            if field.message_type is None:
                target.append(item)
            else:
                _copy(target.add(), item)
    elif field.message_type is not None:
        _copy_singular(message, field.name, value)
    elif field.type == field.TYPE_UINT32:  # a thread's ident is wider than the field
        setattr(message, field.name, int(value) & 0xFFFFFFFF)
    else:
        setattr(message, field.name, value)


def _copy_singular(message: Any, name: str, value: Any) -> None:
    """Set a singular message field, leaving it absent when ``value`` holds only defaults
    (so an untouched ``gpu_options`` prints as TensorFlow's does: not at all)."""
    part = getattr(message, name).__class__()
    _copy(part, value)
    if part.ListFields():
        getattr(message, name).CopyFrom(part)


def _copy(message: Any, value: Any) -> None:
    """Fill a message field from a ProtoView dataclass or a message of its type."""
    if isinstance(value, ProtoView):
        value._fill(message)
    else:
        message.CopyFrom(value)


def _repeated(field: Any) -> bool:
    """Whether a field descriptor is a repeated one (protobuf 6 renamed ``label``)."""
    if hasattr(field, "is_repeated"):
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)
