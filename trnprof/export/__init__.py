"""Runs -> other tools' formats. `chrome`: Chrome trace JSON for Perfetto UI / chrome://tracing."""

from .chrome import export_chrome

FORMATS = {"chrome": export_chrome}

__all__ = ["FORMATS", "export_chrome"]
