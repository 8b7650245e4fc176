"""Measure the host CPU time per image of the ViT fine-tuning example's training transforms.

The example (aws-neuron-samples torch-neuronx/training/hf_image_classification, HF
run_image_classification.py) trains on CIFAR-10, whose images HF datasets stores as 32 x 32 PNG
bytes, and applies per image: PNG decode, convert("RGB"), RandomResizedCrop(224) (bilinear),
RandomHorizontalFlip, ToTensor (uint8 HWC -> float32 CHW / 255) and Normalize. This script runs
the same steps with Pillow and NumPy on one core and prints CPU milliseconds per image. Needs
Pillow (not a trnprof dependency). collectors/trn1/inputs.py records the result.

    python scripts/measure_image_pipeline.py [--images 2000]
"""

import argparse
import io
import math
import random
import time

import numpy as np
from PIL import Image

SIZE = 224
MEAN = STD = np.array([0.5, 0.5, 0.5], dtype=np.float32).reshape(3, 1, 1)  # ViT's image processor


def cifar_png(rng: np.random.Generator) -> bytes:
    """A 32 x 32 RGB PNG with smooth structure plus noise (PNG size near CIFAR-10's ~2.5 KB)."""
    y, x = np.mgrid[0:32, 0:32]
    base = np.stack([np.sin(x / rng.uniform(2, 8) + c) * 80 + 128 for c in range(3)], axis=-1)
    pixels = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def random_resized_crop(img: Image.Image, rnd: random.Random) -> Image.Image:
    """torchvision's RandomResizedCrop: area 8-100 %, aspect 3/4-4/3, bilinear resize to 224."""
    w, h = img.size
    for _ in range(10):
        area = w * h * rnd.uniform(0.08, 1.0)
        aspect = math.exp(rnd.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = int(round(math.sqrt(area * aspect))), int(round(math.sqrt(area / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            left, top = rnd.randint(0, w - cw), rnd.randint(0, h - ch)
            return img.resize((SIZE, SIZE), Image.BILINEAR, box=(left, top, left + cw, top + ch))
    return img.resize((SIZE, SIZE), Image.BILINEAR)


def transform(data: bytes, rnd: random.Random) -> np.ndarray:
    img = Image.open(io.BytesIO(data)).convert("RGB")
    img = random_resized_crop(img, rnd)
    if rnd.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    chw = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return (chw - MEAN) / STD


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    args = parser.parse_args()
    rng, rnd = np.random.default_rng(0), random.Random(0)
    pngs = [cifar_png(rng) for _ in range(256)]
    for data in pngs[:32]:
        transform(data, rnd)  # warm up
    start = time.process_time()
    for i in range(args.images):
        transform(pngs[i % len(pngs)], rnd)
    per_image_ms = (time.process_time() - start) / args.images * 1e3
    print(
        f"{per_image_ms:.3f} ms CPU per image ({args.images} images, mean PNG {np.mean([len(p) for p in pngs]):.0f} B)"
    )


if __name__ == "__main__":
    main()
