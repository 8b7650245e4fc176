"""Escaping: what a trace string becomes in JSON inside <script> and, through the autoescaping
templates, in HTML text."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from trnprof.report.escape import json_for_script

HOSTILE = [
    "<script>alert(1)</script>",
    "</script><img src=x onerror=alert(1)>",
    'it\'s "quoted" & <b>',
    "<!-- x",
    "\u2028line\u2029sep",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


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


def test_templates_escape_every_value():
    from trnprof.report import templates

    for value in HOSTILE:
        html_text = str(templates.render("findings.html.j2", document=_document(value)))
        assert "<script>" not in html_text and "<img" not in html_text and "<!-- x" not in html_text


def _document(value):
    from trnprof.rules_engine.document import SCHEMA, Document, Finding, Impact, NotEvaluated

    finding = Finding(
        code="IN001",
        name="input.starvation",
        pack="input",
        severity="high",
        title=value,
        message=value,
        recommendation=value,
        ranks=[0],
        steps=[1],
        impact=Impact(0.1, 0.2),
        evidence=[{value: value}],
    )
    return Document(
        schema=SCHEMA,
        run=value,
        findings=[finding],
        not_evaluated=[NotEvaluated(value, value, "X")],
        errors=[],
        rules=[],
        steps=1,
        warmup_steps=[],
        mean_step_s=None,
        seconds=0.0,
        rule_seconds={},
    )
