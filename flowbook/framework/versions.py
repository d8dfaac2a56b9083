"""``tf.version``: the version constants TF1 code reads, and what they mean here.

flowbook follows TensorFlow 1.15's graph-mode API, so ``VERSION`` is that
release's string (scripts that test ``tf.VERSION >= "1.4"`` take their TF1
path); ``GIT_VERSION`` says it is flowbook standing in for it.  flowbook is
pure Python, so the build constants describe no C++ build: ``COMPILER_VERSION``
is the compiler of the running Python, ``CXX_VERSION`` and the ABI and
monolithic-build flags are 0.  ``GRAPH_DEF_VERSION`` is the producer version
``as_graph_def`` writes into ``GraphDef.versions``; the import side accepts
GraphDefs from version 0 on.

    >>> from flowbook import version
    >>> version.VERSION, version.GRAPH_DEF_VERSION
    ('1.15.5', 27)
"""

from __future__ import annotations

import platform

VERSION = "1.15.5"  # the TensorFlow 1 release whose API flowbook follows
GIT_VERSION = "v1.15.5-flowbook"  # no TensorFlow checkout behind it: flowbook stands in
COMPILER_VERSION = platform.python_compiler()  # flowbook has no C++ part: Python's compiler
CXX_VERSION = 0  # no C++ build (TensorFlow gives its __cplusplus, e.g. 201402)
CXX11_ABI_FLAG = 0
MONOLITHIC_BUILD = 0
GRAPH_DEF_VERSION = 27  # the producer version as_graph_def writes
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
