"""The Vega, Vega-Lite and Vega-Embed JavaScript, offline: vl-convert-python ships all three
(bundled with their dependencies) inside its wheel, so the page needs no network and the build
needs no npm. The same package renders the PNG/SVG exports (`export.py`).

Bundling takes ~1.3 s, so the bundle is kept in the user's cache folder, one file per
vl-convert and Vega-Lite version (written atomically; an unwritable cache is just skipped). The
page inlines it, so an entry is used only when it is a regular file of at most MAX_BUNDLE_BYTES
that carries this installation's HMAC (`cachedir.sign`): a bundle planted by whoever can write
the cache folder is made again, never put in a report."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import altair as alt
import vl_convert

from .. import atomic, cachedir
from ..errors import TrnprofError


@functools.cache
def vegalite_version() -> str:
    """The Vega-Lite version Altair writes specs for, as vl-convert names it ('6.4')."""
    wanted = ".".join(alt.VEGALITE_VERSION.split(".")[:2])
    if wanted not in vl_convert.get_vegalite_versions():
        raise TrnprofError(
            f"vl-convert-python {vl_convert.__version__} cannot render Vega-Lite {wanted} "
            f"(Altair {alt.__version__}): upgrade vl-convert-python"
        )
    return wanted


MAX_BUNDLE_BYTES = 16 * 2**20  # the bundle of vl-convert 1.9 is 0.9 MB


def _cached(path: Path, make) -> str:
    signed = cachedir.read_entry(path, MAX_BUNDLE_BYTES)
    content = cachedir.verified(path.name, signed) if signed is not None else None
    if content is not None:
        try:
            return content.decode("utf-8")
        except UnicodeDecodeError:
            pass
    text = make()
    entry = cachedir.sign(path.name, text.encode("utf-8"))
    try:
        if entry is not None:
            atomic.write_bytes(path, entry)
    except TrnprofError:
        pass  # a cache: the next run makes it again
    return text


@functools.cache
def javascript_bundle() -> str:
    """One script defining window.vegaEmbed, window.vegaLite and window.vega."""
    version = vegalite_version()
    path = cachedir.cache_dir() / f"vega-bundle-signed-vlconvert{vl_convert.__version__}-vl{version}.js"
    bundle = _cached(path, lambda: vl_convert.javascript_bundle(vl_version=version))
    # inlined in <script>: the text must not close the element early
    if re.search(r"</script", bundle, re.IGNORECASE):
        raise TrnprofError("the Vega JavaScript bundle contains '</script' and cannot be inlined")
    return bundle
