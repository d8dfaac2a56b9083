"""Small built-in data sets for notebooks; ``load_digits`` wraps scikit-learn's digits.

``load_digits()`` returns ``Digits(train, test)``: two ``Batches`` holding
8x8 handwritten digits as float32 rows of 64 pixels scaled to [0, 1] and int
labels 0-9 (one-hot rows with ``one_hot=True``).  The split is a seeded,
stratified shuffle, so it is the same on every machine.

``Batches`` hands out minibatches as the old MNIST helper did:
``next_batch(n)`` walks a shuffled copy of the data and reshuffles at each
epoch's end (the batch that crosses the end takes the last examples of one
epoch and the first of the next); iterating over it gives one epoch of
batches of ``batch_size``.

    >>> import numpy as np
    >>> b = Batches(np.arange(10.0).reshape(5, 2), np.arange(5), batch_size=2, seed=0)
    >>> [len(y) for _, y in b], b.epochs_completed
    ([2, 2, 1], 1)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Batches", "Digits", "load_digits", "one_hot"]


def one_hot(labels: Any, num_classes: int = 10, dtype: Any = np.float32) -> np.ndarray:
    """Rows of ``num_classes`` with a 1 at each label.

    >>> one_hot([0, 2], 3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    labels = np.asarray(labels, dtype=np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(
            f"labels must lie in [0, {num_classes}), got {labels.min()}..{labels.max()}"
        )
    out = np.zeros((labels.size, num_classes), dtype=dtype)
    out[np.arange(labels.size), labels.reshape(-1)] = 1
    return out.reshape(*labels.shape, num_classes)


class Batches:
    """Examples and labels served as shuffled minibatches (``next_batch``, or ``for`` one epoch)."""

    def __init__(
        self,
        images: Any,
        labels: Any,
        batch_size: int | None = None,
        seed: int | None = 0,
        shuffle: bool = True,
    ) -> None:
        images, labels = np.asarray(images), np.asarray(labels)
        if len(images) != len(labels):
            raise ValueError(f"images and labels differ in length: {len(images)} != {len(labels)}")
        self._images = images  # the data, in its original order
        self._labels = labels
        self.batch_size = batch_size  # the size of the batches that iteration yields
        self._shuffle = shuffle
        self._rng = np.random.RandomState(seed)  # this object's own shuffles
        self._order = np.arange(len(images))  # the current epoch's order
        self._index_in_epoch = 0  # the next example next_batch hands out
        self._epochs_completed = 0  # epochs next_batch has finished

    @property
    def images(self) -> np.ndarray:
        return self._images

    @property
    def labels(self) -> np.ndarray:
        return self._labels

    @property
    def num_examples(self) -> int:
        return len(self._images)

    @property
    def epochs_completed(self) -> int:
        return self._epochs_completed

    def __len__(self) -> int:
        return self.num_examples

    def _new_epoch(self) -> None:
        if self._shuffle:
            self._order = self._rng.permutation(self.num_examples)

    def _take(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._images[idx], self._labels[idx]

    def next_batch(self, batch_size: int, shuffle: bool | None = None) -> tuple[Any, Any]:
        """The next ``batch_size`` (images, labels), reshuffling when an epoch ends."""
        n = self.num_examples
        if not 0 < batch_size <= n:
            raise ValueError(
                f"batch_size must be in 1..{n} (the number of examples), got {batch_size}"
            )
        if shuffle is not None:
            self._shuffle = shuffle
        start = self._index_in_epoch
        if start == 0 and self._epochs_completed == 0:
            self._new_epoch()
        if start + batch_size <= n:
            self._index_in_epoch = start + batch_size
            return self._take(self._order[start : start + batch_size])
        rest = self._order[start:]
        self._epochs_completed += 1
        self._new_epoch()
        self._index_in_epoch = batch_size - len(rest)
        return self._take(np.concatenate([rest, self._order[: self._index_in_epoch]]))

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        """One epoch of batches of ``batch_size`` in a fresh shuffled order (the last may be short)."""
        if not self.batch_size:
            raise ValueError(
                "Batches(..., batch_size=n) is needed to iterate; or call next_batch(n)"
            )
        order = self._rng.permutation(self.num_examples) if self._shuffle else np.arange(len(self))
        for start in range(0, len(order), self.batch_size):
            yield self._take(order[start : start + self.batch_size])
        self._epochs_completed += 1

    def __repr__(self) -> str:
        return f"<Batches of {self.num_examples} examples, images {self._images.shape[1:]}>"


class Digits(NamedTuple):
    """The train and test splits of the digits data set; ``num_classes`` is 10."""

    train: Batches
    test: Batches

    num_classes = 10


def load_digits(
    test_fraction: float = 0.25, seed: int = 0, one_hot: bool = False, batch_size: int | None = None
) -> Digits:
    """scikit-learn's 1,797 8x8 digits, split into train and test ``Batches``.

    Images: float32 [n, 64] in [0, 1]; labels: int64 [n] (float32 [n, 10] when ``one_hot``).
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    try:
        from sklearn.datasets import load_digits as sk_load_digits  # lazy: optional, and slow
    except ImportError as e:
        raise ImportError("load_digits needs scikit-learn: pip install scikit-learn") from e
    data = sk_load_digits()
    images = (data.data / 16.0).astype(np.float32)
    labels = data.target.astype(np.int64)
    rng = np.random.RandomState(seed)
    test_idx = []
    for c in np.unique(labels):  # stratified: each class split in the same proportion
        idx = rng.permutation(np.flatnonzero(labels == c))
        test_idx.append(idx[: round(len(idx) * test_fraction)])
    is_test = np.zeros(len(labels), dtype=bool)
    is_test[np.concatenate(test_idx)] = True
    train_idx = rng.permutation(np.flatnonzero(~is_test))
    test_order = rng.permutation(np.flatnonzero(is_test))
    targets: Any = _one_hot(labels, 10) if one_hot else labels
    return Digits(
        Batches(images[train_idx], targets[train_idx], batch_size, seed=seed),
        Batches(images[test_order], targets[test_order], batch_size, seed=seed + 1),
    )


_one_hot = one_hot  # load_digits has an argument of the same name
