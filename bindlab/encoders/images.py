"""Turn image inputs into PIL images for a backend's own preprocessing, the one way every ``embed_images`` takes them.

Accepted inputs and what happens to them (each conversion is deliberate and documented):

- ``PIL.Image.Image`` — used as is (see the mode rules below).
- ``str`` / ``pathlib.Path`` — opened and fully decoded; a missing, unreadable, truncated or non-image file is
  an :class:`EncoderError` naming the path.
- ``numpy.ndarray`` of dtype uint8, shape ``(H, W)``, ``(H, W, 3)`` or ``(H, W, 4)`` — wrapped with
  ``Image.fromarray``.
- anything else — :class:`EncoderError` naming the type.

Modes. Published numbers come from each library's own preprocessing, so by default (``rgb=False``) an 8-bit
image keeps its mode and the backend's library converts it in its own order: open_clip's transform resizes and
crops first and converts to RGB last (a palette image is resized nearest-neighbour, alpha is dropped);
transformers' processors composite transparency on white before resizing (``convert_to_rgb``); Qwen3-VL's
``qwen_vl_utils`` pastes RGBA on white and converts the rest with ``convert("RGB")``. The one exception is
high-bit-depth greyscale, which PIL's own conversion clips to white at 255 (every library would see a white
image), so it is converted here first, as its usual fix does (:func:`to_8bit`, noted once per run):

- 16-bit and 32-bit integer greyscale (``I;16``, ``I;16B``, ``I;16L``, ``I``): values are read as 16-bit
  intensities (0..65535, clipped) and divided by 257 to 0..255 -> ``L``.
- float greyscale ``F``: taken as 0..1 when its maximum is at most 1, else as 0..255; clipped -> ``L``.

:func:`to_rgb` (``rgb=True``, used by bindlab's own toy models) additionally turns every image into RGB:
``L``/``1``/``CMYK``/... through ``convert("RGB")``; ``RGBA``/``LA``/``PA``/``P`` with transparency/``RGBa``
alpha-composited **on white** (as transformers' ``convert_to_rgb`` does).

Size: images whose longer side exceeds ``max_side`` (default 8192 px) are downscaled (aspect kept) *before*
preprocessing, so a 20000x20000 scan does not need gigabytes in the processor; each such downscale is reported
in the returned notes and logged. Below the cap an image goes through the library's path unchanged (a
5000 px photo embeds exactly as the library embeds it); a downscaled one differs from the library's own result
by about 1e-4 (cosine), which the note says. Tiny images (even 1x1) are accepted; the processor upsamples them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError

log = logging.getLogger(__name__)

MAX_SIDE = 8192  # longer side above which images are downscaled before preprocessing
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")
_INT_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I")
_DEEP_MODES = (*_INT_MODES, "F")  # PIL's own conversion clips these at 255
_NOTICED: set[tuple[str, str]] = set()  # (encoder id, message) pairs already logged in this process


def notice_once(encoder_id: str, message: str) -> None:
    """Log ``message`` for ``encoder_id`` at WARNING level the first time only (once per run)."""
    if (encoder_id, message) not in _NOTICED:
        _NOTICED.add((encoder_id, message))
        log.warning("%s: %s", encoder_id, message)


def load_images(
    images: Any, encoder_id: str, max_side: int = MAX_SIDE, rgb: bool = True, first: int = 0
) -> tuple[list[Any], list[str]]:
    """Open inputs as PIL images: RGB (``rgb=True``), or 8-bit in their own mode for the library to convert.

    Args:
        images: a list of PIL images, paths or uint8 arrays.
        encoder_id: named in error messages and notices.
        max_side: longer side above which an image is downscaled.
        rgb: convert to RGB here (:func:`to_rgb`); ``False`` keeps 8-bit modes (``L``, ``RGBA``, ``P``, ...) for
            the backend's own preprocessing and only converts high-bit-depth greyscale (:func:`to_8bit`).
        first: the number of the first image in messages (a worker preparing image #i alone passes ``i``).

    Returns:
        (images, notes): one note per non-trivial conversion (downscale), e.g. for a run report.

    Raises:
        EncoderError: a single image instead of a list, a bad path, a corrupt file, or a non-image input.
    """
    from PIL import Image

    if isinstance(images, (str, Path, Image.Image, np.ndarray)):
        raise EncoderError(f"{encoder_id}: embed_images expects a list of images, got a single {type(images).__name__}")
    out, notes = [], []
    for i, item in enumerate(images, start=first):
        img = _open(item, i, encoder_id)
        img, note = _downscale(img, max_side)
        if note:
            notes.append(f"image #{i}: {note}")
            log.warning("%s: image #%d %s", encoder_id, i, note)
        if not rgb and img.mode in _DEEP_MODES:
            notice_once(
                encoder_id,
                f"{img.mode} (high-bit-depth) images are scaled to 8-bit greyscale before "
                "preprocessing; PIL's own conversion would clip them to white",
            )
        out.append(to_rgb(img) if rgb else to_8bit(img))
    return out, notes


def image_list(images: Any, encoder_id: str) -> list[Any]:
    """``images`` as a list, refusing a single image (what :func:`load_images` checks first) before any is opened."""
    from PIL import Image

    if isinstance(images, (str, Path, Image.Image, np.ndarray)):
        raise EncoderError(f"{encoder_id}: embed_images expects a list of images, got a single {type(images).__name__}")
    return list(images)


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
            raise EncoderError(
                f"{encoder_id}: image #{i}: arrays must be uint8 (H, W), (H, W, 3) or (H, W, 4); "
                f"got {item.dtype} {item.shape}"
            )
        return Image.fromarray(item)
    raise EncoderError(
        f"{encoder_id}: image #{i} is a {type(item).__name__}, not an image; "
        "give PIL images, image file paths or uint8 arrays"
    )


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
    return img, (
        f"downscaled from {w}x{h} to {new[0]}x{new[1]} before preprocessing (longer side > {max_side}; "
        "embeddings differ from the library's own full-size path by about 1e-4)"
    )


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
    if mode in _DEEP_MODES:
        return to_8bit(img).convert("RGB")
    return img.convert("RGB")


def to_8bit(img: Any) -> Any:
    """High-bit-depth greyscale (``I;16*``, ``I``, ``F``) -> ``L`` by the rules in the module docstring; else as is."""
    from PIL import Image

    if img.mode in _INT_MODES:
        a = np.asarray(img, dtype=np.int64)
        return Image.fromarray((np.clip(a, 0, 65535) / 257.0).round().astype(np.uint8), mode="L")
    if img.mode == "F":
        a = np.asarray(img, dtype=np.float32)
        a = a * 255.0 if a.size and np.nanmax(a) <= 1.0 else a
        return Image.fromarray(np.clip(np.nan_to_num(a), 0, 255).round().astype(np.uint8), mode="L")
    return img
