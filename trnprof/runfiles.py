"""The names that make a folder a run, in a module that imports nothing: `trnprof.api.ahead`
asks whether a path is a run before the command's libraries load."""

from __future__ import annotations

FORMAT_NAME = "trnprof.run"
SCHEMA_VERSION = 1
MANIFEST_FILE = "trnprof.json"
