"""The Vega, Vega-Lite and Vega-Embed JavaScript, offline: vl-convert-python ships all three
(bundled with their dependencies) inside its wheel, so the page needs no network and the build
needs no npm. The same package renders the PNG/SVG exports (`export.py`).

Bundling takes ~1.3 s, so the bundle is kept in the user's cache folder, one file per
vl-convert and Vega-Lite version (written atomically; an unwritable cache is just skipped)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import altair as alt
import vl_convert

from .. import atomic
from ..cachedir import cache_dir
from ..errors import TrnprofError


@functools.cache
def vegalite_version() -> str:
    """The Vega-Lite version Altair writes specs for, as vl-convert names it ('6.4')."""
    wanted = ".".join(alt.VEGALITE_VERSION.split(".")[:2])
    if wanted not in vl_convert.get_vegalite_versions():
        raise TrnprofError(f"vl-convert-python {vl_convert.__version__} cannot render Vega-Lite {wanted} "
                           f"(Altair {alt.__version__}): upgrade vl-convert-python")
    return wanted


def _cached(path: Path, make) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = make()
    try:
        atomic.write_text(path, text)
    except TrnprofError:
        pass  # a cache: the next run makes it again
    return text


@functools.cache
def javascript_bundle() -> str:
    """One script defining window.vegaEmbed, window.vegaLite and window.vega."""
    version = vegalite_version()
    path = cache_dir() / f"vega-bundle-vlconvert{vl_convert.__version__}-vl{version}.js"
    bundle = _cached(path, lambda: vl_convert.javascript_bundle(vl_version=version))
    # inlined in <script>: the text must not close the element early
    if re.search(r"</script", bundle, re.IGNORECASE):
        raise TrnprofError("the Vega JavaScript bundle contains '</script' and cannot be inlined")
    return bundle
