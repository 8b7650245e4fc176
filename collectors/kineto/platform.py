"""The platform a Kineto trace ran on, for the run's job facts (`device_kind`, `device_model`).

`device_kind`: `mtia`, `xpu` or `hpu` when the trace has that accelerator's event categories;
`rocm` for CUDA-named categories on an AMD device (ROCm builds keep CUDA's category names);
`cuda` for NVIDIA; `cpu` when the trace has no device work and lists no device. A trace that lists a
GPU in `deviceProperties` (Kineto lists them when the job's torch sees CUDA) but records no device
work is a GPU job whose device activities were not traced: its host ops launch kernels, so it
keeps the GPU's kind (a host op's time is then dispatch, not the op's arithmetic). `device_model`:
the device name of `deviceProperties` (e.g. `Tesla V100-SXM2-32GB`), when the trace lists one.
"""

from __future__ import annotations

AMD_NAMES = ("amd", "radeon", "instinct", "mi100", "mi200", "mi210", "mi250", "mi300")


def device_model(devices: list) -> str | None:
    """The device name `deviceProperties` lists (the first, when a node holds several alike)."""
    names = [d.get("name") for d in devices if isinstance(d, dict) and isinstance(d.get("name"), str)]
    return names[0][:128] if names else None


def device_kind(platforms: set, device_work: bool, model: str | None) -> str:
    for accelerator in ("mtia", "xpu", "hpu"):
        if accelerator in platforms:
            return accelerator
    if not device_work and not model:
        return "cpu"
    if model and any(word in model.lower() for word in AMD_NAMES):
        return "rocm"
    return "cuda"


def platform_facts(platforms: set, device_work: bool, devices: list) -> dict:
    """The job facts of one trace file: device_kind, and device_model when known."""
    model = device_model(devices)
    facts = {"device_kind": device_kind(platforms, device_work, model)}
    if model:
        facts["device_model"] = model
    return facts
