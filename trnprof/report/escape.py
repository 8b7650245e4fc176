"""Escaping for the two places trace strings reach the page: HTML text and JSON in <script>."""

from __future__ import annotations

import html
import json

# In JSON these characters only occur inside strings, where the \u form means the same; escaped,
# no trace string can close the <script> element (</script>), open a comment or an entity, or
# end a JavaScript line (U+2028/9).
_JSON_IN_SCRIPT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                  "\u2028": "\\u2028", "\u2029": "\\u2029"})


def text(value) -> str:
    """Any value as HTML text (element content or a quoted attribute value)."""
    return html.escape("" if value is None else str(value), quote=True)


def json_for_script(document) -> str:
    """`document` as JSON safe inside <script type="application/json">; NaN is refused."""
    encoded = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return encoded.translate(_JSON_IN_SCRIPT)
