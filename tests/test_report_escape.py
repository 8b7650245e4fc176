"""Escaping: what a trace string becomes in HTML text and in JSON inside <script>."""

from __future__ import annotations

import html
import json

from hypothesis import given, strategies as st

from trnprof.report.escape import json_for_script, text

HOSTILE = ["<script>alert(1)</script>", "</script><img src=x onerror=alert(1)>", "it's \"quoted\" & <b>",
           "<!-- x", "\u2028line\u2029sep"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12)


@given(json_values)
def test_json_for_script_round_trips_and_never_holds_markup(value):
    encoded = json_for_script(value)
    assert json.loads(encoded) == value
    assert not set("<>&\u2028\u2029") & set(encoded)


def test_json_for_script_escapes_hostile_strings():
    encoded = json_for_script({"names": HOSTILE})
    assert "</script" not in encoded.lower() and "<img" not in encoded
    assert json.loads(encoded) == {"names": HOSTILE}


def test_json_for_script_refuses_nan():
    try:
        json_for_script({"x": float("nan")})
    except ValueError:
        return
    raise AssertionError("NaN was encoded")


@given(st.text())
def test_text_is_inert_html(value):
    escaped = text(value)
    assert not set("<>\"'") & set(escaped)
    assert html.unescape(escaped) == value


def test_text_of_none_and_numbers():
    assert text(None) == "" and text(3) == "3"
