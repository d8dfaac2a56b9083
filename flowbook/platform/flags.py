"""``tf.flags`` and ``tf.app.flags``: command-line flags on absl-py, as TF1 had them.

The ``DEFINE_*`` functions are absl's own (``DEFINE_string``,
``DEFINE_integer``, ``DEFINE_float``, ``DEFINE_boolean``/``DEFINE_bool``,
``DEFINE_list``, ``DEFINE_enum``, ``DEFINE_multi_string``...), and they define
flags in absl's global ``absl.flags.FLAGS``.  :data:`FLAGS` here wraps that
same object with the one leniency TF1 added: reading a flag before anything
parsed the command line parses ``sys.argv`` first, keeping arguments it does
not know (``known_only``).  So ``FLAGS.learning_rate`` works in a script
that never calls ``tf.app.run``, and in a Jupyter kernel, whose ``sys.argv``
carries the kernel's own ``-f kernel.json``.

``tf.app.run`` (``flowbook.platform.app.run``) parses ``sys.argv`` into the flags the
same way and calls ``main`` with what is left.

    >>> from absl import flags as absl_flags
    >>> fv = absl_flags.FlagValues()
    >>> _ = DEFINE_integer("steps", 100, "training steps", flag_values=fv)
    >>> fv(["prog", "--steps=5"]); fv.steps
    ['prog']
    5
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from absl import flags as _absl

DEFINE = _absl.DEFINE
DEFINE_string = _absl.DEFINE_string
DEFINE_integer = _absl.DEFINE_integer
DEFINE_float = _absl.DEFINE_float
DEFINE_boolean = _absl.DEFINE_boolean
DEFINE_bool = _absl.DEFINE_bool
DEFINE_list = _absl.DEFINE_list
DEFINE_spaceseplist = _absl.DEFINE_spaceseplist
DEFINE_enum = _absl.DEFINE_enum
DEFINE_enum_class = _absl.DEFINE_enum_class
DEFINE_multi_string = _absl.DEFINE_multi_string
DEFINE_multi_integer = _absl.DEFINE_multi_integer
DEFINE_multi_float = _absl.DEFINE_multi_float
DEFINE_multi_enum = _absl.DEFINE_multi_enum
DEFINE_alias = _absl.DEFINE_alias
DEFINE_flag = _absl.DEFINE_flag
Error = _absl.Error
Flag = _absl.Flag
FlagValues = _absl.FlagValues
DuplicateFlagError = _absl.DuplicateFlagError
IllegalFlagValueError = _absl.IllegalFlagValueError
UnrecognizedFlagError = _absl.UnrecognizedFlagError
UnparsedFlagAccessError = _absl.UnparsedFlagAccessError
ValidationError = _absl.ValidationError
mark_flag_as_required = _absl.mark_flag_as_required
mark_flags_as_required = _absl.mark_flags_as_required
mark_flags_as_mutual_exclusive = _absl.mark_flags_as_mutual_exclusive
register_validator = _absl.register_validator
validator = _absl.validator
declare_key_flag = _absl.declare_key_flag
adopt_module_key_flags = _absl.adopt_module_key_flags


def parse(argv: Sequence[str] | None = None) -> list[str]:
    """Parse ``argv`` (default ``sys.argv``) into absl's flags, keeping unknown arguments;
    returns ``[argv[0], *what was not a known flag]``.
    """
    args = list(sys.argv if argv is None else argv) or [""]
    return _absl.FLAGS(args, known_only=True)


class _FlagValuesWrapper:
    """absl's ``FLAGS``, parsing ``sys.argv`` leniently on the first read if nothing parsed yet."""

    def __init__(self, wrapped: Any) -> None:
        self.__dict__["_wrapped"] = wrapped  # absl.flags.FLAGS

    def _parsed(self) -> Any:
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            parse()
        return wrapped

    def __getattr__(self, name: str) -> Any:
        wrapped = self.__dict__["_wrapped"]
        if name in wrapped:  # a flag's value: parse the command line first
            return getattr(self._parsed(), name)
        return getattr(wrapped, name)  # a method of FlagValues (is_parsed, flag_values_dict...)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._parsed(), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.__dict__["_wrapped"], name)

    def __getitem__(self, name: str) -> Any:
        return self.__dict__["_wrapped"][name]

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__["_wrapped"]

    def __iter__(self) -> Any:
        return iter(self.__dict__["_wrapped"])

    def __len__(self) -> int:
        return len(self.__dict__["_wrapped"])

    def __call__(self, argv: Sequence[str], known_only: bool = False) -> list[str]:
        return self.__dict__["_wrapped"](list(argv), known_only=known_only)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_wrapped"])

    def __repr__(self) -> str:
        return f"<flowbook FLAGS wrapping {self.__dict__['_wrapped']!r}>"


FLAGS = _FlagValuesWrapper(_absl.FLAGS)  # tf.flags.FLAGS

__all__ = [
    "DEFINE",
    "FLAGS",
    "DEFINE_alias",
    "DEFINE_bool",
    "DEFINE_boolean",
    "DEFINE_enum",
    "DEFINE_enum_class",
    "DEFINE_flag",
    "DEFINE_float",
    "DEFINE_integer",
    "DEFINE_list",
    "DEFINE_multi_enum",
    "DEFINE_multi_float",
    "DEFINE_multi_integer",
    "DEFINE_multi_string",
    "DEFINE_spaceseplist",
    "DEFINE_string",
    "DuplicateFlagError",
    "Error",
    "Flag",
    "FlagValues",
    "IllegalFlagValueError",
    "UnparsedFlagAccessError",
    "UnrecognizedFlagError",
    "ValidationError",
    "adopt_module_key_flags",
    "declare_key_flag",
    "mark_flag_as_required",
    "mark_flags_as_mutual_exclusive",
    "mark_flags_as_required",
    "parse",
    "register_validator",
    "validator",
]
