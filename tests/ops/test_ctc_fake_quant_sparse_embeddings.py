"""TF1's long tail, continued: sparse embeddings, CTC decoding, fake quantisation, warm starts.

Values against numpy references written from TensorFlow's documented
formulas, gradients against finite differences, and the ``tf.train``
checkpoint helpers end to end (save, rebuild, warm-start, compare).
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error

RNG = np.random.default_rng(1615)
EMB = RNG.standard_normal((5, 3))
IDS = fb.SparseTensor([[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]], [1, 4, 0, 2, 2, 3], [4, 3])
WTS = [2.0, 1.0, 0.5, 1.0, 3.0, 1.0]
ROWS = {0: [(1, 2.0), (4, 1.0)], 1: [(0, 0.5)], 2: [], 3: [(2, 1.0), (2, 3.0), (3, 1.0)]}


def _combined(combiner, weighted, rows=(0, 1, 2, 3)):
    out = []
    for r in rows:
        pairs = [(i, w if weighted else 1.0) for i, w in ROWS[r]]
        if not pairs:
            out.append(np.zeros(3) * (np.nan if weighted and combiner != "sum" else 1.0))
            continue
        total = sum(w * EMB[i] for i, w in pairs)
        scale = {
            "sum": 1.0,
            "mean": sum(w for _, w in pairs),
            "sqrtn": np.sqrt(sum(w * w for _, w in pairs)),
        }[combiner]
        out.append(total / scale)
    return np.array(out)


def _fq_ref(x, lo, hi, bits, narrow):
    """TensorFlow's FakeQuant formula, in float64 from the float32 nudged range."""
    f = np.float32
    qmin, qmax = (1 if narrow else 0), 2**bits - 1
    scale = f((f(hi) - f(lo)) / f(qmax - qmin))
    zp = f(qmin - f(lo) / scale)
    zp = qmin if zp < qmin else qmax if zp > qmax else np.floor(zp + 0.5)
    nmin, nmax = f((qmin - zp) * scale), f((qmax - zp) * scale)
    c = np.clip(np.asarray(x, f), nmin, nmax)
    return (np.floor((c - nmin) / scale + f(0.5)) * scale + nmin).astype(f)


def _inside(lo, hi, bits, narrow=False):
    """Where X lies in the nudged range: the ends are the quantised values of -inf and +inf."""
    nmin, nmax = _fq_ref([-np.inf, np.inf], lo, hi, bits, narrow)
    return (nmin <= X) & (nmax >= X)


X = np.array([-7.0, -0.33, -0.01, 0.0, 0.2, 1.37, 2.49, 5.9, 6.2], np.float32)

VALUES = [
    *[(f"embedding_sparse_{c}_{w}", lambda c=c, w=w: fb.nn.embedding_lookup_sparse(
        fb.constant(EMB), IDS, fb.SparseTensor(IDS.indices, WTS, IDS.dense_shape) if w else None,
        combiner=c), lambda c=c, w=w: _combined(c, w))
      for c in ("sum", "mean", "sqrtn") for w in (False, True)],
    ("embedding_sparse_sharded", lambda: fb.nn.embedding_lookup_sparse(
        [fb.constant(EMB[0::2]), fb.constant(EMB[1::2])], IDS, None, combiner="sum"),
     lambda: _combined("sum", False)),
    ("safe_embedding", lambda: fb.nn.safe_embedding_lookup_sparse(
        fb.constant(EMB), fb.SparseTensor([[0, 0], [0, 1], [2, 0]], [3, -1, 2], [3, 2])),
     lambda: np.stack([EMB[3], np.zeros(3), EMB[2]])),
    ("safe_embedding_default_weights", lambda: fb.nn.safe_embedding_lookup_sparse(
        fb.constant(EMB), fb.SparseTensor([[0, 0], [0, 1], [1, 0]], [3, 1, 2], [3, 2]),
        fb.SparseTensor([[0, 0], [0, 1], [1, 0]], [1.0, 3.0, -1.0], [3, 2]), "sum", default_id=4),
     lambda: np.stack([EMB[3] + 3 * EMB[1], EMB[4], EMB[4]])),
    ("safe_embedding_rank3", lambda: fb.nn.safe_embedding_lookup_sparse(
        fb.constant(EMB), fb.SparseTensor([[0, 1, 0], [1, 0, 0]], [1, 2], [2, 2, 1])),
     lambda: np.stack([[np.zeros(3), EMB[1]], [EMB[2], np.zeros(3)]])),
    ("ctc_greedy", lambda: _decode([[0, 1, 1, 3, 1, 2], [2, 2, 3, 2, 0, 0]], [6, 4], True),
     lambda: ([[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1]], [0, 1, 1, 2, 2, 2], [2, 4])),
    ("ctc_greedy_no_merge", lambda: _decode([[0, 1, 1, 3, 1, 2], [2, 2, 3, 2, 0, 0]], [6, 4], False),
     lambda: ([[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [1, 0], [1, 1], [1, 2]],
              [0, 1, 1, 1, 2, 2, 2, 2], [2, 5])),
    ("collapse_repeated", lambda: list(fb.nn.collapse_repeated([[5, 5, 5, 1], [2, 3, 3, 3]], [4, 2])),
     lambda: [[[5, 1], [2, 3]], [2, 2]]),
    ("accidental_hits", lambda: list(fb.nn.compute_accidental_hits([[1, 2], [3, 1]], [1, 3, 2, 1], 2)),
     lambda: [[0, 0, 0, 1, 1, 1], [0, 3, 2, 1, 0, 3], [-np.finfo(np.float32).max] * 6]),
    ("all_candidates", lambda: list(fb.nn.all_candidate_sampler([[1, 2]], 2, 4, True)),
     lambda: [[0, 1, 2, 3], [[1.0, 1.0]], [1.0] * 4]),
    *[(f"fake_quant_args_{b}_{n}", lambda b=b, n=n: fb.fake_quant_with_min_max_args(X, -6.0, 6.0, b, n),
       lambda b=b, n=n: _fq_ref(X, -6.0, 6.0, b, n)) for b in (2, 4, 8) for n in (False, True)],
    ("fake_quant_args_shifted", lambda: fb.fake_quant_with_min_max_args(X, 0.5, 3.0, 3),
     lambda: _fq_ref(X, 0.5, 3.0, 3, False)),
    ("fake_quant_vars", lambda: fb.fake_quant_with_min_max_vars(X, -0.4, 2.5, 5, True),
     lambda: _fq_ref(X, -0.4, 2.5, 5, True)),
    ("fake_quant_per_channel", lambda: fb.fake_quant_with_min_max_vars_per_channel(
        X.reshape(3, 3), [-1.0, 0.0, -8.0], [1.0, 3.0, 0.5], 4),
     lambda: np.stack([_fq_ref(X.reshape(3, 3)[:, k], lo, hi, 4, False)
                       for k, (lo, hi) in enumerate([(-1, 1), (0, 3), (-8, 0.5)])], 1)),
    ("fake_quant_args_gradient", lambda: fb.fake_quant_with_min_max_args_gradient(np.ones(9), X, -0.33, 2.49),
     lambda: _inside(-0.33, 2.49, 8).astype(np.float32)),
    ("fake_quant_vars_gradient", lambda: list(fb.fake_quant_with_min_max_vars_gradient(np.arange(9.0), X, 0.0, 2.0, 8)),
     lambda: [[0, 0, 0, 3, 4, 5, 0, 0, 0], 0 + 1 + 2, 6 + 7 + 8]),
    ("fake_quant_channels_gradient", lambda: list(fb.fake_quant_with_min_max_vars_per_channel_gradient(
        np.ones((3, 3)), X.reshape(3, 3), [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0])),
     lambda: [(np.abs(X.reshape(3, 3)) <= 1).astype(float), [1, 0, 0], [1, 1, 2]]),
    ("histogram_bins", lambda: fb.histogram_fixed_width_bins(X, [-6.0, 6.0], 4),
     lambda: np.clip(np.floor((X + 6) / 12 * 4), 0, 3).astype(np.int32)),
    ("rfftnd", lambda: fb.rfftnd(EMB, [4, 6], [1, 0]), lambda: np.fft.rfftn(EMB, [4, 6], (1, 0))),
    ("irfftnd", lambda: fb.irfftnd(np.fft.rfftn(EMB, axes=(1, 0)), [3, 5], [1, 0]),
     lambda: np.fft.irfftn(np.fft.rfftn(EMB, axes=(1, 0)), [3, 5], (1, 0))),
]  # fmt: skip


def _decode(best, lengths, merge):
    logits = np.full((len(best[0]), len(best), 4), -1.0, np.float32)
    for b, row in enumerate(best):
        for t, c in enumerate(row):
            logits[t, b, c] = 2.0 + t
    (sp,), neg = fb.nn.ctc_greedy_decoder(logits, lengths, merge)
    want_neg = [[-sum(2.0 + t for t in range(n))] for n in lengths]
    return [sp.indices, sp.values, sp.dense_shape], neg, want_neg


@pytest.mark.parametrize("build,want", [r[1:] for r in VALUES], ids=[r[0] for r in VALUES])
def test_values_match_the_reference(build, want):
    with fb.Graph().as_default(), fb.Session() as s:
        built = build()
        if isinstance(built, tuple):  # the decoder: also the score
            built, neg, want_neg = built
            np.testing.assert_allclose(s.run(neg), want_neg)
        got = s.run(built)
    expected = want()
    if isinstance(expected, tuple | list) and isinstance(got, list):
        for g, w in zip(got, expected, strict=True):
            np.testing.assert_allclose(
                np.asarray(g, float), np.asarray(w, float), rtol=1e-6, atol=1e-6
            )
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


X23 = RNG.standard_normal((2, 3))
FULL = fb.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [2, 2]], [1, 4, 0, 2, 2, 3], [3, 3])
GRADIENTS = [
    ("embedding_sparse_params", lambda x: fb.nn.embedding_lookup_sparse(
        x, FULL, fb.SparseTensor(FULL.indices, np.array(WTS), FULL.dense_shape), combiner="mean"), EMB),
    ("embedding_sparse_weights", lambda x: fb.nn.embedding_lookup_sparse(
        fb.constant(EMB), FULL, fb.SparseTensor(FULL.indices, x, FULL.dense_shape), combiner="sqrtn"),
     np.abs(RNG.standard_normal(6)) + 0.5),
    ("safe_embedding", lambda x: fb.nn.safe_embedding_lookup_sparse(
        x, fb.SparseTensor([[0, 0], [0, 1], [2, 0]], [3, -1, 2], [3, 2]), combiner="sum"), EMB),
    ("rfftnd", lambda x: fb.real(fb.rfftnd(x, [2, 4], [0, 1])) + fb.imag(fb.rfftnd(x, [2, 4], [0, 1])), X23),
]  # fmt: skip


@pytest.mark.parametrize("build,x0", [r[1:] for r in GRADIENTS], ids=[r[0] for r in GRADIENTS])
def test_gradients_match_finite_differences(build, x0):
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float64, x0.shape)
        y = build(x)
        with fb.Session() as s:
            y0 = s.run(y, {x: x0})
            err = compute_gradient_error(x, x0.shape, y, y0.shape, x_init_value=x0, session=s)
    assert err < 1e-6


def test_fake_quant_gradients_pass_straight_through():
    with fb.Graph().as_default(), fb.Session() as s:
        x = fb.constant(X)
        lo, hi = fb.constant(-0.33), fb.constant(2.49)
        y = fb.fake_quant_with_min_max_vars(x, lo, hi, 8)
        gx, glo, ghi = s.run(
            fb.gradients(fb.reduce_sum(y * np.arange(9.0, dtype=np.float32)), [x, lo, hi])
        )
        nmin, nmax = s.run([fb.reduce_min(y), fb.reduce_max(y)])
        inside = (nmin <= X) & (nmax >= X)
        np.testing.assert_array_equal(gx, np.where(inside, np.arange(9.0), 0))
        assert glo == np.arange(9.0)[nmin > X].sum() and ghi == np.arange(9.0)[nmax < X].sum()
        (ga,) = fb.gradients(fb.reduce_sum(fb.fake_quant_with_min_max_args(x, 0.0, 1.0)), [x])
        np.testing.assert_array_equal(s.run(ga), ((X >= 0) & (X <= 1)).astype(np.float32))
    with pytest.raises(ValueError, match="num_bits must be between 2 and 16"):
        fb.fake_quant_with_min_max_args(X, num_bits=1)


def _saved(tmp_path):
    with fb.Graph().as_default(), fb.Session() as s:
        with fb.variable_scope("old"):
            w = fb.get_variable("w", initializer=np.arange(6.0).reshape(3, 2))
            b = fb.get_variable("b", initializer=np.array([1.0, -1.0]))
        emb = fb.get_variable("emb", initializer=np.arange(8.0).reshape(4, 2))
        s.run(fb.global_variables_initializer())
        path = fb.train.Saver().save(s, str(tmp_path / "model"))
        return path, s.run([w, b, emb])


def test_init_from_checkpoint_scopes_names_and_variables(tmp_path):
    path, (w, b, emb) = _saved(tmp_path)
    with fb.Graph().as_default(), fb.Session() as s:
        with fb.variable_scope("new"):
            nw = fb.get_variable("w", [3, 2])
            nb = fb.get_variable("b", [2])
        other = fb.get_variable("other", [4, 2])
        kept = fb.get_variable("kept", initializer=np.ones(2))
        fb.train.init_from_checkpoint(path, {"old/": "new/", "emb": other})
        s.run(fb.global_variables_initializer())
        got = s.run([nw, nb, other, kept])
    for g, want in zip(got, [w, b, emb, np.ones(2)], strict=True):
        np.testing.assert_array_equal(g, want)
    with fb.Graph().as_default():
        v = fb.get_variable("v", [2, 2])
        with pytest.raises(ValueError, match="doesn't match with shape"):
            fb.train.init_from_checkpoint(path, {"old/b": v})
        with pytest.raises(ValueError, match="not found"):
            fb.train.init_from_checkpoint(path, {"nope": "v"})


def test_warm_start_renames_and_remaps_vocabularies(tmp_path):
    path, (w, _, emb) = _saved(tmp_path)
    (tmp_path / "old.txt").write_text("a\nb\nc\nd\n")
    (tmp_path / "new.txt").write_text("c\nz\na\n")
    info = fb.train.VocabInfo(
        str(tmp_path / "new.txt"),
        3,
        1,
        str(tmp_path / "old.txt"),
        backup_initializer=fb.constant_initializer(-1.0),
    )
    with fb.Graph().as_default(), fb.Session() as s:
        nw = fb.get_variable("w", [3, 2])
        table = fb.get_variable("table", [4, 2])
        frozen = fb.get_variable("frozen", initializer=np.zeros(2), trainable=False)
        fb.train.warm_start(path, ".*", {"table": info}, {"w": "old/w", "table": "emb"})
        s.run(fb.global_variables_initializer())
        got_w, got_table, got_frozen = s.run([nw, table, frozen])
    np.testing.assert_array_equal(got_w, w)
    np.testing.assert_array_equal(got_table, [emb[2], [-1, -1], emb[0], [-1, -1]])
    np.testing.assert_array_equal(got_frozen, [0, 0])


def test_summary_iterator_reads_back_what_the_writer_wrote(tmp_path):
    with fb.Graph().as_default(), fb.Session() as s:
        writer = fb.summary.FileWriter(str(tmp_path))
        writer.add_summary(s.run(fb.summary.scalar("loss", fb.constant(0.5))), global_step=3)
        writer.close()
    (event_file,) = tmp_path.iterdir()
    events = list(fb.train.summary_iterator(str(event_file)))
    values = [(e.step, v.tag, v.simple_value) for e in events for v in e.summary.value]
    assert values == [(3, "loss", 0.5)]
    assert events[0].HasField("file_version")


def test_small_train_names(tmp_path):
    state = fb.train.generate_checkpoint_state_proto(str(tmp_path), "m-2", ["m-1"])
    assert state.model_checkpoint_path == "m-2" and state.all_model_checkpoint_paths == [
        "m-1",
        "m-2",
    ]
    assert isinstance(fb.train.ChiefSessionCreator(), fb.train.SessionCreator)
    assert fb.train.SaverDef().version == 0
    with fb.Graph().as_default():
        step = fb.train.get_or_create_global_step()
        bump = fb.assign_add(step, 1)
        hook = fb.train.GlobalStepWaiterHook(2, poll_seconds=0.0)
        hook.begin()
        with fb.Session() as s:
            s.run(step.initializer)

            class _Context:
                session = s

            s.run(bump)
            s.run(bump)
            hook.before_run(_Context())  # returns once the step has reached 2
            assert int(s.run(step)) == 2


def _pads(n, k, s, padding):
    if padding == "VALID":
        return (n - k) // s + 1, 0
    out = -(-n // s)
    return out, max((out - 1) * s + k - n, 0) // 2


def _np_conv3d(x, f, strides, padding):
    """TensorFlow's Conv3D by its definition, loop by loop (NDHWC, DHWIO)."""
    outs, befores = zip(*(_pads(x.shape[1 + a], f.shape[a], strides[a], padding) for a in range(3)))
    out = np.zeros((x.shape[0], *outs, f.shape[4]))
    for idx in np.ndindex(*outs):
        acc = 0.0
        for tap in np.ndindex(*f.shape[:3]):
            pos = [idx[a] * strides[a] + tap[a] - befores[a] for a in range(3)]
            if all(0 <= p < x.shape[1 + a] for a, p in enumerate(pos)):
                acc = acc + x[:, pos[0], pos[1], pos[2], :] @ f[tap]
        out[(slice(None), *idx)] = acc
    return out


def _np_pool3d(x, k, s, padding, how):
    outs, befores = zip(*(_pads(x.shape[1 + a], k[a], s[a], padding) for a in range(3)))
    out = np.zeros((x.shape[0], *outs, x.shape[4]))
    for idx in np.ndindex(*outs):
        lo = [max(idx[a] * s[a] - befores[a], 0) for a in range(3)]
        hi = [min(idx[a] * s[a] - befores[a] + k[a], x.shape[1 + a]) for a in range(3)]
        box = x[:, lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2], :].reshape(
            x.shape[0], -1, x.shape[4]
        )
        out[(slice(None), *idx)] = box.max(1) if how == "max" else box.mean(1)
    return out


V = RNG.standard_normal((2, 5, 4, 6, 3))
F = RNG.standard_normal((3, 2, 3, 3, 4))
CASES_3D = [
    ("conv3d_same", lambda x: fb.nn.conv3d(x, F, [1, 1, 1, 1, 1], "SAME"), lambda: _np_conv3d(V, F, (1, 1, 1), "SAME")),
    ("conv3d_valid_strided", lambda x: fb.nn.conv3d(x, F, [1, 2, 1, 2, 1], "VALID"),
     lambda: _np_conv3d(V, F, (2, 1, 2), "VALID")),
    ("conv3d_same_strided", lambda x: fb.nn.conv3d(x, F, [1, 2, 2, 2, 1], "SAME"), lambda: _np_conv3d(V, F, (2, 2, 2), "SAME")),
    ("max_pool3d_same", lambda x: fb.nn.max_pool3d(x, [1, 2, 3, 2, 1], [1, 2, 2, 2, 1], "SAME"),
     lambda: _np_pool3d(V, (2, 3, 2), (2, 2, 2), "SAME", "max")),
    ("max_pool3d_valid", lambda x: fb.nn.max_pool3d(x, [1, 3, 2, 2, 1], [1, 1, 2, 1, 1], "VALID"),
     lambda: _np_pool3d(V, (3, 2, 2), (1, 2, 1), "VALID", "max")),
    ("avg_pool3d_same", lambda x: fb.nn.avg_pool3d(x, [1, 3, 3, 2, 1], [1, 2, 1, 2, 1], "SAME"),
     lambda: _np_pool3d(V, (3, 3, 2), (2, 1, 2), "SAME", "avg")),
    ("avg_pool3d_valid", lambda x: fb.nn.avg_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID"),
     lambda: _np_pool3d(V, (2, 2, 2), (2, 2, 2), "VALID", "avg")),
]  # fmt: skip


@pytest.mark.parametrize("build,want", [r[1:] for r in CASES_3D], ids=[r[0] for r in CASES_3D])
def test_3d_ops_match_their_definition_and_differentiate(build, want):
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float64, V.shape)
        y = build(x)
        with fb.Session() as s:
            got = s.run(y, {x: V})
            np.testing.assert_allclose(got, want(), rtol=1e-10, atol=1e-10)
            assert y.shape.as_list() == list(got.shape)
            err = compute_gradient_error(x, V.shape, y, got.shape, x_init_value=V, session=s)
    assert err < 1e-6


def test_3d_layers_name_their_variables_as_tensorflow():
    with fb.Graph().as_default(), fb.Session() as s:
        x = fb.constant(V, fb.float32)
        y = fb.layers.conv3d(
            x, 4, [3, 2, 3], padding="same", kernel_initializer=fb.constant_initializer(F)
        )
        z = fb.layers.MaxPooling3D(2, 2, padding="same")(fb.layers.Conv3D(2, 1, name="proj")(y))
        p = fb.layers.average_pooling3d(x, [1, 2, 2], [1, 2, 2])
        names = [v.name for v in fb.global_variables()]
        assert names == ["conv3d/kernel:0", "conv3d/bias:0", "proj/kernel:0", "proj/bias:0"]
        assert z.shape.as_list() == [2, 3, 2, 3, 2]
        s.run(fb.global_variables_initializer())
        got_y, got_p = s.run([y, p])
    np.testing.assert_allclose(got_y, _np_conv3d(V, F, (1, 1, 1), "SAME"), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        got_p, _np_pool3d(V, (1, 2, 2), (1, 2, 2), "VALID", "avg"), rtol=1e-5
    )
    with fb.Graph().as_default(), pytest.raises(ValueError, match="known depth"):
        fb.nn.max_pool3d(fb.placeholder(fb.float32, [1, None, 2, 2, 1]), [1] * 5, [1] * 5, "SAME")
