"""``tf.data.experimental``: the TF1-era fused transformations, as the plain ones they fuse.

Each returns a function for ``Dataset.apply``; flowbook gains nothing from
fusing (its ``map`` already runs a chunk of elements per run where it can),
so each is the composition it names.

    >>> import flowbook as tf
    >>> ds = tf.data.Dataset.range(5).apply(map_and_batch(lambda x: x * 2, 2))
    >>> [b.tolist() for b in ds.as_numpy_iterator()]
    [[0, 2], [4, 6], [8]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowbook.data.dataset import Dataset

AUTOTUNE = -1  # num_parallel_calls / cycle_length / buffer sizes: let the library choose

Transformation = Callable[[Dataset], Dataset]


def shuffle_and_repeat(
    buffer_size: int, count: int | None = None, seed: Any = None
) -> Transformation:
    """``shuffle(buffer_size, seed)`` then ``repeat(count)``: a new order each pass."""
    return lambda ds: ds.shuffle(buffer_size, seed).repeat(count)


def map_and_batch(
    map_func: Callable[..., Any],
    batch_size: int,
    num_parallel_batches: Any = None,
    drop_remainder: bool = False,
    num_parallel_calls: Any = None,
) -> Transformation:
    """``map(map_func)`` then ``batch(batch_size, drop_remainder)``."""
    return lambda ds: ds.map(map_func).batch(batch_size, drop_remainder)


def parallel_interleave(
    map_func: Callable[..., Any],
    cycle_length: int,
    block_length: int = 1,
    sloppy: bool = False,
    buffer_output_elements: Any = None,
    prefetch_input_elements: Any = None,
) -> Transformation:
    """``interleave(map_func, cycle_length, block_length)`` (in order, as ``sloppy=False``)."""
    return lambda ds: ds.interleave(map_func, cycle_length, block_length)


def unbatch() -> Transformation:
    """``Dataset.unbatch`` as a transformation."""
    return lambda ds: ds.unbatch()


__all__ = ["AUTOTUNE", "map_and_batch", "parallel_interleave", "shuffle_and_repeat", "unbatch"]
