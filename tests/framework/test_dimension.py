"""Dimension and TensorShape behave as TF1's: every expected value below is TF's answer."""

from __future__ import annotations

import pytest

from flowbook.framework.tensor_shape import Dimension as D
from flowbook.framework.tensor_shape import TensorShape as TS
from flowbook.framework.tensor_shape import as_dimension

S = TS([None, 7, 7, 64])

# (expression, TF1's value), evaluated with D, TS, S and as_dimension in scope
SAME_AS_TF = [
    ("S[1] * S[2]", D(49)),
    ("S[0] * S[1]", D(None)),
    ("D(None) * 3", D(None)),
    ("3 * D(4)", D(12)),
    ("D(7) + 1", D(8)),
    ("1 + D(7)", D(8)),
    ("D(7) - 2", D(5)),
    ("10 - D(7)", D(3)),
    ("D(7) // 2", D(3)),
    ("17 // D(5)", D(3)),
    ("D(7) % 3", D(1)),
    ("17 % D(5)", D(2)),
    ("D(None) // 2", D(None)),
    ("D(2) * D(3)", D(6)),
    ("D(3) - D(None)", D(None)),
    ("D(3) + None", D(None)),
    ("D(6) // D(None)", D(None)),
    ("D(6) % None", D(None)),
    ("D(3) < 4", True),
    ("D(3) < D(None)", None),
    ("D(3) <= 3", True),
    ("D(3) > 2", True),
    ("D(3) >= D(4)", False),
    ("D(3) == 3", True),
    ("D(3) == D(None)", None),
    ("D(3) != 4", True),
    ("D(None) != 3", None),
    ("D(3) == None", None),
    ("D(3) < None", None),
    ("D(3) == 'a'", False),
    ("D(3) == 3.0", False),
    ("D(3).value", 3),
    ("D(None).value", None),
    ("D(3).merge_with(3)", D(3)),
    ("D(None).merge_with(4)", D(4)),
    ("D(3).is_compatible_with(D(None))", True),
    ("D(3).is_compatible_with(4)", False),
    ("as_dimension(3)", D(3)),
    ("as_dimension(D(None))", D(None)),
    ("as_dimension(None)", D(None)),
    ("int(D(3))", 3),
    ("D(3).__index__()", 3),
    ("list(range(5))[D(2)]", 2),
    ("bool(D(0))", False),
    ("str(D(None))", "?"),
    ("repr(D(None))", "Dimension(None)"),
    ("S.as_list()", [None, 7, 7, 64]),
    ("S.merge_with([1, None, None, None]).as_list()", [1, 7, 7, 64]),
    ("S.concatenate([3]).as_list()", [None, 7, 7, 64, 3]),
    ("S.concatenate(TS(None)).ndims", None),
    ("S[1:]", TS([7, 7, 64])),
    ("S[1:].num_elements()", 3136),
    ("S[1]", D(7)),
    ("S[-1]", D(64)),
    ("TS(None)[1:].ndims", None),
    ("TS(None)[0]", D(None)),
    ("S.num_elements()", None),
    ("TS([2, 3]).num_elements()", 6),
    ("TS(None).num_elements()", None),
    ("S.is_fully_defined()", False),
    ("S.assert_has_rank(4)", None),
    ("S.with_rank(4).as_list()", [None, 7, 7, 64]),
    ("TS(None).with_rank(2).as_list()", [None, None]),
    ("S.ndims", 4),
    ("TS(None).ndims", None),
    ("S.dims", [D(None), D(7), D(7), D(64)]),
    ("TS(None).dims", None),
    ("S == TS([None, 7, 7, 64])", True),
    ("S == [None, 7, 7, 64]", True),
    ("TS([1, 2]) == (1, 2)", True),
    ("TS(None) == TS(None)", True),
    ("TS([1]) == TS(None)", False),
    ("S != S", False),
    ("TS([1, 2]) != [1, 3]", True),
    ("TS([1, 2]) == 'x'", False),
    ("TS([1, 2]).with_rank_at_least(1).as_list()", [1, 2]),
    ("TS([1, 2]).most_specific_compatible_shape([1, 3]).as_list()", [1, None]),
    ("TS([1, 2]).is_compatible_with([None, 2])", True),
    ("TS([1, 2]).is_compatible_with(TS(None))", True),
    ("len(S)", 4),
    ("str(S)", "(?, 7, 7, 64)"),
    ("repr(S)", "TensorShape([Dimension(None), Dimension(7), Dimension(7), Dimension(64)])"),
    ("str(TS([3]))", "(3,)"),
    ("(TS([1, 2]) + [3]).as_list()", [1, 2, 3]),
    ("([3] + TS([1, 2])).as_list()", [3, 1, 2]),
    ("bool(TS([]))", True),
    ("bool(TS(None))", False),
    ("TS(3).as_list()", [3]),
    ("TS([D(3), None]).as_list()", [3, None]),
    ("S.assert_same_rank([1, 2, 3, 4])", None),
    ("TS([1, 2]).assert_is_fully_defined()", None),
    ("type(TS([1, 2]).as_list()[0])", int),
    ("[d.value for d in S]", [None, 7, 7, 64]),
]

# (expression, TF1's exception and the start of its message)
RAISES_AS_TF = [
    ("D(7) / 2", TypeError, "unsupported operand type(s) for /"),
    ("D(3).merge_with(4)", ValueError, "Dimensions 3 and 4 are not compatible"),
    ("D(3).assert_is_compatible_with(4)", ValueError, "Dimensions 3 and 4 are not compatible"),
    ("int(D(None))", TypeError, ""),
    ("D(-1)", ValueError, "Dimension -1 must be >= 0"),
    ("D(3.5)", TypeError, "Dimension value must be integer or None"),
    ("D('3')", TypeError, "Dimension value must be integer or None"),
    ("-D(3)", TypeError, "bad operand type"),
    ("D(3) ** 2", TypeError, "unsupported operand"),
    ("D(6) * 2.5", TypeError, "unsupported operand"),
    ("S.merge_with([1, 2, 7, 64])", ValueError, "Shapes (?, 7, 7, 64) and (1, 2, 7, 64) are not"),
    ("S.assert_has_rank(3)", ValueError, "Shape (?, 7, 7, 64) must have rank 3"),
    ("S.with_rank(3)", ValueError, "Shape (?, 7, 7, 64) must have rank 3"),
    ("TS([1, 2]).with_rank_at_least(3)", ValueError, "Shape (1, 2) must have rank at least 3"),
    ("TS([1, 2]).with_rank_at_most(1)", ValueError, "Shape (1, 2) must have rank at most 1"),
    ("S.assert_same_rank([1])", ValueError, "Shapes (?, 7, 7, 64) and (1,) must have the same"),
    ("S.assert_is_fully_defined()", ValueError, "Shape (?, 7, 7, 64) is not fully defined"),
    ("TS([2]).merge_with([3])", ValueError, "Shapes (2,) and (3,) are not compatible"),
]

SCOPE = {"D": D, "TS": TS, "S": S, "as_dimension": as_dimension}


@pytest.mark.parametrize(("expr", "expected"), SAME_AS_TF, ids=[e for e, _ in SAME_AS_TF])
def test_same_as_tf(expr, expected):
    got = eval(expr, dict(SCOPE))
    assert type(got) is type(expected)
    if isinstance(expected, D):
        assert got.value == expected.value
    elif isinstance(expected, list) and expected and isinstance(expected[0], D):
        assert [d.value for d in got] == [d.value for d in expected]
    elif isinstance(expected, TS):
        assert got.as_list() == expected.as_list()
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("expr", "error", "message"), RAISES_AS_TF, ids=[e for e, *_ in RAISES_AS_TF]
)
def test_raises_as_tf(expr, error, message):
    with pytest.raises(error) as info:
        eval(expr, dict(SCOPE))
    assert str(info.value).startswith(message)


def test_flatten_size_of_a_conv_output_builds_a_reshape():
    import flowbook as tf

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 7, 7, 64])
        shape = x.get_shape()
        flat = tf.reshape(x, [-1, shape[1] * shape[2] * shape[3]])
        assert flat.get_shape().as_list() == [None, 3136]
