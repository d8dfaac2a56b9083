"""``tf.compat``: ``tf.compat.v1`` is flowbook itself, and TF1's mode switches.

flowbook *is* TensorFlow 1's graph mode: there is no eager mode and no TF2
behaviour to switch off.  So code written for TF2's compatibility layer runs
unchanged: ``import flowbook as tf`` then ``tf.compat.v1.placeholder(...)``,
and ``tf.compat.v1.disable_eager_execution()`` or ``disable_v2_behavior()``
at the top of a script do nothing, truthfully -- what they would turn off is
never on.  The same holds for the finer switches: tensors compare by
identity (``disable_tensor_equality``), ``TensorShape`` holds ``Dimension``
objects (``disable_v2_tensorshape``), variables are TF1's
(``disable_resource_variables``), and there is no control-flow v2
(``disable_control_flow_v2``).  ``executing_eagerly()`` is always False.
flowbook offers no ``enable_eager_execution``/``enable_v2_behavior``.

``v1`` is set by ``flowbook/__init__.py`` to the ``flowbook`` module once it
has loaded (this module is imported by it, so it cannot import it back).
The string helpers are TensorFlow's ``tf.compat.as_bytes``/``as_text``.

    >>> import flowbook as tf
    >>> tf.compat.v1 is tf, tf.compat.v1.placeholder is tf.placeholder
    (True, True)
    >>> tf.compat.v1.disable_eager_execution(); tf.executing_eagerly()
    False
"""

from __future__ import annotations

import numbers
import os
from types import ModuleType
from typing import Any

import numpy as np

v1: ModuleType  # the flowbook package; set by flowbook/__init__.py

bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def disable_eager_execution() -> None:
    """Does nothing: flowbook always builds graphs and runs them in sessions (TF1's mode)."""


def disable_v2_behavior() -> None:
    """Does nothing: flowbook behaves as TensorFlow 1 always (graph mode, TF1 semantics)."""


def disable_control_flow_v2() -> None:
    """Does nothing: flowbook has no control-flow v2 to turn off."""


def disable_resource_variables() -> None:
    """Does nothing: flowbook's variables behave as TF1's always."""


def disable_tensor_equality() -> None:
    """Does nothing: flowbook's tensors always compare by identity, as in TF1."""


def disable_v2_tensorshape() -> None:
    """Does nothing: ``TensorShape`` always holds TF1's ``Dimension`` objects."""


def executing_eagerly() -> bool:
    """Always False: flowbook builds graphs; sessions run them."""
    return False


def executing_eagerly_outside_functions() -> bool:
    """Always False, as :func:`executing_eagerly`."""
    return False


def control_flow_v2_enabled() -> bool:
    """Always False: flowbook has TF1's control flow only."""
    return False


def resource_variables_enabled() -> bool:
    """Always False: flowbook's variables are TF1's."""
    return False


def as_bytes(bytes_or_text: Any, encoding: str = "utf-8") -> bytes:
    """``bytes`` as is, ``str`` encoded.

    >>> as_bytes("naïve")
    b'na\\xc3\\xafve'
    """
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: Any, encoding: str = "utf-8") -> str:
    """``str`` as is, ``bytes`` decoded.

    >>> as_text(b"abc")
    'abc'
    """
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes | bytearray):
        return bytes(bytes_or_text).decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value: Any, encoding: str = "utf-8") -> str:
    """``value`` as ``str``: bytes decoded, anything else through ``str()``."""
    return as_text(value, encoding) if isinstance(value, bytes) else str(value)


def path_to_str(path: Any) -> Any:
    """A path-like object as its string; anything else unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


__all__ = [
    "as_bytes",
    "as_str",
    "as_str_any",
    "as_text",
    "bytes_or_text_types",
    "complex_types",
    "control_flow_v2_enabled",
    "disable_control_flow_v2",
    "disable_eager_execution",
    "disable_resource_variables",
    "disable_tensor_equality",
    "disable_v2_behavior",
    "disable_v2_tensorshape",
    "executing_eagerly",
    "executing_eagerly_outside_functions",
    "integral_types",
    "path_to_str",
    "real_types",
    "resource_variables_enabled",
    "v1",
]
