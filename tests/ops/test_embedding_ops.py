"""Embedding lookups, candidate samplers, nce_loss and sampled_softmax_loss.

Lookups are checked against numpy indexing of the unsharded table (the shards
built from it by TF's documented "mod" and "div" rules); the samplers against
their documented distributions and expected-count formulas; the sampled
losses against the formulas of TF's ``_compute_sampled_logits`` computed in
numpy from the very candidates the sampler drew in the same run.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error

RNG = np.random.default_rng(21)
FLT_MAX = float(np.finfo(np.float32).max)


def run(t, feed=None):
    with fb.Session() as s:
        return s.run(t, feed)


def shards_of(table, n, strategy):
    """Split ``table`` into ``n`` shards by TF's rule for ``strategy``."""
    if strategy == "mod":
        return [table[i::n] for i in range(n)]
    q, r = divmod(len(table), n)
    sizes = [q + 1] * r + [q] * (n - r)
    return np.split(table, np.cumsum(sizes)[:-1])


# ------------------------------------------------------------ embedding_lookup
@pytest.mark.parametrize("ids", [3, [4, 0, 4], [[1, 2], [9, 0]]], ids=["scalar", "1d", "2d"])
def test_lookup_one_table(ids):
    table = RNG.standard_normal((10, 3)).astype(np.float32)
    for params in (table, fb.constant(table), [table]):
        y = fb.nn.embedding_lookup(params, ids)
        assert y.shape.as_list() == [*np.shape(ids), 3]
        np.testing.assert_array_equal(run(y), table[np.asarray(ids)])


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("rows,n", [(10, 3), (9, 3), (7, 2), (5, 5)])
def test_lookup_shards(strategy, rows, n):
    table = RNG.standard_normal((rows, 2, 2)).astype(np.float32)
    ids = RNG.integers(0, rows, (4, 3)).astype(np.int64)
    y = fb.nn.embedding_lookup(shards_of(table, n, strategy), ids, partition_strategy=strategy)
    assert y.shape.as_list() == [4, 3, 2, 2]
    np.testing.assert_array_equal(run(y), table[ids])


def test_lookup_div_with_shards_of_unknown_size():
    table = RNG.standard_normal((11, 2)).astype(np.float32)
    parts = shards_of(table, 3, "div")
    phs = [fb.placeholder(fb.float32, [None, 2]) for _ in parts]
    ids = fb.placeholder(fb.int32, [None])
    y = fb.nn.embedding_lookup(phs, ids, partition_strategy="div")
    want_ids = np.array([10, 0, 3, 4, 7, 3])
    feed = {**dict(zip(phs, parts)), ids: want_ids}
    np.testing.assert_array_equal(run(y, feed), table[want_ids])


def test_lookup_max_norm_clips_each_embedding():
    table = RNG.standard_normal((6, 4)).astype(np.float32) * 3
    ids = np.array([[0, 5], [2, 2]])
    norms = np.linalg.norm(table[ids], axis=-1, keepdims=True)
    want = table[ids] * 1.5 / np.maximum(norms, 1.5)
    for params in (table, shards_of(table, 4, "mod")):
        got = run(fb.nn.embedding_lookup(params, ids, max_norm=1.5))
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_lookup_gradient_is_dense_and_sums_repeats():
    table = RNG.standard_normal((7, 2)).astype(np.float32)
    ids = np.array([[1, 6, 1], [3, 1, 0]])
    g_out = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    want = np.zeros_like(table)
    np.add.at(want, ids, g_out)
    v = fb.Variable(table)
    (g,) = fb.gradients(fb.nn.embedding_lookup(v, ids), [v], grad_ys=[g_out])
    parts = [fb.constant(p) for p in shards_of(table, 3, "div")]
    y = fb.nn.embedding_lookup(parts, ids, partition_strategy="div")
    gs = fb.gradients(y, parts, grad_ys=[g_out])
    with fb.Session() as s:
        s.run(v.initializer)
        np.testing.assert_allclose(s.run(g), want, rtol=1e-6)
        got_parts = s.run(gs)
    for got, w in zip(got_parts, shards_of(want, 3, "div")):
        np.testing.assert_allclose(got, w, rtol=1e-6)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_lookup_shard_gradient_matches_finite_differences(strategy):
    x0 = RNG.standard_normal((3, 2))
    other = fb.constant(RNG.standard_normal((2, 2)))
    x = fb.placeholder(fb.float64, (3, 2))
    y = fb.nn.embedding_lookup([x, other], [[0, 4, 1], [2, 2, 3]], strategy, max_norm=1.0)
    err = compute_gradient_error(x, (3, 2), y, (2, 3, 2), x_init_value=x0)
    assert err < 1e-6


def test_lookup_errors():
    with pytest.raises(ValueError, match="at least one"):
        fb.nn.embedding_lookup([], [0])
    with pytest.raises(ValueError, match="Unrecognized partition strategy"):
        fb.nn.embedding_lookup([fb.zeros([2, 1]), fb.zeros([2, 1])], [0], "range")
    with pytest.raises(TypeError, match="int32 or int64"):
        fb.nn.embedding_lookup(fb.zeros([2, 1]), [0.5])


# ------------------------------------------------------------ candidate samplers
def log_uniform_p(k, range_max):
    return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(range_max + 1.0)


SAMPLERS = {
    "log_uniform": (fb.nn.log_uniform_candidate_sampler, log_uniform_p),
    "uniform": (fb.nn.uniform_candidate_sampler, lambda k, m: np.full(np.shape(k), 1.0 / m)),
}


@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("kind", SAMPLERS)
def test_sampler_outputs_and_expected_counts(kind, unique):
    fn, p = SAMPLERS[kind]
    true = np.array([[0, 3], [7, 19]], np.int64)
    out = fn(true, 2, 12, unique, 20, seed=4)
    assert [t.shape.as_list() for t in out] == [[12], [2, 2], [12]]
    assert [t.dtype for t in out] == [fb.int64, fb.float32, fb.float32]
    cands, tc, sc = run(list(out))
    assert ((cands >= 0) & (cands < 20)).all()
    if not unique:
        np.testing.assert_allclose(tc, p(true, 20) * 12, rtol=1e-6)
        np.testing.assert_allclose(sc, p(cands, 20) * 12, rtol=1e-6)
        return
    assert len(set(cands.tolist())) == 12
    # 1 - (1 - p)^tries for one number of tries >= 12 (p * 12 when none was rejected)
    tries = np.log1p(-sc.astype(np.float64)) / np.log1p(-p(cands, 20))
    tries = 12 if np.allclose(sc, p(cands, 20) * 12, rtol=1e-6) else round(float(tries[0]))
    want = p(true, 20) * 12 if tries == 12 else -np.expm1(tries * np.log1p(-p(true, 20)))
    np.testing.assert_allclose(tc, want, rtol=1e-5)


def test_seeded_sampler_repeats_in_fresh_sessions_and_alias():
    assert fb.random.log_uniform_candidate_sampler is fb.nn.log_uniform_candidate_sampler
    assert fb.random.uniform_candidate_sampler is fb.nn.uniform_candidate_sampler
    s = fb.random.log_uniform_candidate_sampler([[1]], 1, 5, True, 50, seed=9)
    first, second = run(s.sampled_candidates), run(s.sampled_candidates)
    np.testing.assert_array_equal(first, second)
    with fb.Session() as sess:  # one session: a new draw each run
        draws = {tuple(sess.run(s.sampled_candidates)) for _ in range(5)}
    assert len(draws) > 1


def test_log_uniform_sampler_follows_zipf():
    s = fb.nn.log_uniform_candidate_sampler([[0]], 1, 20000, False, 10, seed=2)
    counts = np.bincount(run(s.sampled_candidates), minlength=10) / 20000
    np.testing.assert_allclose(counts, log_uniform_p(np.arange(10), 10), atol=0.015)


def test_sampler_errors():
    with pytest.raises(ValueError, match="unique"):
        fb.nn.uniform_candidate_sampler([[0]], 1, 6, True, 5)
    with pytest.raises(TypeError, match="int64"):
        fb.nn.uniform_candidate_sampler(fb.constant([[0]]), 1, 2, False, 5)
    with pytest.raises(ValueError, match="num_true"):
        fb.nn.uniform_candidate_sampler([[0, 1]], 1, 2, False, 5)


# ------------------------------------------------------------ nce_loss and sampled_softmax_loss
def np_sampled_logits(w, b, labels, x, cands, tc, sc, remove_hits):
    """TF's _compute_sampled_logits, in float64 numpy."""
    num_true = labels.shape[1]
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels] - np.log(tc)
    sampled = x @ w[cands].T + b[cands]
    if remove_hits:
        hits = (labels[:, :, None] == cands[None, None, :]).any(1)
        sampled = sampled + np.where(hits, -FLT_MAX, 0.0)
    sampled = sampled - np.log(sc)
    logits = np.concatenate([true_logits, sampled], 1)
    targets = np.concatenate(
        [np.full(true_logits.shape, 1.0 / num_true), np.zeros(sampled.shape)], 1
    )
    return logits, targets


def np_nce(logits, z):
    return (np.maximum(logits, 0) - logits * z + np.log1p(np.exp(-np.abs(logits)))).sum(1)


def np_sampled_softmax(logits, z):
    m = logits.max(1, keepdims=True)
    log_sm = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
    return -(z * log_sm).sum(1)


LOSSES = {
    "nce": (fb.nn.nce_loss, np_nce, False),
    "nce/remove_hits": (fb.nn.nce_loss, np_nce, True),
    "sampled_softmax": (fb.nn.sampled_softmax_loss, np_sampled_softmax, True),
    "sampled_softmax/keep_hits": (fb.nn.sampled_softmax_loss, np_sampled_softmax, False),
}


@pytest.mark.parametrize("num_true,sharded", [(1, False), (2, True)])
@pytest.mark.parametrize("case", LOSSES)
def test_sampled_loss_equals_formula_on_the_drawn_candidates(case, num_true, sharded):
    fn, ref, remove = LOSSES[case]
    classes, dim, batch, num_sampled = 12, 3, 4, 6
    w = RNG.standard_normal((classes, dim)).astype(np.float32)
    b = RNG.standard_normal(classes).astype(np.float32)
    x = RNG.standard_normal((batch, dim)).astype(np.float32)
    labels = RNG.integers(0, 4, (batch, num_true))  # frequent classes: accidental hits are likely
    g = fb.Graph()
    with g.as_default():
        fb.set_random_seed(5)
        weights = shards_of(w, 3, "mod") if sharded else w
        loss = fn(
            weights,
            b,
            labels,
            x,
            num_sampled,
            classes,
            num_true=num_true,
            remove_accidental_hits=remove,
        )
        (sampler,) = [op for op in g.get_operations() if op.type.endswith("CandidateSampler")]
        assert sampler.type == "LogUniformCandidateSampler" and sampler.attrs["unique"]
        with fb.Session() as s:
            got, cands, tc, sc = s.run([loss, *sampler.outputs])
    assert got.shape == (batch,)
    logits, z = np_sampled_logits(
        w.astype(np.float64),
        b.astype(np.float64),
        labels,
        x.astype(np.float64),
        cands,
        tc,
        sc,
        remove,
    )
    np.testing.assert_allclose(got, ref(logits, z), rtol=2e-5, atol=2e-5)


def test_sampled_values_given_and_gradients_reach_weights_and_inputs():
    w = fb.constant(RNG.standard_normal((8, 3)))
    b = fb.constant(RNG.standard_normal(8))
    x = fb.placeholder(fb.float64, (2, 3))
    sampled = (fb.constant(np.array([0, 5, 2], np.int64)), [[0.5], [0.25]], [0.5, 0.1, 0.3])
    loss = fb.nn.sampled_softmax_loss(w, b, [[1], [2]], x, 3, 8, sampled_values=sampled)
    err = compute_gradient_error(x, (2, 3), loss, (2,), x_init_value=RNG.standard_normal((2, 3)))
    assert err < 1e-6
    gw, gb = fb.gradients(loss, [w, b])
    gw_v, gb_v = run([gw, gb], {x: np.ones((2, 3))})
    assert gw_v.shape == (8, 3) and not gw_v[[3, 4, 6, 7]].any()  # rows never looked up: zero
    assert gb_v[[0, 1, 2, 5]].all()


@pytest.mark.parametrize(
    "fn", [fb.nn.nce_loss, fb.nn.sampled_softmax_loss], ids=lambda f: f.__name__
)
def test_training_word_vectors_lowers_the_loss(fn):
    """Skip-gram-like pairs (word i predicts word (i + 1) % V); a few SGD steps lower the loss."""
    vocab, dim = 40, 8
    fb.set_random_seed(3)
    emb = fb.Variable(fb.random_uniform([vocab, dim], -1.0, 1.0))
    w = fb.Variable(fb.truncated_normal([vocab, dim], stddev=0.3))
    b = fb.Variable(fb.zeros([vocab]))
    words = fb.placeholder(fb.int32, [None])
    targets = fb.placeholder(fb.int64, [None, 1])
    loss = fb.reduce_mean(fn(w, b, targets, fb.nn.embedding_lookup(emb, words), 10, vocab))
    step = fb.train.GradientDescentOptimizer(0.5).minimize(loss)
    ids = np.arange(vocab)
    feed = {words: ids, targets: ((ids + 1) % vocab)[:, None]}
    with fb.Session() as s:
        s.run(fb.global_variables_initializer())
        before = np.mean([s.run(loss, feed) for _ in range(10)])
        for _ in range(60):
            s.run(step, feed)
        after = np.mean([s.run(loss, feed) for _ in range(10)])
    assert after < 0.7 * before, (before, after)
