"""``tf.test``: TF1's ``TestCase`` and ``tf.test.main``, for tests of graph code.

:class:`TestCase` is a ``unittest.TestCase`` whose ``setUp`` gives each test
a fresh default graph, with:

- sessions: ``session()`` (a new one each time), ``cached_session()`` (one per
  test, closed in ``tearDown``) and TF1's ``test_session()`` (the cached one),
  each a context manager that makes the session and its graph the default;
  ``use_gpu=False`` builds the ops inside on the CPU, ``force_gpu=True`` on
  ``/device:GPU:0``;
- ``evaluate(tensors)``: their values, through the default session, else the
  cached one;
- numpy assertions that take tensors' values, arrays, numbers and nested
  lists, tuples and dicts of them: ``assertAllClose`` (tolerances widen for
  float16), ``assertAllEqual``, ``assertNotAllClose``, ``assertAllGreater``,
  ``assertAllGreaterEqual``, ``assertAllLess``, ``assertAllLessEqual``,
  ``assertAllInRange``, ``assertNear``, ``assertArrayNear``,
  ``assertShapeEqual``, ``assertDTypeEqual``, ``assertRaisesOpError``;
- ``get_temp_dir()``: a directory for this test, removed after it.

    >>> import flowbook as tf
    >>> class T(TestCase):
    ...     def test_add(self):
    ...         with self.cached_session():
    ...             self.assertAllClose(self.evaluate(tf.constant([1.0]) + 1.0), [2.0])
    >>> import unittest
    >>> unittest.TextTestRunner(stream=open("/dev/null", "w")).run(T("test_add")).wasSuccessful()
    True
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import tempfile
import unittest
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from flowbook.autodiff import gradient_checker
from flowbook.framework import devices, errors
from flowbook.framework import graph as graph_module
from flowbook.runtime.session import Session, get_default_session

compute_gradient = gradient_checker.compute_gradient
compute_gradient_error = gradient_checker.compute_gradient_error


class TestCase(unittest.TestCase):
    """A ``unittest.TestCase`` for graph code: a fresh default graph per test, sessions,
    ``evaluate`` and numpy assertions (see the module's docstring).
    """

    def setUp(self) -> None:
        super().setUp()
        graph_module.reset_default_graph()
        self._cached: Session | None = None  # the session cached_session() hands out
        self._temp_dir: str | None = None  # get_temp_dir()'s directory, made on first call

    def tearDown(self) -> None:
        if getattr(self, "_cached", None) is not None:
            self._cached.close()
            self._cached = None
        if getattr(self, "_temp_dir", None):
            shutil.rmtree(self._temp_dir, ignore_errors=True)
        super().tearDown()

    # ------------------------------------------------------------ sessions
    @contextlib.contextmanager
    def _as_default(self, sess: Session, use_gpu: bool, force_gpu: bool) -> Iterator[Session]:
        device = "/device:GPU:0" if force_gpu else (None if use_gpu else "/device:CPU:0")
        with sess.graph.as_default(), sess.as_default():
            if device is None:
                yield sess
            else:
                with sess.graph.device(device):
                    yield sess

    @contextlib.contextmanager
    def session(
        self, graph: Any = None, config: Any = None, use_gpu: bool = True, force_gpu: bool = False
    ) -> Iterator[Session]:
        """A new session on ``graph`` (default: the default graph), closed on exit."""
        graph = graph if graph is not None else graph_module.get_default_graph()
        with (
            Session(graph=graph, config=config) as sess,
            self._as_default(sess, use_gpu, force_gpu),
        ):
            yield sess

    @contextlib.contextmanager
    def cached_session(
        self, graph: Any = None, config: Any = None, use_gpu: bool = True, force_gpu: bool = False
    ) -> Iterator[Session]:
        """This test's one session (made on first use, on ``graph``), kept open until tearDown."""
        graph = graph if graph is not None else graph_module.get_default_graph()
        if self._cached is None or self._cached.graph is not graph:
            if self._cached is not None:
                self._cached.close()
            self._cached = Session(graph=graph, config=config)
        with self._as_default(self._cached, use_gpu, force_gpu):
            yield self._cached

    @property
    def test_session(self) -> Any:
        """TF1's name for :meth:`cached_session` (same arguments).

        A property, so that unittest and pytest, which collect callables named ``test*``,
        do not take it for a test.
        """
        return self.cached_session

    def evaluate(self, tensors: Any) -> Any:
        """The values of ``tensors`` (any nesting), run in the default or the cached session."""
        sess = get_default_session()
        if sess is None:
            with self.cached_session() as cached:
                return cached.run(tensors)
        return sess.run(tensors)

    def get_temp_dir(self) -> str:
        """A temporary directory for this test, removed after it."""
        if not self._temp_dir:
            self._temp_dir = tempfile.mkdtemp(prefix=f"{type(self).__name__}.")
        return self._temp_dir

    # ---------------------------------------------------------- assertions
    def _values(self, a: Any) -> Any:
        """``a`` with every tensor replaced by its value (nested lists, tuples and dicts kept)."""
        if isinstance(a, dict):
            return {k: self._values(v) for k, v in a.items()}
        if hasattr(a, "graph") and hasattr(a, "dtype") and not isinstance(a, np.ndarray):
            return self.evaluate(a)
        return a

    def _pairs(self, a: Any, b: Any, path: str = "") -> Iterator[tuple[Any, Any, str]]:
        """Matching leaves of two nested structures, with where they sit (``[0]['w']``)."""
        a, b = self._values(a), self._values(b)
        if isinstance(a, dict) or isinstance(b, dict):
            if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
                self.fail(f"structures differ at {path or 'the top'}: {a!r} vs {b!r}")
            for k in a:
                yield from self._pairs(a[k], b[k], f"{path}[{k!r}]")
        elif (
            isinstance(a, list | tuple)
            and isinstance(b, list | tuple)
            and any(isinstance(x, dict | list | tuple) or hasattr(x, "graph") for x in [*a, *b])
        ):
            if len(a) != len(b):
                self.fail(f"lengths differ at {path or 'the top'}: {len(a)} vs {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                yield from self._pairs(x, y, f"{path}[{i}]")
        else:
            yield np.asarray(a), np.asarray(b), path

    def assertAllClose(
        self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6, msg: str | None = None
    ) -> None:
        """``a`` and ``b`` (tensors, arrays, nestings) are equal in shape and close in value."""
        for x, y, where in self._pairs(a, b):
            if x.dtype == np.float16 or y.dtype == np.float16:
                rtol, atol = max(rtol, 1e-3), max(atol, 1e-3)
            self.assertEqual(x.shape, y.shape, f"shapes differ{where and ' at ' + where}: {msg}")
            np.testing.assert_allclose(
                x, y, rtol=rtol, atol=atol, err_msg=f"{where} {msg or ''}".strip()
            )

    def assertAllCloseAccordingToType(self, a: Any, b: Any, **kwargs: Any) -> None:
        """:meth:`assertAllClose`, with float16's tolerances where either side is float16."""
        self.assertAllClose(a, b, **kwargs)

    def assertNotAllClose(self, a: Any, b: Any, **kwargs: Any) -> None:
        """The opposite of :meth:`assertAllClose`."""
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        self.fail(f"expected the values to differ, both are {self._values(a)!r}")

    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:
        """Equal shapes and exactly equal values."""
        for x, y, where in self._pairs(a, b):
            self.assertEqual(x.shape, y.shape, f"shapes differ{where and ' at ' + where}: {msg}")
            np.testing.assert_array_equal(x, y, err_msg=f"{where} {msg or ''}".strip())

    def _check_all(self, a: Any, ok: Any, what: str) -> None:
        values = np.asarray(self._values(a))
        if not np.all(ok(values)):
            self.fail(f"not all values are {what}: {values!r}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:
        self._check_all(a, lambda v: v > comparison_target, f"> {comparison_target}")

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:
        self._check_all(a, lambda v: v >= comparison_target, f">= {comparison_target}")

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:
        self._check_all(a, lambda v: v < comparison_target, f"< {comparison_target}")

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:
        self._check_all(a, lambda v: v <= comparison_target, f"<= {comparison_target}")

    def assertAllInRange(
        self,
        target: Any,
        lower_bound: float,
        upper_bound: float,
        open_lower_bound: bool = False,
        open_upper_bound: bool = False,
    ) -> None:
        """Every value lies between the bounds (closed unless ``open_*``)."""
        low = (lambda v: v > lower_bound) if open_lower_bound else (lambda v: v >= lower_bound)
        high = (lambda v: v < upper_bound) if open_upper_bound else (lambda v: v <= upper_bound)
        self._check_all(target, lambda v: low(v) & high(v), f"in [{lower_bound}, {upper_bound}]")

    def assertNear(self, f1: float, f2: float, err: float, msg: str | None = None) -> None:
        """``|f1 - f2| <= err``."""
        self.assertTrue(abs(f1 - f2) <= err, f"{f1} != {f2} +/- {err} {msg or ''}".strip())

    def assertArrayNear(self, farray1: Sequence[float], farray2: Sequence[float], err: float):
        """Two sequences of floats, equal in length, each pair within ``err``."""
        self.assertEqual(len(farray1), len(farray2))
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err)

    def assertShapeEqual(self, np_array: Any, tf_tensor: Any, msg: str | None = None) -> None:
        """The array's shape equals the tensor's static shape."""
        self.assertEqual(list(np.shape(np_array)), tf_tensor.get_shape().as_list(), msg)

    def assertDTypeEqual(self, target: Any, expected_dtype: Any) -> None:
        """Every array in ``target`` has dtype ``expected_dtype``."""
        for x, _, _ in self._pairs(target, target):
            self.assertEqual(
                x.dtype, np.dtype(getattr(expected_dtype, "as_numpy_dtype", expected_dtype))
            )

    def assertRaisesOpError(self, expected_err_re_or_predicate: Any) -> Any:
        """A context manager: the block raises an ``errors.OpError`` whose message matches."""
        return self.assertRaisesRegex(errors.OpError, expected_err_re_or_predicate)


def get_temp_dir() -> str:
    """A new temporary directory (TF's ``tf.test.get_temp_dir``)."""
    return tempfile.mkdtemp(prefix="flowbook_test.")


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Any = None) -> bool:
    """Whether flowbook has a GPU to run on (a CuPy GPU, or a registered one).

    >>> isinstance(is_gpu_available(), bool)
    True
    """
    return devices.gpu_available()


def gpu_device_name() -> str:
    """The first GPU's name (``/device:GPU:0``), or ``""`` when there is none."""
    gpus = devices.gpus()
    return gpus[0].name if gpus else ""


def is_built_with_cuda() -> bool:
    """Whether CuPy, flowbook's route to CUDA, is installed."""
    return importlib.util.find_spec("cupy") is not None


def main(argv: Sequence[str] | None = None) -> None:
    """Run the tests of the ``__main__`` module (``unittest.main``), then exit."""
    unittest.main(module="__main__", argv=None if argv is None else list(argv))


__all__ = [
    "TestCase",
    "compute_gradient",
    "compute_gradient_error",
    "get_temp_dir",
    "gpu_device_name",
    "is_built_with_cuda",
    "is_gpu_available",
    "main",
]
