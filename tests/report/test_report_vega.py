"""The offline Vega JavaScript: from vl-convert-python, for Altair's Vega-Lite version, kept in
the user's cache folder."""

from __future__ import annotations

import altair as alt
import pytest
import vl_convert

from trnprof import cachedir
from trnprof.errors import TrnprofError
from trnprof.report import vega


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    vega.javascript_bundle.cache_clear()
    vega.vegalite_version.cache_clear()
    yield tmp_path
    vega.javascript_bundle.cache_clear()
    vega.vegalite_version.cache_clear()


def test_bundle_is_cached_per_version(fresh, monkeypatch):
    bundle = vega.javascript_bundle()
    assert "vegaEmbed" in bundle and "</script" not in bundle.lower()
    cached = sorted((fresh / "trnprof").iterdir())
    assert [p.name for p in cached] == [
        cachedir.SECRET_FILE,
        f"vega-bundle-signed-vlconvert{vl_convert.__version__}-vl{vega.vegalite_version()}.js",
    ]
    assert cached[1].read_bytes()[32:] == bundle.encode()  # after its HMAC
    vega.javascript_bundle.cache_clear()
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda **_: pytest.fail("bundled again"))
    assert vega.javascript_bundle() == bundle


def test_unwritable_cache_is_skipped(fresh):
    (fresh / "trnprof").write_text("a file where the folder should be")
    assert "vegaEmbed" in vega.javascript_bundle()


def test_a_vega_lite_version_vl_convert_lacks_is_one_clear_error(fresh, monkeypatch):
    monkeypatch.setattr(alt, "VEGALITE_VERSION", "99.1.0")
    with pytest.raises(TrnprofError, match="cannot render Vega-Lite 99.1"):
        vega.vegalite_version()
