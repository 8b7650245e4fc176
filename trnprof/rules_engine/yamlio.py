"""YAML reading with YAML 1.2 numbers: PyYAML (YAML 1.1) reads `1e7` or `95.0e12` as strings,
which rule authors mean as floats."""

from __future__ import annotations

import re

import yaml


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
