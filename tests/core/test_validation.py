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


@pytest.mark.parametrize("data, path, problem", [
    ({"items": [{"value": 1.0}, {"value": "x"}]}, "items[1].value", "Expected `float`, got `str`"),
    ({"items": [{"value": 1.0, "extra": 2}]}, "items[0]", "Object contains unknown field `extra`"),
    ({"items": [{}]}, "items[0]", "Object missing required field `value`"),
    ([], "", "Expected `object`, got `array`"),
])
def test_explain_names_the_field_and_the_problem(data, path, problem):
    with pytest.raises(msgspec.ValidationError) as error:
        msgspec.convert(data, Outer)
    where, text = explain(error.value)
    assert dotted(where) == path and text == problem
