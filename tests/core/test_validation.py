"""The one YAML reader and the one reading of msgspec's validation errors."""

from __future__ import annotations

import msgspec
import pytest

from trnprof import yamlio
from trnprof.validation import dotted, explain


class Inner(msgspec.Struct, forbid_unknown_fields=True):
    value: float


class Outer(msgspec.Struct):
    items: list[Inner]


def test_yaml_12_numbers():
    assert yamlio.load("a: 1e7\nb: 95.0e12\nc: 1_000\nd: 0.5") == {"a": 1e7, "b": 95e12, "c": 1000, "d": 0.5}


def test_yaml_error_is_one_line_with_where():
    with pytest.raises(yamlio.YAMLError) as error:
        yamlio.load("a: [1, 2\nb: 3")
    text = yamlio.describe_error(error.value)
    assert text.startswith("line ") and "not valid YAML" in text and "\n" not in text


@pytest.mark.parametrize(
    "data, path, problem",
    [
        ({"items": [{"value": 1.0}, {"value": "x"}]}, "items[1].value", "Expected `float`, got `str`"),
        ({"items": [{"value": 1.0, "extra": 2}]}, "items[0]", "Object contains unknown field `extra`"),
        ({"items": [{}]}, "items[0]", "Object missing required field `value`"),
        ([], "", "Expected `object`, got `array`"),
    ],
)
def test_explain_names_the_field_and_the_problem(data, path, problem):
    with pytest.raises(msgspec.ValidationError) as error:
        msgspec.convert(data, Outer)
    where, text = explain(error.value)
    assert dotted(where) == path and text == problem


# ---- numbers: finite and in their documented range, or one error line

from trnprof.errors import TrnprofError  # noqa: E402
from trnprof.validation import MEMORY_BYTES, SCALE_FACTOR, THREADS, TIMEOUT_S  # noqa: E402


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-inf", float("nan"), float("inf"), 0, -5, "1e308", 86_401, "abc", "", True, None, 10**400]
)
def test_a_timeout_out_of_range_is_one_error_line(value):
    with pytest.raises(TrnprofError) as error:
        TIMEOUT_S.check(value, "--timeout")
    assert str(error.value).startswith("--timeout ") and "\n" not in str(error.value)
    assert ">= 0.001 and <= 86400" in str(error.value)


@pytest.mark.parametrize("value, number", [("60", 60.0), (0.001, 0.001), (86_400, 86_400.0), (" 2.5 ", 2.5)])
def test_a_timeout_in_range_is_its_number(value, number):
    assert TIMEOUT_S.check(value, "--timeout") == number


def test_integer_ranges_refuse_fractions_and_nan():
    assert THREADS.check("4", "--threads") == 4
    for value in ("1.5", "nan", "0", "1025", "99999999999"):
        with pytest.raises(TrnprofError, match="not an integer >= 1 and <= 1024"):
            THREADS.check(value, "--threads")


def test_the_ranges_are_finite():
    for allowed in (TIMEOUT_S, THREADS, MEMORY_BYTES, SCALE_FACTOR):
        assert not allowed.contains(float("nan")) and not allowed.contains(float("inf"))
        assert allowed.contains(allowed.low) and allowed.contains(allowed.high)
        assert not allowed.contains(allowed.high * 1.001 + 1)
