"""GPU check: embed a few hundred SABER captions (and synthetic images) with each backend; print items/s and peak
GPU memory. Real checkpoints are used when they can load (hub reachable or cached, or local folders given with
--model); otherwise each backend falls back to its tiny random model from bindlab.encoders.tiny.

    python scripts/gpu_check.py [--device cuda] [--dtype auto] [--batch-size 64] [--model ID ...] [--tiny-only]
    python scripts/gpu_check.py --vs-library OUT.json   # bench --only vs_library (full on a GPU), as a table
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bindlab.data.saber import generate_saber  # noqa: E402
from bindlab.encoders.base import EncoderError, load_encoder  # noqa: E402
from bindlab.encoders.throughput import embedding_throughput  # noqa: E402
from bindlab.encoders.tiny import build_tiny  # noqa: E402

REAL = {  # backend -> a real checkpoint to try first
    "st": "minilm",
    "hf-clip": "hf:openai/clip-vit-base-patch16",
    "hf-siglip": "hf:google/siglip-base-patch16-224",
    "hf-siglip2": "hf:google/siglip2-base-patch16-224",
    "open-clip": "open_clip:ViT-B-32/laion2b_s34b_b79k",
    "qwen3vl": "qwen3vl:Qwen/Qwen3-VL-Embedding-2B",
}


def saber_texts(per_size: int = 40) -> list[str]:
    texts = []
    for q in generate_saber(per_size=per_size):
        texts.append(q.query.text)
        texts.extend(c.text for c in q.candidates)
    return texts


def synthetic_images(n: int, size: int = 224) -> list:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)) for _ in range(n)]


def vs_library(out: str) -> int:
    """``bench --only vs_library`` (the full sizes on a GPU, the small ones on CPU): JSON to ``out``, a table on
    stdout, and exit 1 when a side failed to run or bindlab's vectors are not the library's."""
    from bindlab.speed.vs_library import bench_vs_library

    r = bench_vs_library()
    Path(out).write_text(json.dumps(r, indent=2))
    m = r["machine"]
    print(
        f"machine: {m.get('gpu', 'CPU')} | {m['cores_available']} cores | load {m['load_avg_1m']} | torch "
        f"{m['torch']} | sizes {r['sizes']} | library workers {r['library_workers']}, batch {r['library_batch']}"
    )
    ok = True
    rows = [
        (f"images {arch} ({r['images']['unique_images']} PNGs, ii)", v)
        for arch, v in r["images"].items()
        if isinstance(v, dict)
    ]
    rows.append((f"texts MiniLM-L6 ({r['texts']['unique_texts']} captions, tt)", r["texts"]))
    for name, v in rows:
        lib, ours = v.get("library"), v["bindlab_cold"]
        lib_s = (
            f"{lib['seconds']:8.2f} s {lib['items_per_s']:>9} /s peak {lib['peak_gpu_mib']} MiB"
            if lib
            else "skipped (sentence-transformers not installed)"
        )
        print(
            f"{name:42s} library {lib_s} | bindlab cold {ours['seconds']:8.2f} s {ours['items_per_s']:>9} /s peak "
            f"{ours['peak_gpu_mib']} MiB | ratio {v.get('ratio', '-')} | max |diff| "
            f"{v.get('max_abs_vector_difference', '-')}"
        )
        gap = v.get("max_abs_vector_difference")
        ok = ok and (gap is None or gap < 5e-2)  # bf16 on a GPU: the same inputs, the same model, the same dtype
    warm = r["texts"]["bindlab_warm"]
    print(
        f"texts warm (every vector cached, in process): {warm['seconds']:.3f} s for {r['texts']['questions']} questions"
    )
    return 0 if ok else 1


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--vs-library":
        return vs_library(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--per-size", type=int, default=40, help="SABER questions per scene size")
    ap.add_argument("--texts", type=int, default=600, help="captions to embed per model")
    ap.add_argument("--images", type=int, default=128, help="synthetic images to embed per model")
    ap.add_argument("--model", action="append", default=[], help="extra encoder ids (repeatable)")
    ap.add_argument("--tiny-only", action="store_true", help="skip real checkpoints")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    texts = saber_texts(args.per_size)[: args.texts]
    images = synthetic_images(args.images)
    tiny_root = Path(tempfile.mkdtemp(prefix="bindlab-tiny-"))
    opts = {"device": args.device, "dtype": args.dtype, "batch_size": args.batch_size}
    results = []
    plan = [(k, None if args.tiny_only else REAL[k]) for k in REAL] + [(None, m) for m in args.model]
    for kind, real in plan:
        enc, used = None, None
        for candidate in ([real] if real else []) + ([kind] if kind else []):
            try:
                eid = candidate if candidate == real else build_tiny(candidate, tiny_root / candidate)
                o = (
                    dict(opts)
                    if not eid.startswith(("st:", "minilm"))
                    else {"device": args.device, "batch_size": args.batch_size}
                )
                enc, used = load_encoder(eid, **o), eid
                break
            except (EncoderError, OSError) as e:
                print(f"[skip] {candidate}: {e}", file=sys.stderr)
        if enc is None:
            continue
        try:
            r = embedding_throughput(enc, texts, images)
        except Exception:  # report and go on to the next backend
            traceback.print_exc()
            continue
        r["kind"], r["id"] = kind or "extra", used
        results.append(r)
        img = r["image"] or {}
        print(
            f"{used:55s} text {r['text']['items_per_s']:>9} items/s peak {r['text']['peak_gpu_mb']} MB | "
            f"image {img.get('items_per_s', '-'):>9} items/s peak {img.get('peak_gpu_mb', '-')} MB",
            flush=True,
        )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())
