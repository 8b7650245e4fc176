"""`--config FILE`: analyze options kept in a YAML file, merged under the command line's."""

from __future__ import annotations

from pathlib import Path

import msgspec

from trnprof import yamlio
from trnprof.errors import TrnprofError
from trnprof.readfile import read_text
from trnprof.validation import TIMEOUT_S, dotted, explain

from .sandbox import parse_size
from .spec import ConfigFile


def read_config(path: str | Path | ConfigFile) -> ConfigFile:
    """The config file's options; `rules` folders are made relative to the file. A file read
    already (the CLI reads it once, for the engine) is returned as it is."""
    if isinstance(path, ConfigFile):
        return path
    path = Path(path)
    try:
        raw = yamlio.load(read_text(path, "config")) or {}
    except yamlio.YAMLError as exc:
        raise TrnprofError(f"config {path}: {yamlio.describe_error(exc)}") from None
    try:
        config = msgspec.convert(raw, ConfigFile)
    except msgspec.ValidationError as exc:
        where, problem = explain(exc)
        raise TrnprofError(
            f"config {path}: {dotted(where) or 'file'}: {problem} "
            "(keys: rules, select, ignore, set, timeout, memory_limit, fail_on, engine, spark_master, spark)"
        ) from None
    if config.timeout is not None:
        config.timeout = TIMEOUT_S.check(config.timeout, f"config {path}: timeout")
    if config.memory_limit is not None:
        try:
            parse_size(config.memory_limit)
        except TrnprofError as exc:
            raise TrnprofError(f"config {path}: {exc}") from None
    config.rules = [str((path.parent / folder).resolve()) for folder in config.rules]
    return config
