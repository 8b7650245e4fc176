"""A section of the page: a heading, a one-line description, and a chart, an HTML block or the
one line saying why there is nothing to draw."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Section:
    id: str  # HTML id and the file name of its PNG/SVG export
    title: str
    intro: str = ""  # plain text: what the section shows
    chart: object | None = None  # an Altair chart
    html: str = ""  # HTML rendered from a template (Markup); plain str is escaped
    notes: list[str] = field(default_factory=list)  # plain text: what was aggregated or sampled
    gaps: list[str] = field(default_factory=list)  # plain text: parts not drawn for want of data
    empty: str | None = None  # plain text: why the section has no data
