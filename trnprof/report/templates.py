"""The page's HTML comes from the Jinja2 templates of `templates/`, autoescaped: every value a
template prints is HTML-escaped unless it is already `Markup` (a rendered fragment, the
script-safe JSON of a chart, the inlined JavaScript)."""

from __future__ import annotations

from functools import lru_cache

import jinja2
from markupsafe import Markup

from ..textfmt import cost
from .format import duration, index_list, job_value, share


def _evidence_columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for row in rows for k in row))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("trnprof.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters.update(
        cost=cost,
        duration=duration,
        share=share,
        job_value=job_value,
        index_list=index_list,
        evidence_columns=_evidence_columns,
    )
    return env


def render(name: str, **context) -> Markup:
    """Template `name` rendered with `context`: escaped HTML, safe to place in another template."""
    return Markup(environment().get_template(name).render(**context))


def style() -> Markup:
    return Markup(environment().loader.get_source(environment(), "style.css")[0])
