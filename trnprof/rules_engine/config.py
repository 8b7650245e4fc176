"""`--config FILE`: analyze options kept in a YAML file, merged under the command line's."""

from __future__ import annotations

from pathlib import Path

import msgspec
import yaml

from trnprof.errors import TrnprofError

from . import yamlio
from .spec import ConfigFile


def read_config(path: str | Path) -> ConfigFile:
    """The config file's options; `rules` folders are made relative to the file."""
    path = Path(path)
    try:
        raw = yamlio.load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise TrnprofError(f"config {path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TrnprofError(f"config {path}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    try:
        config = msgspec.convert(raw, ConfigFile)
    except msgspec.ValidationError as exc:
        raise TrnprofError(f"config {path}: {exc} (keys: rules, select, ignore, set, timeout, memory_limit, fail_on)") from None
    config.rules = [str((path.parent / folder).resolve()) for folder in config.rules]
    return config
