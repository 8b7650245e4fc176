"""`--png DIR`: each chart as PNG (2x, for tickets) and SVG (for docs), rendered offline by
vl-convert from the same spec the page embeds. All or nothing: every chart is rendered before
any file is written, each file is written under a temporary name and renamed, and a failure
removes what this export had written."""

from __future__ import annotations

from pathlib import Path

import vl_convert

from .. import atomic
from ..errors import TrnprofError
from . import vega

PNG_SCALE = 2


def _render(specs: dict[str, dict]) -> dict[str, bytes]:
    version = vega.vegalite_version()
    files = {}
    for name, spec in specs.items():
        try:
            files[f"{name}.png"] = vl_convert.vegalite_to_png(spec, vl_version=version, scale=PNG_SCALE)
            files[f"{name}.svg"] = vl_convert.vegalite_to_svg(spec, vl_version=version).encode()
        except (ValueError, RuntimeError) as exc:
            raise TrnprofError(
                f"cannot render chart {name}: {str(exc).splitlines()[0]}; no chart was written"
            ) from None
    return files


def export_charts(specs: dict[str, dict], folder: str | Path) -> list[Path]:
    """Write `<id>.png` and `<id>.svg` for every chart; returns the paths written."""
    folder = Path(folder)
    files = _render(specs)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TrnprofError(f"cannot create the chart folder {folder}: {exc.strerror}") from None
    written: list[Path] = []
    try:
        for name, data in files.items():
            written.append(atomic.write_bytes(folder / name, data))
    except TrnprofError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        raise TrnprofError(f"{exc}; no chart was kept") from None
    return written
