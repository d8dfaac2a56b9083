"""A stand-in for ``tensorflow.examples.tutorials.mnist.input_data``, made of the digits.

TF1's MNIST tutorials start with ``mnist = input_data.read_data_sets("MNIST_data/",
one_hot=True)``, which downloaded 70,000 28x28 images.  flowbook never
downloads: :func:`read_data_sets` answers with scikit-learn's 1,797 8x8
handwritten digits (:func:`flowbook.data.datasets.load_digits`), scaled up to 28x28
by bilinear interpolation so the shapes match MNIST's and the tutorial code
(``[None, 784]`` placeholders, ``reshape(x, [-1, 28, 28, 1])``) runs
unchanged.  It is a stand-in, not MNIST: fewer, blurrier examples, and
accuracies that are not MNIST's.

- ``train_dir`` is accepted and ignored (nothing is read or written there);
- the digits' seeded split gives 1,347 train and 450 test examples;
  ``validation_size`` counts MNIST examples (5,000 of MNIST's 60,000 training
  images by default) and takes the same *fraction* of the stand-in's training
  examples (112 of 1,347), from its end;
- images are float32 in [0, 1] (``dtype=uint8``: 0..255), rows of 784
  (``reshape=False``: [n, 28, 28, 1]); labels are ints (``one_hot``: rows of 10);
- each split is a :class:`DataSet` with ``images``, ``labels``,
  ``num_examples``, ``epochs_completed`` and ``next_batch(n)``.

    >>> mnist = read_data_sets("MNIST_data/", one_hot=True)
    >>> mnist.train.images.shape, mnist.validation.num_examples, mnist.test.labels.shape
    ((1235, 784), 112, (450, 10))
    >>> xs, ys = mnist.train.next_batch(100); xs.shape, ys.shape
    ((100, 784), (100, 10))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from flowbook.data.datasets import Batches, load_digits
from flowbook.data.datasets import one_hot as _one_hot

MNIST_TRAIN_EXAMPLES = 60000  # what validation_size is a part of, in TF1's helper
SIDE = 28  # MNIST's images are 28x28


class DataSet(Batches):
    """One split: ``images``, ``labels``, ``num_examples``, ``epochs_completed``, ``next_batch``."""

    def next_batch(
        self, batch_size: int, fake_data: bool = False, shuffle: bool | None = True
    ) -> tuple[Any, Any]:
        """The next ``batch_size`` (images, labels), reshuffled each epoch."""
        if fake_data:
            raise ValueError("fake_data is not supported: the stand-in has real digits only")
        return super().next_batch(batch_size, shuffle=shuffle)


class Datasets(NamedTuple):
    """``train``, ``validation`` and ``test`` :class:`DataSet`s."""

    train: DataSet
    validation: DataSet
    test: DataSet


def _interpolation(n_in: int, n_out: int) -> np.ndarray:
    """The [n_out, n_in] matrix of 1-D linear interpolation with pixel centres aligned."""
    centres = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    centres = np.clip(centres, 0, n_in - 1)
    low = np.floor(centres).astype(int)
    high = np.minimum(low + 1, n_in - 1)
    frac = centres - low
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), low] += 1 - frac
    m[np.arange(n_out), high] += frac
    return m


def upscale(images: np.ndarray, side: int = SIDE) -> np.ndarray:
    """[n, 64] rows of 8x8 images -> [n, side, side], bilinear.

    >>> upscale(np.ones((1, 64))).shape, float(upscale(np.ones((1, 64))).max())
    ((1, 28, 28), 1.0)
    """
    n_in = round(np.sqrt(images.shape[1]))
    m = _interpolation(n_in, side)
    square = images.reshape(-1, n_in, n_in)
    return np.einsum("ij,njk,lk->nil", m, square, m)


def dense_to_one_hot(labels_dense: Any, num_classes: int = 10) -> np.ndarray:
    """Integer labels -> one-hot rows.

    >>> dense_to_one_hot([1, 0], 3).tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    return _one_hot(labels_dense, num_classes)


def read_data_sets(
    train_dir: Any = None,
    fake_data: bool = False,
    one_hot: bool = False,
    dtype: Any = np.float32,
    reshape: bool = True,
    validation_size: int = 5000,
    seed: int | None = None,
    source_url: Any = None,
) -> Datasets:
    """The digits, as MNIST-shaped ``Datasets(train, validation, test)`` (see the module)."""
    if fake_data:
        raise ValueError("fake_data is not supported: the stand-in has real digits only")
    if not 0 <= validation_size <= MNIST_TRAIN_EXAMPLES:
        raise ValueError(
            f"validation_size should be between 0 and {MNIST_TRAIN_EXAMPLES}, got {validation_size}"
        )
    dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
    if dtype not in (np.float32, np.uint8):
        raise TypeError(f"Invalid image dtype {dtype}, expected uint8 or float32")
    digits = load_digits(seed=0, one_hot=one_hot)
    rows = 0 if seed is None else int(seed)

    def prepare(images: np.ndarray) -> np.ndarray:
        big = upscale(images)
        big = np.round(big * 255).astype(np.uint8) if dtype == np.uint8 else big.astype(dtype)
        return big.reshape(len(big), SIDE * SIDE) if reshape else big[..., None]

    train_x, train_y = prepare(digits.train.images), digits.train.labels
    n_val = round(validation_size * len(train_x) / MNIST_TRAIN_EXAMPLES)
    cut = len(train_x) - n_val
    return Datasets(
        DataSet(train_x[:cut], train_y[:cut], seed=rows),
        DataSet(train_x[cut:], train_y[cut:], seed=rows + 1),
        DataSet(prepare(digits.test.images), digits.test.labels, seed=rows + 2),
    )


__all__ = ["DataSet", "Datasets", "dense_to_one_hot", "read_data_sets", "upscale"]
