"""The one YAML reader: safe loading with YAML 1.2 numbers (PyYAML follows YAML 1.1, which reads
`1e7` or `95.0e12` as strings, where authors of rules, configs and presets mean floats), a bound
on what aliases expand to (a "billion laughs" file is one error, not exhausted memory). Files
are read by `trnprof.readfile` (UTF-8, one error line)."""

from __future__ import annotations

import re

import yaml

YAMLError = yaml.YAMLError
MAX_NODES = 100_000  # values in a document with every alias expanded: far above any config or rule


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser when PyYAML has it (about 10x faster: the rule packs load on every
    `trnprof analyze`), the same resolvers and constructors either way."""


Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                   |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                   |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                   |[-+]?\.(?:inf|Inf|INF)
                   |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


class ExpansionError(yaml.YAMLError):
    """A document whose aliases expand beyond MAX_NODES values."""

    def __init__(self, nodes: int):
        super().__init__()
        self.problem = (
            f"its aliases (*name) expand to more than {MAX_NODES:,} values "
            f"({nodes:,} counted so far); write the values out or use fewer aliases"
        )

    def __str__(self) -> str:
        return self.problem


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """Values under `node` with every alias expanded, counted on the node graph (each shared
    node once, so this is linear in the file however far it would expand)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 1  # a recursive alias counts once
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    else:
        size = 1
    sizes[id(node)] = min(size, MAX_NODES + 1)
    return sizes[id(node)]


def load(text: str):
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text:  # aliases need an anchor: without one, nothing expands beyond the text itself
            size = _expanded_size(node, {})
            if size > MAX_NODES:
                raise ExpansionError(size)
        try:
            return loader.construct_document(node)
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            raise yaml.constructor.ConstructorError(
                None, None, f"a value cannot be read ({str(exc).split(':')[0][:100]})", node.start_mark
            ) from None
    finally:
        loader.dispose()


def describe_error(exc: yaml.YAMLError) -> str:
    """A YAML syntax error in one line: where and what."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}" if mark else "file"
    problem = str(getattr(exc, "problem", None) or exc).splitlines()[0][:200]
    return f"{where}: not valid YAML: {problem} (check indentation and quoting)"
