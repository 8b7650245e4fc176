"""Escaping of JSON inside <script> (HTML text is escaped by the autoescaping templates)."""

from __future__ import annotations

import json

# In JSON these characters only occur inside strings, where the \u form means the same; escaped,
# no trace string can close the <script> element (</script>), open a comment or an entity, or
# end a JavaScript line (U+2028/9).
_JSON_IN_SCRIPT = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_for_script(document) -> str:
    """`document` as JSON safe inside <script type="application/json">; NaN is refused."""
    encoded = json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return encoded.translate(_JSON_IN_SCRIPT)
