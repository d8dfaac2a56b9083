"""Fuzzing the string ops: random patterns, rewrites, texts, base64 and numbers run or are refused.

Patterns are drawn from pieces of regex syntax (RE2's and the Perl extensions
it refuses: backreferences, lookaround, possessive repeats) and from raw bytes;
texts from random bytes and UTF-8.  Every run must return, or raise the op's
``InvalidArgumentError`` or ``ResourceExhaustedError``: never another exception,
and always within the fuzzers' bounds of memory and CPU time (``tests/fuzzing.py``),
so a pattern that backtracks or a result that explodes fails the test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import flowbook as tf
from flowbook.framework.errors import InvalidArgumentError, ResourceExhaustedError
from tests.fuzzing import FUZZ, bounded

pytestmark = pytest.mark.fuzz

_PIECES = [
    "a", "b", "é", ".", "*", "+", "?", "*?", "(", ")", "|", "[", "]", "[^a]", "^", "$", "\\",
    "{", "}", "{2}", "{1,3}", "{1001}", ",", "-", "\\d", "\\w", "\\s", "\\b", "\\1", "(?i)",
    "(?=", "(?<=", "(?P<n>", "\\p{L}", "\\x{FF}", "(a+)+", "[[:alpha:]]", "\\Q", "\\E", "++",
]  # fmt: skip
PATTERNS = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=10).map("".join).map(str.encode),
    st.binary(max_size=8),
)
REWRITES = st.lists(
    st.sampled_from(["x", "", "\\0", "\\1", "\\2", "\\9", "\\\\", "\\", "\\n", "é"]), max_size=5
).map("".join)
TEXTS = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.text(max_size=20).map(str.encode),
        st.builds(
            lambda n, c: c * n, st.integers(0, 3000), st.sampled_from([b"a", b"ab", b"\xc3\xa9"])
        ),
    ),
    max_size=4,
)
BASE64ISH = st.lists(
    st.text(alphabet="ABCYQWab019-_+/= \n", max_size=14).map(str.encode) | st.binary(max_size=10),
    max_size=4,
)
NUMBERISH = st.lists(
    st.text(alphabet="0123456789+-.eExXpPinfaINFA_ ,\t٣", max_size=12).map(str.encode),
    max_size=4,
)
EXPECTED = (InvalidArgumentError, ResourceExhaustedError)


def _strs(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


@pytest.fixture(scope="module")
def graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.string, [None], name="x")
        p = tf.placeholder(tf.string, [], name="p")
        r = tf.placeholder(tf.string, [], name="r")
        d = tf.placeholder(tf.string, [], name="d")
        ops = {
            "replace_all": tf.regex_replace(x, p, r, replace_global=True),
            "replace_first": tf.regex_replace(x, p, r, replace_global=False),
            "decode_base64": tf.decode_base64(x),
            "round_trip": tf.decode_base64(tf.encode_base64(x)),
            "to_float": tf.string_to_number(x, tf.float32),
            "to_int": tf.string_to_number(x, tf.int64),
            "split": tf.string_split(x, d),
            "reduce_join": tf.reduce_join(x, separator=","),
            "join": tf.string_join([x, x], separator="-"),
        }
    sess = tf.Session(graph=g)  # not a `with`: that would keep g the default graph
    yield sess, (x, p, r, d), ops
    sess.close()


def _run_bounded(sess, fetch, feeds, what):
    with bounded(what):
        try:
            return sess.run(fetch, feeds)
        except EXPECTED:
            return None


@FUZZ
@given(TEXTS, PATTERNS, REWRITES, st.booleans())
def test_regex_replace_runs_or_is_refused(graph, texts, pattern, rewrite, replace_global):
    sess, (x, p, r, _), ops = graph
    fetch = ops["replace_all" if replace_global else "replace_first"]
    feeds = {x: _strs(texts), p: pattern, r: rewrite}
    got = _run_bounded(sess, fetch, feeds, f"regex_replace {pattern!r} -> {rewrite!r}")
    assert got is None or got.shape == (len(texts),)


@FUZZ
@given(BASE64ISH)
def test_base64_decodes_or_is_refused(graph, texts):
    sess, (x, *_), ops = graph
    got = _run_bounded(sess, ops["decode_base64"], {x: _strs(texts)}, f"decode_base64 {texts!r}")
    assert got is None or got.shape == (len(texts),)
    back = _run_bounded(sess, ops["round_trip"], {x: _strs(texts)}, "base64 round trip")
    assert back is not None and back.tolist() == texts


@FUZZ
@given(NUMBERISH, st.booleans())
def test_numbers_parse_or_are_refused(graph, texts, floating):
    sess, (x, *_), ops = graph
    fetch = ops["to_float" if floating else "to_int"]
    with np.errstate(all="ignore"):
        got = _run_bounded(sess, fetch, {x: _strs(texts)}, f"string_to_number {texts!r}")
    assert got is None or got.shape == (len(texts),)


@FUZZ
@given(TEXTS, st.binary(max_size=3))
def test_split_and_joins_run_or_are_refused(graph, texts, delimiter):
    sess, (x, _, _, d), ops = graph
    feeds = {x: _strs(texts), d: delimiter}
    fetch = [ops["split"], ops["reduce_join"], ops["join"]]
    got = _run_bounded(sess, fetch, feeds, f"split/join {texts!r} on {delimiter!r}")
    if got is not None:
        split, joined, pairs = got
        assert split.indices.shape == (len(split.values), 2)
        assert joined == b",".join(texts)
        assert pairs.tolist() == [t + b"-" + t for t in texts]
