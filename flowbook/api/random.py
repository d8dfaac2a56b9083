"""``flowbook.api.random``: TF1's ``tf.random`` namespace, the names it lists that flowbook has.

Aliases of functions defined elsewhere: ``uniform``, ``normal``,
``truncated_normal``, ``shuffle`` (the ``random_*`` ops), ``set_random_seed``
and the candidate samplers.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.random.uniform([2], seed=1).op.type
    'Add'
"""

from flowbook.framework.graph import set_random_seed
from flowbook.ops.random.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from flowbook.ops.random.multinomial_ops import categorical, multinomial
from flowbook.ops.random.random_ops import random_normal as normal
from flowbook.ops.random.random_ops import random_shuffle as shuffle
from flowbook.ops.random.random_ops import random_uniform as uniform
from flowbook.ops.random.random_ops import truncated_normal

__all__ = [
    "categorical",
    "log_uniform_candidate_sampler",
    "multinomial",
    "normal",
    "set_random_seed",
    "shuffle",
    "truncated_normal",
    "uniform",
    "uniform_candidate_sampler",
]
