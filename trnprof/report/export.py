"""`--png DIR`: each chart as PNG (2x, for tickets) and SVG (for docs), rendered offline by
vl-convert from the same spec the page embeds."""

from __future__ import annotations

from pathlib import Path

import vl_convert

from ..errors import TrnprofError
from . import vega

PNG_SCALE = 2


def export_charts(specs: dict[str, dict], folder: str | Path) -> list[Path]:
    """Write `<id>.png` and `<id>.svg` for every chart; returns the paths written."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrnprofError(f"cannot create the chart folder {folder}: {exc.strerror}") from None
    version = vega.vegalite_version()
    written = []
    for name, spec in specs.items():
        try:
            png = vl_convert.vegalite_to_png(spec, vl_version=version, scale=PNG_SCALE)
            svg = vl_convert.vegalite_to_svg(spec, vl_version=version)
        except ValueError as exc:
            raise TrnprofError(f"cannot render chart {name}: {str(exc).splitlines()[0]}") from None
        for suffix, data in ((".png", png), (".svg", svg.encode())):
            path = folder / f"{name}{suffix}"
            path.write_bytes(data)
            written.append(path)
    return written
