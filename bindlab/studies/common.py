"""The toolkit every study shares: encoders loaded once per process, and the embedded default benchmark.

:func:`get_encoder` is how a study loads a model (the public-mode access check, then the process's one instance per
weights, device and batch size from :mod:`bindlab.encoders.service`). :func:`default_dataset` is the embedded mini
SABER benchmark, generated on first use; :func:`default_dataset_for` picks the version a set of encoders can read
(the renderable vocabulary for the toy models), and :func:`embedded_data_for` the one a model and its pairings need.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindlab.config import home
from bindlab.data.files import build_once
from bindlab.data.schema import load_mcqs
from bindlab.eval.mcq import PAIRINGS
from bindlab.studies.access import check_model_access

DEFAULT_SETTINGS = {"per_size": 20, "sizes": list(range(2, 11)), "seed": 0}
DEFAULT_IMAGE_SIZE = 128


def default_dataset(images: bool = False, progress: Any = None) -> Path:
    """The embedded default mini SABER benchmark (20 per size, N = 2..10, seed 0), generated on first use.

    With ``images`` it is the image version: renderable vocabulary, query and candidate images at 128 px.
    """
    from bindlab.data.saber import generate_saber, write_benchmark

    name = "saber-mini-images" if images else "saber-mini"
    path = home() / "default" / name / "mcq.jsonl"

    def build() -> None:
        kwargs: dict[str, Any] = dict(
            per_size=DEFAULT_SETTINGS["per_size"], sizes=DEFAULT_SETTINGS["sizes"], seed=DEFAULT_SETTINGS["seed"]
        )
        if images:
            from bindlab.data.render import RENDER_VOCAB
            from bindlab.data.saber_images import render_mcq_images

            qs = generate_saber(**kwargs, vocab=RENDER_VOCAB)
            render_mcq_images(
                qs,
                path.parent,
                size=DEFAULT_IMAGE_SIZE,
                workers=2,
                progress=(lambda d, t: progress(d / t, f"rendering default images {d}/{t}")) if progress else None,
            )
        else:
            qs = generate_saber(**kwargs)
        write_benchmark(
            path.parent,
            qs,
            {
                **DEFAULT_SETTINGS,
                "images": images,
                "template": "attributive",
                **({"image_size": DEFAULT_IMAGE_SIZE, "vocab": "renderable"} if images else {}),
            },
        )

    def current(folder: Path) -> bool:  # written by this bindlab's generator (an older home's texts are rebuilt)
        import json

        from bindlab.data.saber import TEXT_FORMAT

        try:
            return json.loads((folder / "meta.json").read_text()).get("text_format") == TEXT_FORMAT
        except (OSError, ValueError):
            return False

    # two visitors (or two processes sharing the home) opening the page at once render the default only once
    return build_once(path, build, current=current)


_READS_DEFAULT: dict[str, bool] = {}  # encoder fingerprint -> it knows every word of the embedded text benchmark


def reads_default_words(encoder: Any) -> bool:
    """Whether ``encoder`` knows every word of the embedded text benchmark (:func:`default_dataset`), by its
    ``unknown_words`` report; an encoder that cannot say counts as knowing them. Memoised per fingerprint."""
    from bindlab.encoders.base import unknown_words

    key = str(encoder.fingerprint)
    if key not in _READS_DEFAULT:
        questions, _ = load_mcqs(default_dataset())
        texts = sorted({it.text for q in questions for it in (q.query, *q.candidates)})
        unknown = unknown_words(encoder, texts)
        _READS_DEFAULT[key] = unknown is None or not any(unknown)
    return _READS_DEFAULT[key]


def default_dataset_for(encoders: Sequence[Any], images: bool = False, progress: Any = None) -> Path:
    """The embedded default benchmark for these encoders: the full SABER vocabulary, unless one of them does not
    know some of its words (:func:`reads_default_words`; the toy models know ~100 words) — then the benchmark over
    the renderable vocabulary, whose words they were trained on, in its image version (same questions, images
    rendered once), so all of them are scored on the same questions."""
    closed = any(not reads_default_words(e) for e in encoders)
    return default_dataset(images=images or closed, progress=progress)


def get_encoder(model: str, device: str = "auto", batch_size: int | None = None, dtype: str = "auto") -> Any:
    """Load an encoder once per process (thread-safe) and per (resolved weights, device, batch size, dtype); later
    calls reuse it, whatever spelling of a local folder they use (:func:`bindlab.encoders.service.get_encoder`).

    With the defaults the backend's own defaults apply (what the tabs use); a command passes its options.
    """
    from bindlab.encoders import service

    check_model_access(model)  # public mode: a visitor loads only their own jobs' lora: models
    return service.get_encoder(model, **service.loader_options(device, batch_size, dtype))


IMAGE_MODELS = ("toy:clip", "toy:shared")  # the bundled image+text encoders, preferred in this order


def needs_images(pairing: str) -> bool:
    return "image" in PAIRINGS[pairing]


def embedded_data_for(
    model: str, pairings: Sequence[str], device: str = "auto", progress: Any = None, batch_size: int | None = None
) -> str:
    """The embedded benchmark ``model`` can read (:func:`default_dataset_for`: the renderable one for the toy models),
    with images when one of ``pairings`` needs them (an unknown pairing is left for the request to refuse)."""
    encoder = get_encoder(model, device=device, batch_size=batch_size)  # cheap: weights load on first use
    images = any(needs_images(p) for p in pairings if p in PAIRINGS)
    return str(default_dataset_for([encoder], images=images, progress=progress))
