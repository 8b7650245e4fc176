"""Every fact in one module, checked on the source: hardware peaks only in trnprof/hardware.py,
the step breakdown's categories and labels only in trnprof/breakdown.py, byte and time units only
in trnprof/units.py (docs/architecture.md lists where each fact lives)."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

from tests.conftest import REPO
from trnprof import breakdown, hardware
from trnprof.stdlib import load_views
from trnprof.units import GB, GIB, KIB, MIB

SOURCE_DIRS = [REPO / "trnprof", REPO / "collectors", REPO / "rules"]
UNIT_NAMES = {"GIB": GIB, "MIB": MIB, "KIB": KIB, "GB": GB}


def _sources(*suffixes: str) -> list[Path]:
    return sorted(p for folder in SOURCE_DIRS for suffix in suffixes for p in folder.rglob(f"*{suffix}"))


def _peaks() -> set[float]:
    """Every published figure of the table: per chip as stated, per core as the table says."""
    values = {
        *hardware.CHIP_TENSOR_FLOPS.values(),
        hardware.CORE_VECTOR_FLOPS,
        hardware.CORE_SCALAR_FLOPS,
        hardware.CHIP_HBM_BYTES,
        hardware.CHIP_HBM_BYTES_PER_S,
        hardware.CHIP_DMA_BYTES_PER_S,
        *hardware.OLDER_CHIP_TENSOR_FLOPS.values(),
    }
    for chip in hardware.CHIPS.values():
        values |= {
            *chip.tensor_flops.values(),
            chip.vector_flops,
            chip.scalar_flops,
            chip.hbm_bytes,
            chip.hbm_bytes_per_s,
            chip.dma_bytes_per_s,
        }
    for instance in hardware.INSTANCE_TYPES.values():
        values |= {instance.neuronlink_bytes_per_s, instance.network_bytes_per_s, instance.ultraserver_link_bytes_per_s}
        values |= {v for k, v in hardware.row(instance).items() if k.endswith(("_flops", "_per_s", "_per_core"))}
    # a peak that is a power of ten (the chip's ~1e12 B/s of DMA) reads like a unit conversion
    # (`flops / 1e12` for TFLOPS): only the table's other figures are told apart
    return {float(v) for v in values if v and 10 ** round(math.log10(v)) != v}


def _value(node: ast.AST) -> float | None:
    """A numeric literal, or a product / quotient of literals and unit names (`820 * GIB`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in UNIT_NAMES:
        return float(UNIT_NAMES[node.id])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        left, right = _value(node.left), _value(node.right)
        if left is not None and right is not None and right != 0:
            return left * right if isinstance(node.op, ast.Mult) else left / right
    return None


def test_hardware_peaks_are_stated_in_one_module():
    peaks, found = _peaks(), []
    for path in _sources(".py"):
        if path == REPO / "trnprof" / "hardware.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = _value(node)
            if value is not None and not isinstance(node, ast.Name) and value in peaks:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    for path in _sources(".sql", ".yaml"):
        for number in re.finditer(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:e\d+)?(?![\w.])", path.read_text(encoding="utf-8")):
            if float(number.group().replace("_", "")) in peaks:
                found.append(f"{path.relative_to(REPO)}: {number.group()}")
    assert found == [], "a hardware peak outside trnprof/hardware.py: read it from the table"


def test_the_checker_finds_a_peak_written_as_a_product():
    tree = ast.parse("bw = 820 * GIB\nflops = 190e12\nshare = 0.5")
    assert [_value(n) in _peaks() for n in tree.body[0:2]] == [False, False]  # statements are not values
    assert [_value(s.value) in _peaks() for s in tree.body] == [True, True, False]


def test_breakdown_categories_are_stated_in_one_module():
    found = []
    for path in _sources(".py"):
        if path == REPO / "trnprof" / "breakdown.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                strings = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                if {"exposed_comm", "input_wait", "transfer_exposed"} <= strings:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
            if isinstance(node, ast.Constant) and node.value in set(breakdown.LABELS.values()) - set(breakdown.LABELS):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: label {node.value!r}")
    assert found == [], "the step breakdown's categories or labels restated: import trnprof.breakdown"


def test_the_categories_are_the_step_breakdown_view_columns():
    view = next(v for v in load_views() if v.name == "step_breakdown")
    columns = [c for c in view.columns if c in breakdown.CATEGORIES]
    assert columns == list(breakdown.CATEGORIES) and set(breakdown.LABELS) == set(breakdown.CATEGORIES)


def test_units_are_defined_in_one_module():
    found = []
    for path in _sources(".py"):
        if path == REPO / "trnprof" / "units.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id in {*UNIT_NAMES, "NS", "NS_PER_S", "S_PER_NS"}:
                        found.append(f"{path.relative_to(REPO)}:{node.lineno}: {target.id}")
    assert found == [], "a unit defined again: import it from trnprof.units"
