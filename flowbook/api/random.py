"""``flowbook.api.random``: TF1's ``tf.random`` namespace, the names it lists that flowbook has.

Aliases of functions defined elsewhere: ``uniform``, ``normal``,
``truncated_normal``, ``shuffle`` (the ``random_*`` ops), ``set_random_seed``,
``get_seed`` (TF's op-seed rules), the candidate samplers, and the stateless
functions of :mod:`flowbook.ops.random.stateless_random_ops` (``stateless_*``,
``fold_in``, ``split``, ``create_rng_state``, ``Algorithm``), which
``experimental`` also holds under TF's ``stateless_fold_in`` /
``stateless_split`` names.

    >>> import flowbook as fb
    >>> with fb.Graph().as_default():
    ...     fb.random.uniform([2], seed=1).op.type
    'Add'
"""

from types import SimpleNamespace

from flowbook.framework.graph import set_random_seed
from flowbook.ops.random.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from flowbook.ops.random.multinomial_ops import categorical, multinomial
from flowbook.ops.random.random_ops import get_seed, truncated_normal
from flowbook.ops.random.random_ops import random_normal as normal
from flowbook.ops.random.random_ops import random_shuffle as shuffle
from flowbook.ops.random.random_ops import random_uniform as uniform
from flowbook.ops.random.stateless_random_ops import (
    Algorithm,
    all_candidate_sampler,
    create_rng_state,
    fold_in,
    split,
    stateless_categorical,
    stateless_multinomial,
    stateless_parameterized_truncated_normal,
    stateless_truncated_normal,
)
from flowbook.ops.random.stateless_random_ops import stateless_random_normal as stateless_normal
from flowbook.ops.random.stateless_random_ops import stateless_random_uniform as stateless_uniform

experimental = SimpleNamespace(
    Algorithm=Algorithm,
    create_rng_state=create_rng_state,
    stateless_fold_in=fold_in,
    stateless_split=split,
)

__all__ = [
    "Algorithm",
    "all_candidate_sampler",
    "categorical",
    "create_rng_state",
    "experimental",
    "fold_in",
    "get_seed",
    "log_uniform_candidate_sampler",
    "multinomial",
    "normal",
    "set_random_seed",
    "shuffle",
    "split",
    "stateless_categorical",
    "stateless_multinomial",
    "stateless_normal",
    "stateless_parameterized_truncated_normal",
    "stateless_truncated_normal",
    "stateless_uniform",
    "truncated_normal",
    "uniform",
    "uniform_candidate_sampler",
]
