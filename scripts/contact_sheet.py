"""Render a contact sheet of procedural SABER scenes for a visual check of the renderer.

Draws 12 questions (2-10 objects) with the SABER generator over the renderable vocabulary, renders each query
image and prints its caption underneath, in a 4 x 3 grid:

    python scripts/contact_sheet.py --seed 0 --out docs/contact_sheet.png
"""

from __future__ import annotations

import argparse
import random
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from bindlab.data.render import RENDER_VOCAB, ObjectSpec, render_scene  # noqa: E402
from bindlab.data.saber import generate_saber  # noqa: E402
from bindlab.data.schema import MCQ  # noqa: E402


def query_objects(q: MCQ) -> list[ObjectSpec]:
    """The query's bindings as renderable objects, each with its question-wide generation form."""
    forms = q.extra.get("realisations", {})
    return [ObjectSpec(obj, attr, forms.get(attr, "")) for attr, obj in q.query.bindings]


def _wrap(text: str, draw: ImageDraw.ImageDraw, font: ImageFont.ImageFont, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if draw.textlength(trial, font=font) <= width or not line:
            line = trial
        else:
            lines.append(line)
            line = word
    return lines + [line]


def contact_sheet(seed: int = 0, size: int = 256, cols: int = 4, rows: int = 3) -> Image.Image:
    """A ``cols`` x ``rows`` grid of query images with their captions, 2..10 objects each."""
    questions = generate_saber(per_size=4, sizes=range(2, 11), seed=seed, vocab=RENDER_VOCAB)
    rng = random.Random(seed)
    by_size = {n: [q for q in questions if q.n_objects == n and q.subset == "independent"] for n in range(2, 11)}
    picked = [rng.choice(qs) for qs in by_size.values()]  # every size once ...
    rest = [q for q in questions if q not in picked and q.subset == "independent"]
    picked += rng.sample(rest, cols * rows - len(picked))  # ... then random extras
    picked.sort(key=lambda q: q.n_objects)
    font = ImageFont.load_default(size=12)
    caption_h = 78
    sheet = Image.new("RGB", (cols * (size + 8) + 8, rows * (size + caption_h + 8) + 8), "white")
    draw = ImageDraw.Draw(sheet)
    for k, q in enumerate(picked):
        x = 8 + (k % cols) * (size + 8)
        y = 8 + (k // cols) * (size + caption_h + 8)
        sheet.paste(render_scene(query_objects(q), size=size, seed=zlib.crc32(q.id.encode())), (x, y))
        for i, line in enumerate(_wrap(f"[{q.n_objects}] {q.query.text}", draw, font, size)[:5]):
            draw.text((x, y + size + 3 + 15 * i), line, fill="black", font=font)
    return sheet


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--out", default="docs/contact_sheet.png")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    contact_sheet(args.seed, args.size).save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
