"""The one YAML reader: safe loading with YAML 1.2 numbers (PyYAML follows YAML 1.1, which reads
`1e7` or `95.0e12` as strings, where authors of rules, configs and presets mean floats)."""

from __future__ import annotations

import re

import yaml

YAMLError = yaml.YAMLError


class Loader(yaml.SafeLoader):
    pass


Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                   |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                   |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                   |[-+]?\.(?:inf|Inf|INF)
                   |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."))


def load(text: str):
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass


def describe_error(exc: yaml.YAMLError) -> str:
    """A YAML syntax error in one line: where and what."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark else "file"
    return f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc} (check indentation and quoting)"
