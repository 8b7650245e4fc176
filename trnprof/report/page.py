"""Page assembly: one HTML file holding the styles, the Vega libraries, every chart's spec (data
inline) and the script that embeds them, from the autoescaping Jinja2 template `page.html.j2`.
Trace strings reach the page only escaped (the templates; `escape.json_for_script` in <script>);
a Content-Security-Policy allows exactly the page's own two scripts (by hash) and no network
source, so even a missed escape could neither run nor load anything."""

from __future__ import annotations

import base64
import hashlib

from markupsafe import Markup

from . import templates, vega
from .escape import json_for_script
from .section import Section

EMBED_OPTIONS = {"renderer": "canvas", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}

# Embeds every spec; window.trnprofReady resolves when all charts are drawn (or failed, each
# failure written as text into its chart's box and to the console).
EMBED_SCRIPT = """
(function () {
  "use strict";
  var options = %s;
  var specs = document.querySelectorAll("script.vega-spec");
  window.trnprofViews = {};
  window.trnprofReady = Promise.all(Array.prototype.map.call(specs, function (el) {
    var target = document.getElementById(el.getAttribute("data-target"));
    return vegaEmbed(target, JSON.parse(el.textContent), options).then(function (result) {
      window.trnprofViews[target.id] = result.view;
    }, function (error) {
      target.textContent = "This chart failed to render: " + error;
      console.error(error);
    });
  })).then(function () { return Object.keys(window.trnprofViews).length; });
})();
"""


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def render(title: str, subtitle: str, sections: list[Section], specs: dict[str, dict], footer: str) -> str:
    """The whole page as one string (template `page.html.j2`)."""
    bundle = vega.javascript_bundle()
    embed = EMBED_SCRIPT % json_for_script(EMBED_OPTIONS)
    # 'unsafe-eval': Vega compiles its expressions with Function(); nothing else may run or load
    csp = (
        f"default-src 'none'; script-src {_csp_hash(bundle)} {_csp_hash(embed)} 'unsafe-eval'; "
        "style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'"
    )
    # the scripts are trusted as they are (their hashes are in the CSP); chart specs are JSON
    # made inert for <script> by json_for_script; everything else the template escapes
    return (
        templates.render(
            "page.html.j2",
            title=title,
            subtitle=subtitle,
            footer=footer,
            csp=csp,
            style=templates.style(),
            bundle=Markup(bundle),
            embed=Markup(embed),
            sections=sections,
            specs={k: Markup(json_for_script(v)) for k, v in specs.items()},
        )
        + "\n"
    )
