"""Simulation configs: defaults, presets, `--set` overrides and validation.

A config is a nested mapping (YAML). Layers apply in order: defaults, then a preset (a job
preset is a full config; a model preset brings its default job), then a config file, then
`dotted.key=value` overrides and extra faults. msgspec checks every key and type; this module
turns its errors into one line naming the key and the allowed values.
"""

from __future__ import annotations

import copy
import re
import types
import typing
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal, Union

import msgspec

from trnprof import yamlio
from trnprof.errors import TrnprofError
from trnprof.readfile import read_text
from trnprof.textfmt import brief

# Every number has a finite range (docs/whatif.md, "Value ranges"): far beyond any real job,
# small enough that no derived quantity overflows or allocates without bound.
PosInt = Annotated[int, msgspec.Meta(ge=1, le=1 << 20)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0, le=1 << 20)]
NonNegFloat = Annotated[float, msgspec.Meta(ge=0, le=1e6)]
Factor = Annotated[float, msgspec.Meta(ge=1, le=1000)]  # a fault's slowdown


class _Section(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class Cluster(_Section):
    instance: Literal["trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge"] = (
        "trn1.32xlarge"
    )
    nodes: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 1
    # Logical NeuronCore Configuration: physical NeuronCores per rank (Trn2: 1 or 2); unset: the
    # chip's default (1 on Trn1, 2 on Trn2). trn2u.48xlarge nodes form UltraServers of 4.
    lnc: Literal[1, 2] | None = None


class ModelSpec(_Section):
    preset: str | None = None
    kind: Literal["decoder", "encoder", "vit"] | None = None
    layers: Annotated[int, msgspec.Meta(ge=1, le=1024)] | None = None
    hidden: Annotated[int, msgspec.Meta(ge=1, le=131_072)] | None = None
    heads: Annotated[int, msgspec.Meta(ge=1, le=1024)] | None = None
    kv_heads: Annotated[int, msgspec.Meta(ge=1, le=1024)] | None = None
    ffn_hidden: PosInt | None = None
    vocab: PosInt | None = None
    seq_len: PosInt | None = None
    image_size: Annotated[int, msgspec.Meta(ge=1, le=16_384)] | None = None
    patch_size: Annotated[int, msgspec.Meta(ge=1, le=1024)] | None = None
    classes: PosInt | None = None
    mlp: Literal["gelu", "swiglu"] | None = None
    tie_embeddings: bool | None = None
    # How the training stack runs attention: `flash` keeps the scores on chip (NxD's flash
    # attention kernel), `eager` writes them to HBM between separate matmul and softmax ops
    # (NeMo-Megatron without fused softmax, HuggingFace eager attention).
    attention: Literal["flash", "eager"] | None = None
    dropout: Annotated[float, msgspec.Meta(ge=0, lt=1)] | None = None  # hidden and attention dropout


class Parallel(_Section):
    tp: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1
    pp: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 1
    sequence_parallel: bool = True
    zero1: bool = False
    microbatches: Union[PosInt, Literal["auto"]] = "auto"


class Batch(_Section):
    global_: Annotated[int, msgspec.Meta(ge=1, le=1_048_576)] = msgspec.field(name="global", default=32)
    micro: PosInt = 1


SdkVersion = Annotated[str, msgspec.Meta(pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)*$")]


class Precision(_Section):
    compute: Literal["bf16", "fp16", "fp8", "fp32"] = "bf16"
    # neuronx-cc --auto-cast: which FP32 ops the compiler casts; `default` is the compiler's default
    # for `neuron_sdk` (matmult before Neuron 2.27, none from 2.27: precision.py);
    # --auto-cast-type: to what. Only acts when compute is fp32.
    auto_cast: Literal["default", "none", "matmult", "all"] = "default"
    # the Neuron SDK release the job is compiled with; unset: 2.27.0 on Trn1 (the calibrated
    # default), 2.33.0 on Trn2 (the release of the public TorchTitan Neuron recipes)
    neuron_sdk: SdkVersion | None = None
    # the training framework; unset: torch-xla before Neuron 2.30, torchneuron (native PyTorch on
    # Neuron) from 2.30 on, which ended PyTorch/XLA support for training (precision.py)
    framework: Literal["torch-xla", "torchneuron", "torchtitan", "jax"] | None = None
    auto_cast_type: Literal["bf16", "fp16", "tf32", "fp8"] = "bf16"
    optimizer_state: Literal["fp32", "bf16"] = "fp32"
    stochastic_rounding: bool = True


class Memory(_Section):
    activation_checkpointing: Literal["none", "selective", "full"] = "none"


class Input(_Section):
    workers: Annotated[int, msgspec.Meta(ge=0, le=1024)] = 4
    # host CPU time to produce one sample; unset: 1 ms for text, image decode + augment for ViT
    per_sample_ms: NonNegFloat | None = None
    prefetch: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 2


class Comm(_Section):
    overlap_dp: bool = True
    bucket_mb: Annotated[float, msgspec.Meta(ge=0.001, le=65_536)] = 50.0


class Run(_Section):
    steps: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 10
    seed: Annotated[int, msgspec.Meta(ge=0, le=(1 << 32) - 1)] = 0
    noise: Annotated[float, msgspec.Meta(ge=0, le=0.2)] = 0.01


Fraction = Annotated[float, msgspec.Meta(ge=0.01, le=1)]


class Calibration(_Section):
    """The model's free parameters for this job; unset keys take the shipped fitted values."""

    tensor_efficiency: Fraction | None = None
    op_overhead_us: NonNegFloat | None = None
    hbm_efficiency: Fraction | None = None
    network_efficiency: Fraction | None = None


class _Fault(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, tag_field="kind"):
    pass


class Straggler(_Fault, tag="straggler"):
    rank: NonNegInt
    slowdown: Factor = 1.3


class SlowLoader(_Fault, tag="slow_loader"):
    factor: Factor = 8.0


class SlowLink(_Fault, tag="slow_link"):
    node: NonNegInt
    factor: Factor = 4.0


class Recompile(_Fault, tag="recompile"):
    every: PosInt = 5


class MemoryLeak(_Fault, tag="memory_leak"):
    bytes_per_step: Annotated[float, msgspec.Meta(ge=0, le=1e15)] = 2.0e9


class NoOverlap(_Fault, tag="no_overlap"):
    pass


class SlowHost(_Fault, tag="slow_host"):
    factor: Factor = 4.0


class SbufSpill(_Fault, tag="sbuf_spill"):
    fraction: Annotated[float, msgspec.Meta(gt=0, le=4)] = 0.5


class Throttle(_Fault, tag="throttle"):
    utilization: Annotated[float, msgspec.Meta(gt=0, lt=1)] = 0.6


Fault = Union[Straggler, SlowLoader, SlowLink, Recompile, MemoryLeak, NoOverlap, SlowHost, SbufSpill, Throttle]


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    cluster: Cluster = msgspec.field(default_factory=Cluster)
    model: ModelSpec = msgspec.field(default_factory=lambda: ModelSpec(preset="tiny"))
    parallel: Parallel = msgspec.field(default_factory=Parallel)
    batch: Batch = msgspec.field(default_factory=Batch)
    precision: Precision = msgspec.field(default_factory=Precision)
    memory: Memory = msgspec.field(default_factory=Memory)
    input: Input = msgspec.field(default_factory=Input)
    comm: Comm = msgspec.field(default_factory=Comm)
    run: Run = msgspec.field(default_factory=Run)
    calibration: Calibration = msgspec.field(default_factory=Calibration)
    faults: list[Fault] = msgspec.field(default_factory=list)


# ---------------------------------------------------------------- presets


def _preset_file(name: str) -> dict:
    text = (resources.files("trnprof.model") / "presets" / name).read_text(encoding="utf-8")
    return yamlio.load(text)


@lru_cache(maxsize=None)
def model_presets() -> dict:
    return _preset_file("models.yaml")


@lru_cache(maxsize=None)
def job_presets() -> dict:
    return _preset_file("jobs.yaml")


def list_presets() -> dict[str, list[str]]:
    return {"job": sorted(job_presets()), "model": sorted(model_presets())}


def preset_config(name: str) -> dict:
    """The config mapping of a job preset, or of a model preset on its default job."""
    if name in job_presets():
        return copy.deepcopy(job_presets()[name]["config"])
    if name in model_presets():
        config = copy.deepcopy(model_presets()[name].get("job", {}))
        config["model"] = {"preset": name}
        return config
    raise TrnprofError(
        f"unknown preset {brief(name)}; job presets: {', '.join(sorted(job_presets()))}; "
        f"model presets: {', '.join(sorted(model_presets()))}"
    )


# ---------------------------------------------------------------- merging and overrides


def _merge(base: dict, top: dict) -> dict:
    """`top` over `base`, recursively for mappings; lists and scalars replace."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _normalise(mapping, origin: str) -> dict:
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise TrnprofError(
            f"{origin}: a config is a mapping of sections (cluster, model, ...), got {type(mapping).__name__}"
        )
    mapping = dict(mapping)
    if isinstance(mapping.get("model"), str):  # `model: llama2-7b` is short for a preset
        mapping["model"] = {"preset": mapping["model"]}
    return mapping


def parse_override(text: str) -> dict:
    """`dotted.key=value` as a nested mapping; the value is read as YAML (numbers, lists ...)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not re.fullmatch(r"[A-Za-z_][\w.-]*", key) or ".." in key or key.endswith("."):
        raise TrnprofError(f"--set {brief(text)}: expected dotted.key=value, e.g. cluster.nodes=32")
    try:
        value = yamlio.load(raw) if raw.strip() else None
    except yamlio.YAMLError as exc:
        raise TrnprofError(f"--set {key}: value {brief(raw)} is {yamlio.describe_error(exc)}") from None
    for part in reversed(key.split(".")):
        value = {part: value}
    return value


def read_config_file(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = yamlio.load(read_text(path, "config"))
    except yamlio.YAMLError as exc:
        raise TrnprofError(f"config {path} is not valid YAML: {str(exc).splitlines()[0][:200]}") from None
    return _normalise(data, str(path))


def load_config(preset: str | None = None, path: str | Path | dict | None = None, overrides=(), faults=None) -> Config:
    """Build and validate a config: preset, then file (or mapping), then overrides, then faults
    appended. Raises TrnprofError with one line naming the bad key and its allowed values."""
    merged: dict = {}
    if preset:
        merged = _merge(merged, _normalise(preset_config(preset), f"preset {preset}"))
    if isinstance(path, dict):
        merged = _merge(merged, _normalise(path, "config"))
    elif path is not None:
        merged = _merge(merged, read_config_file(path))
    for text in overrides:
        merged = _merge(merged, _normalise(parse_override(text), f"--set {text}"))
    if faults:
        merged["faults"] = list(merged.get("faults") or []) + list(faults)
    return convert(merged)


def convert(mapping: dict) -> Config:
    try:
        return msgspec.convert(mapping, Config, strict=False)  # lax: YAML reads 9.0e9 as a string
    except msgspec.ValidationError as exc:
        raise TrnprofError(_explain(str(exc), mapping)) from None


def to_dict(config: Config) -> dict:
    return msgspec.to_builtins(config)


# ---------------------------------------------------------------- error messages

_AT = re.compile(r"^(.*?)(?: - at `\$(.*)`)?$")


def _explain(message: str, mapping: dict) -> str:
    """msgspec's message as `config KEY: problem; allowed: ...`."""
    match = _AT.match(message)
    problem, where = match.group(1), match.group(2) or ""
    path = [p for p in re.split(r"\.|\[(\d+)\]", where) if p]
    unknown = re.match(r"Object contains unknown field `(.+)`", problem)
    if unknown:
        typ = _type_at(path, mapping)
        key = _dotted(path + [unknown.group(1)])
        allowed = ", ".join(_field_names(typ)) if typ is not None else ""
        return f"config: unknown key {brief(key)}; allowed keys here: {allowed}"
    missing = re.match(r"Object missing required field `(.+)`", problem)
    if missing:
        return f"config {_dotted(path + [missing.group(1)])}: required key is missing"
    key = _dotted(path) or "(top level)"
    if path and path[-1] == "kind" and len(path) >= 2 and path[0] == "faults":
        return (
            f"config {key}: {brief(_value_at(path, mapping))} is not a fault kind; allowed: {', '.join(_fault_kinds())}"
        )
    typ = _type_at(path[:-1], mapping)
    allowed = _describe(_field_type(typ, path[-1])) if typ is not None and path else None
    got = _value_at(path, mapping)
    text = f"config {key}: invalid value {brief(got)}"
    return f"{text}; allowed: {allowed}" if allowed else f"{text} ({problem})"


def _dotted(path) -> str:
    return re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", ".".join(path))


def _fault_kinds() -> list[str]:
    return [cls.__struct_config__.tag for cls in typing.get_args(Fault)]


def _value_at(path, mapping):
    value = mapping
    for part in path:
        try:
            value = value[int(part)] if isinstance(value, list) else value[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return value


def _unwrap(typ):
    """The Struct type inside Optional / list / Annotated wrappers, or typ itself."""
    origin = typing.get_origin(typ)
    if origin is Annotated:
        return _unwrap(typing.get_args(typ)[0])
    if origin in (list,):
        return _unwrap(typing.get_args(typ)[0])
    if origin is Union or origin is types.UnionType:
        structs = [a for a in typing.get_args(typ) if a is not type(None)]
        return structs[0] if len(structs) == 1 else typ
    return typ


def _type_at(path, mapping):
    """The Struct type the config holds at `path` (None when it cannot be told)."""
    typ = Config
    walked = []
    for part in path:
        walked.append(part)
        if part.isdigit():
            if walked[:1] == ["faults"]:
                kind = _value_at(walked + ["kind"], mapping)
                typ = next((c for c in typing.get_args(Fault) if c.__struct_config__.tag == kind), None)
                if typ is None:
                    return None
            continue
        if walked == ["faults"]:
            continue
        typ = _unwrap(_field_type(typ, part))
        if not (isinstance(typ, type) and issubclass(typ, msgspec.Struct)):
            return typ if part == path[-1] else None
    return typ


def _field_type(struct, name):
    if not (isinstance(struct, type) and issubclass(struct, msgspec.Struct)):
        return None
    for field in msgspec.structs.fields(struct):
        if field.encode_name == name:
            return field.type
    return None


def _field_names(struct) -> list[str]:
    if not (isinstance(struct, type) and issubclass(struct, msgspec.Struct)):
        return []
    tag = ["kind"] if issubclass(struct, _Fault) else []
    return tag + [f.encode_name for f in msgspec.structs.fields(struct)]


def _describe(typ) -> str | None:
    """Allowed values of a field type, in words."""
    if typ is None:
        return None
    origin = typing.get_origin(typ)
    if origin is Literal:
        return ", ".join(str(v) for v in typing.get_args(typ))
    if origin is Annotated:
        base, *metas = typing.get_args(typ)
        bounds = []
        for meta in metas:
            for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                if getattr(meta, attr, None) is not None:
                    bounds.append(f"{sign} {getattr(meta, attr)}")
        noun = {int: "an integer", float: "a number"}.get(base, base.__name__)
        return noun + (" " + " and ".join(bounds) if bounds else "")
    if origin is Union or origin is types.UnionType:
        parts = [_describe(a) for a in typing.get_args(typ) if a is not type(None)]
        return " or ".join(p for p in parts if p)
    if typ is bool:
        return "true, false"
    if typ is str:
        return "a string"
    if typ is int:
        return "an integer"
    if typ is float:
        return "a number"
    if typing.get_origin(typ) is list:
        return "a list of faults: " + ", ".join(_fault_kinds())
    return None
