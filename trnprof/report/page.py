"""Page assembly: one HTML file holding the styles, the Vega libraries, every chart's spec (data
inline) and the script that embeds them. Trace strings reach the page only escaped (`escape.py`);
a Content-Security-Policy allows exactly the page's own two scripts (by hash) and no network
source, so even a missed escape could neither run nor load anything."""

from __future__ import annotations

import base64
import hashlib

from . import vega
from .escape import json_for_script, text
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

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 0; color: #1d1d1f; background: #f6f7f9; }
header.page { background: #232f3e; color: #fff; padding: 18px 32px; }
header.page h1 { margin: 0; font-size: 22px; }
header.page p { margin: 4px 0 0; color: #c9d1d9; }
nav { position: sticky; top: 0; background: #fff; border-bottom: 1px solid #dde; padding: 8px 32px; z-index: 5; }
nav a { margin-right: 16px; color: #0b5cad; text-decoration: none; }
main { padding: 8px 32px 32px; max-width: 1180px; }
section { background: #fff; border: 1px solid #e3e5e8; border-radius: 6px; padding: 16px 20px; margin: 16px 0; }
h2 { margin: 0 0 6px; font-size: 18px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
p.intro { margin: 0 0 10px; color: #444; }
p.empty { color: #666; font-style: italic; }
p.note { color: #7a5b00; background: #fff8e1; padding: 4px 8px; border-radius: 4px; font-size: 13px; }
p.muted { color: #666; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(240px, 1fr)); gap: 6px 20px; margin: 0; }
dl.facts div { border-left: 3px solid #dde; padding-left: 8px; }
dt { color: #666; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #e3e5e8; padding: 6px 8px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f0f2f5; }
td.num { text-align: right; white-space: nowrap; }
td.sevcell { white-space: nowrap; }
td.idx { min-width: 64px; max-width: 160px; }
td p { margin: 4px 0; }
code { font-size: 12px; color: #555; }
details summary { cursor: pointer; color: #0b5cad; margin: 4px 0; }
.sev { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; background: #888; }
.sev-high { background: #c62828; } .sev-medium { background: #ef6c00; } .sev-low { background: #546e7a; }
ol.top-findings li { margin: 4px 0; }
.impact { color: #555; }
.chart { overflow-x: auto; }
footer { color: #777; font-size: 12px; padding: 0 32px 24px; }
"""


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def _section(section: Section, spec: dict | None) -> str:
    parts = [f'<section id="{text(section.id)}"><h2>{text(section.title)}</h2>']
    if section.intro:
        parts.append(f'<p class="intro">{text(section.intro)}</p>')
    if section.empty:
        parts.append(f'<p class="empty">{text(section.empty)}</p>')
    if spec is not None:
        target = f"chart-{section.id}"
        parts.append(f'<div class="chart" id="{text(target)}"></div>'
                     f'<script type="application/json" class="vega-spec" data-target="{text(target)}">'
                     f"{json_for_script(spec)}</script>")
    parts += [f'<p class="empty">{text(gap)}</p>' for gap in section.gaps]
    parts.append(section.html)
    if section.notes:
        parts.append(f'<p class="note">Aggregated or sampled: {text("; ".join(section.notes))}.</p>')
    parts.append("</section>")
    return "".join(parts)


def render(title: str, subtitle: str, sections: list[Section], specs: dict[str, dict], footer: str) -> str:
    """The whole page as one string."""
    bundle = vega.javascript_bundle()
    embed = EMBED_SCRIPT % json_for_script(EMBED_OPTIONS)
    # 'unsafe-eval': Vega compiles its expressions with Function(); nothing else may run or load
    csp = (f"default-src 'none'; script-src {_csp_hash(bundle)} {_csp_hash(embed)} 'unsafe-eval'; "
           "style-src 'unsafe-inline'; img-src data: blob:; base-uri 'none'; form-action 'none'")
    nav = "".join(f'<a href="#{text(s.id)}">{text(s.title)}</a>' for s in sections)
    body = "".join(_section(s, specs.get(s.id)) for s in sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{text(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{STYLE}</style>"
        f"<script>{bundle}</script></head><body>"
        f'<header class="page"><h1>{text(title)}</h1><p>{text(subtitle)}</p></header>'
        f"<nav>{nav}</nav><main>{body}</main><footer>{text(footer)}</footer>"
        f"<script>{embed}</script></body></html>\n")
