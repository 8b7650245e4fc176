"""A validated config resolved into the job the model simulates: the architecture with every
field known, the parallel layout's derived sizes, and the checks that span several keys."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from trnprof.errors import TrnprofError

from .config import Config, ModelSpec, model_presets
from .faults import check_faults
from .hardware import DTYPE_BYTES, INSTANCES, Instance
from .precision import Compiled, compiled, resolve_stack

_TEXT_FIELDS = ("vocab", "seq_len")
_VIT_FIELDS = ("image_size", "patch_size", "classes")
_COMMON_FIELDS = ("kind", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "mlp")
_STACK_FIELDS = ("tie_embeddings", "attention", "dropout")


@dataclass(frozen=True)
class Arch:
    """A transformer architecture with every field resolved."""

    name: str
    kind: str  # decoder | encoder | vit
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    mlp: str  # gelu | swiglu
    vocab: int  # output classes for vit
    seq_len: int  # tokens per sample (vit: patches + class token)
    tie_embeddings: bool
    image_size: int | None = None
    patch_size: int | None = None
    attention: str = "flash"  # flash | eager (config.ModelSpec)
    dropout: float = 0.0  # hidden and attention dropout probability

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def unit(self) -> str:
        return "img/s" if self.kind == "vit" else "seq/s"


@dataclass(frozen=True)
class Job:
    config: Config
    arch: Arch
    instance: Instance
    nodes: int
    world: int
    tp: int
    pp: int
    dp: int
    micro: int
    global_batch: int
    microbatches: int  # per step and pipeline: gradient-accumulation microbatches
    sp: bool  # sequence parallelism in effect (needs tp > 1)
    zero1: bool
    checkpointing: str
    dtypes: Compiled  # what the compiler runs: matmul, elementwise and master-weight dtypes
    state_bytes: int  # bytes per optimizer-state element (Adam keeps two)

    @property
    def act_bytes(self) -> int:
        """Bytes per activation element (the elementwise dtype)."""
        return self.dtypes.act_bytes

    @property
    def param_bytes(self) -> int:
        """Bytes per stored parameter and gradient."""
        return self.dtypes.param_bytes

    @property
    def layers_per_stage(self) -> int:
        return self.arch.layers // self.pp

    @property
    def cores_per_node(self) -> int:
        return self.instance.cores


def resolve_arch(spec: ModelSpec) -> Arch:
    fields = {}
    name = "custom"
    if spec.preset is not None:
        presets = model_presets()
        if spec.preset not in presets:
            raise TrnprofError(
                f"config model.preset: unknown model {spec.preset!r}; allowed: {', '.join(sorted(presets))}"
            )
        fields.update(presets[spec.preset]["model"])
        name = spec.preset
    explicit = {
        k: getattr(spec, k)
        for k in (*_COMMON_FIELDS, *_TEXT_FIELDS, *_VIT_FIELDS, *_STACK_FIELDS)
        if getattr(spec, k) is not None
    }
    if spec.preset is not None and any(fields.get(k) != v for k, v in explicit.items()):
        name = f"{spec.preset}*"  # a preset with changed fields
    fields.update(explicit)
    kind = fields.get("kind")
    if kind is None:
        raise TrnprofError("config model: give model.preset or model.kind (decoder, encoder, vit) with its fields")
    needed = _COMMON_FIELDS[1:4] + ("ffn_hidden",) + (_VIT_FIELDS[:2] if kind == "vit" else _TEXT_FIELDS)
    missing = [k for k in needed if fields.get(k) is None]
    if missing:
        raise TrnprofError(
            f"config model.{missing[0]}: required for a {kind} model without a preset (needed: {', '.join(needed)})"
        )
    wrong = [k for k in (_TEXT_FIELDS if kind == "vit" else _VIT_FIELDS) if k in explicit]
    if wrong:
        other = "image_size, patch_size, classes" if kind == "vit" else "vocab, seq_len"
        raise TrnprofError(f"config model.{wrong[0]}: not used by a {kind} model (its keys: {other})")
    heads, kv = fields["heads"], fields.get("kv_heads") or fields["heads"]
    if fields["hidden"] % heads:
        raise TrnprofError(f"config model.hidden: {fields['hidden']} is not divisible by model.heads {heads}")
    if heads % kv:
        raise TrnprofError(f"config model.kv_heads: {kv} must divide model.heads {heads}")
    if kind == "vit":
        image, patch = fields["image_size"], fields["patch_size"]
        if image % patch:
            raise TrnprofError(f"config model.patch_size: {patch} must divide model.image_size {image}")
        seq, vocab = (image // patch) ** 2 + 1, fields.get("classes") or 1000
    else:
        seq, vocab = fields["seq_len"], fields["vocab"]
    return Arch(
        name=name,
        kind=kind,
        layers=fields["layers"],
        hidden=fields["hidden"],
        heads=heads,
        kv_heads=kv,
        ffn_hidden=fields["ffn_hidden"],
        mlp=fields.get("mlp") or "gelu",
        vocab=vocab,
        seq_len=seq,
        tie_embeddings=bool(fields.get("tie_embeddings", kind != "vit")) if kind != "vit" else False,
        image_size=fields.get("image_size"),
        patch_size=fields.get("patch_size"),
        attention=fields.get("attention") or "flash",
        dropout=float(fields.get("dropout") or 0.0),
    )


def resolve(config: Config) -> Job:
    arch = resolve_arch(config.model)
    instance = INSTANCES[config.cluster.instance]
    lnc = config.cluster.lnc
    if lnc is not None and lnc not in instance.chip.lncs:
        raise TrnprofError(
            f"config cluster.lnc: {lnc} is not a Logical NeuronCore Configuration of "
            f"{instance.name} ({instance.chip.name}: {', '.join(map(str, instance.chip.lncs))})"
        )
    instance = instance.with_lnc(lnc)
    config = msgspec.structs.replace(config, precision=resolve_stack(config.precision, instance.chip.name))
    nodes = config.cluster.nodes
    world = nodes * instance.cores
    par = config.parallel
    tp, pp = par.tp, par.pp
    if instance.cores % tp:
        raise TrnprofError(
            f"config parallel.tp: {tp} must divide the {instance.cores} NeuronCores of a "
            f"{instance.name} node (tensor parallelism stays inside a node)"
        )
    if world % (tp * pp):
        raise TrnprofError(
            f"config parallel.pp: tp x pp = {tp * pp} must divide the world size {world} "
            f"({nodes} x {instance.cores} NeuronCores)"
        )
    if arch.layers % pp:
        raise TrnprofError(f"config parallel.pp: {pp} must divide the model's {arch.layers} layers")
    if arch.heads % tp:
        raise TrnprofError(f"config parallel.tp: {tp} must divide the model's {arch.heads} attention heads")
    if arch.kv_heads % tp and tp % arch.kv_heads:
        raise TrnprofError(f"config parallel.tp: {tp} and model.kv_heads {arch.kv_heads} must divide one another")
    dp = world // (tp * pp)
    micro, global_batch = config.batch.micro, config.batch.global_
    if global_batch % (micro * dp):
        raise TrnprofError(
            f"config batch.global: {global_batch} must be a multiple of batch.micro x dp = "
            f"{micro} x {dp} = {micro * dp} (dp = world {world} / (tp {tp} x pp {pp}))"
        )
    microbatches = global_batch // (micro * dp)
    if par.microbatches != "auto" and par.microbatches != microbatches:
        raise TrnprofError(
            f"config parallel.microbatches: {par.microbatches} does not match batch.global / "
            f"(batch.micro x dp) = {microbatches}; set it to {microbatches} or auto"
        )
    check_faults(config.faults, config.run.steps, nodes=nodes, world=world, dp=dp)
    prec = config.precision
    return Job(
        config=config,
        arch=arch,
        instance=instance,
        nodes=nodes,
        world=world,
        tp=tp,
        pp=pp,
        dp=dp,
        micro=micro,
        global_batch=global_batch,
        microbatches=microbatches,
        sp=par.sequence_parallel and tp > 1,
        zero1=par.zero1,
        checkpointing=config.memory.activation_checkpointing,
        dtypes=compiled(prec),
        state_bytes=DTYPE_BYTES[prec.optimizer_state],
    )
