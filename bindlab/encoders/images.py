"""Turn image inputs into RGB PIL images, the one way every backend's ``embed_images`` takes them.

Accepted inputs and what happens to them (each conversion is deliberate and documented):

- ``PIL.Image.Image`` — used as is after the mode conversion below.
- ``str`` / ``pathlib.Path`` — opened and fully decoded; a missing, unreadable, truncated or non-image file is
  an :class:`EncoderError` naming the path.
- ``numpy.ndarray`` of dtype uint8, shape ``(H, W)``, ``(H, W, 3)`` or ``(H, W, 4)`` — wrapped with
  ``Image.fromarray``.
- anything else — :class:`EncoderError` naming the type.

Mode conversions to RGB:

- ``RGB`` unchanged; ``L``/``1``/``CMYK``/``YCbCr``/``LAB``/``HSV`` through PIL's ``convert("RGB")``.
- ``RGBA``/``LA``/``PA``/``P`` with transparency/``RGBa``: alpha-composited **on white** (transparent pixels become
  white, as a viewer shows them on a page), then RGB.
- 16-bit and 32-bit integer greyscale (``I;16``, ``I;16B``, ``I;16L``, ``I``): values are read as 16-bit
  intensities (0..65535, clipped) and divided by 257 to 0..255, then grey -> RGB.
- float greyscale ``F``: taken as 0..1 when its maximum is at most 1, else as 0..255; clipped, then grey -> RGB.

Size: images whose longer side exceeds ``max_side`` (default 4096 px) are downscaled (aspect kept) *before*
preprocessing, so a 10000x10000 scan does not need gigabytes in the processor; each such downscale is reported
in the returned notes and logged. Tiny images (even 1x1) are accepted; the model's processor upsamples them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError

log = logging.getLogger(__name__)

MAX_SIDE = 4096  # longer side above which images are downscaled before preprocessing
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
_INT_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I")


def load_images(images: Any, encoder_id: str, max_side: int = MAX_SIDE) -> tuple[list[Any], list[str]]:
    """Convert inputs to RGB PIL images.

    Args:
        images: a list of PIL images, paths or uint8 arrays.
        encoder_id: named in error messages.
        max_side: longer side above which an image is downscaled.

    Returns:
        (RGB images, notes): one note per non-trivial conversion (downscale), e.g. for a run report.

    Raises:
        EncoderError: a single image instead of a list, a bad path, a corrupt file, or a non-image input.
    """
    from PIL import Image

    if isinstance(images, (str, Path, Image.Image, np.ndarray)):
        raise EncoderError(f"{encoder_id}: embed_images expects a list of images, got a single {type(images).__name__}")
    out, notes = [], []
    for i, item in enumerate(images):
        img = _open(item, i, encoder_id)
        img, note = _downscale(img, max_side)
        if note:
            notes.append(f"image #{i}: {note}")
            log.warning("%s: image #%d %s", encoder_id, i, note)
        out.append(to_rgb(img))
    return out, notes


def _open(item: Any, i: int, encoder_id: str) -> Any:
    from PIL import Image

    if isinstance(item, Image.Image):
        return item
    if isinstance(item, (str, Path)):
        from bindlab.data.files import DataError, open_image

        try:  # the one image loader: regular files only, pixel cap before decoding, bombs/truncation -> message
            return open_image(Path(item).expanduser())
        except DataError as e:
            raise EncoderError(f"{encoder_id}: image #{i}: {e}") from None
    if isinstance(item, np.ndarray):
        if item.dtype != np.uint8 or item.ndim not in (2, 3) or (item.ndim == 3 and item.shape[2] not in (3, 4)):
            raise EncoderError(f"{encoder_id}: image #{i}: arrays must be uint8 (H, W), (H, W, 3) or (H, W, 4); "
                               f"got {item.dtype} {item.shape}")
        return Image.fromarray(item)
    raise EncoderError(f"{encoder_id}: image #{i} is a {type(item).__name__}, not an image; "
                       "give PIL images, image file paths or uint8 arrays")


def _downscale(img: Any, max_side: int) -> tuple[Any, str]:
    """Shrink so the longer side is ``max_side`` (aspect kept); returns (image, note or '')."""
    from PIL import Image

    w, h = img.size
    if max(w, h) <= max_side:
        return img, ""
    scale = max_side / max(w, h)
    new = (max(1, round(w * scale)), max(1, round(h * scale)))
    if img.mode not in ("L", "RGB", "RGBA", "I", "F", "I;16"):
        img = img.convert("RGBA" if img.mode in _ALPHA_MODES or "transparency" in img.info else "RGB")
    factor = int(max(w, h) // (2 * max_side))
    if factor >= 2:  # integer box reduction first: fast and memory-light on huge images
        img = img.reduce(factor)
    img = img.resize(new, Image.Resampling.BICUBIC if img.mode not in ("I", "F", "I;16") else Image.Resampling.BILINEAR)
    return img, f"downscaled from {w}x{h} to {new[0]}x{new[1]} before preprocessing (longer side > {max_side})"


def to_rgb(img: Any) -> Any:
    """One PIL image in any mode -> RGB, following the rules in the module docstring."""
    from PIL import Image

    mode = img.mode
    if mode == "RGB":
        return img
    if mode == "P" and "transparency" in img.info:
        img, mode = img.convert("RGBA"), "RGBA"
    if mode in _ALPHA_MODES:
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    if mode in _INT_MODES:
        a = np.asarray(img, dtype=np.int64)
        grey = (np.clip(a, 0, 65535) / 257.0).round().astype(np.uint8)
        return Image.fromarray(grey, mode="L").convert("RGB")
    if mode == "F":
        a = np.asarray(img, dtype=np.float32)
        a = a * 255.0 if a.size and np.nanmax(a) <= 1.0 else a
        return Image.fromarray(np.clip(np.nan_to_num(a), 0, 255).round().astype(np.uint8), mode="L").convert("RGB")
    return img.convert("RGB")
