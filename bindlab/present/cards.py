"""Cards to show elsewhere: the Browse question and the Pairs pair on screen as one picture, in SVG and PNG.

A card is laid out once, as a list of boxes, texts and images placed in pixels (:class:`Card`, pure: a view dict
in, a card out), and drawn twice from that one layout: as SVG text (:func:`card_svg`) and as a PNG drawn with PIL
(:func:`card_png`). Drawing the PNG with PIL rather than rendering the SVG in a browser keeps it in-process (no
Chromium, no kaleido, a few milliseconds) and makes both files show the same lines: captions are wrapped once, by
the PNG's font metrics, and the SVG places the same lines.

Every text on a card is text, never markup: ids, captions, roles and model ids can come from a visitor's file or
typing, so the SVG escapes each one (``& < > " '``) and drops the characters XML does not allow; the PNG draws the
same cleaned characters. A text is cut at :data:`MAX_CHARS` characters and a caption at :data:`MAX_LINES` lines, so a
hostile file cannot make a card of any size.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass, field
from functools import cache
from html import escape
from pathlib import Path
from typing import Any

from bindlab.present import numbers

WIDTH = 880  # px of the card; the PNG is drawn PNG_SCALE times larger (sharp on a projector or a slide)
PNG_SCALE = 2
PAD = 16
MAX_CHARS = 400  # characters of one text on a card
MAX_LINES = 4  # lines of one wrapped caption
THUMB = 112  # px of a candidate's image box (Browse)
PAIR_IMAGE = 240  # px of each image of a pair
FONT_FAMILY = "DejaVu Sans, Verdana, Arial, sans-serif"
GREEN, RED, GREY, INK, LINE = "#2ca02c", "#c0392b", "#666666", "#111111", "#cccccc"
ROLE_LABELS = {
    "preserve": "preserve ✓",
    "attr_swap": "attribute swap",
    "obj_swap": "object swap",
    "joint_swap": "joint swap",
    "replace": "replace one",
}
# XML 1.0 allows tab, newline, carriage return and the characters from U+0020 on (less surrogates, FFFE, FFFF)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_FONT_FILES = {
    False: ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVuSans.ttf"),
    True: ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", "DejaVuSans-Bold.ttf"),
}


@dataclass(frozen=True)
class Text:
    """One line of text; ``y`` is its baseline; ``anchor`` "start" or "end" (``x`` is then its right edge)."""

    x: float
    y: float
    text: str
    size: int = 14
    bold: bool = False
    colour: str = INK
    anchor: str = "start"


@dataclass(frozen=True)
class Box:
    """A rectangle (rounded by ``radius``)."""

    x: float
    y: float
    w: float
    h: float
    fill: str = "none"
    stroke: str = LINE
    stroke_width: float = 1.0
    radius: float = 6.0


@dataclass(frozen=True)
class Picture:
    """An image file drawn inside the box (x, y, w, h), keeping its aspect ratio; a missing file draws nothing."""

    x: float
    y: float
    w: float
    h: float
    path: str


@dataclass
class Card:
    """A laid-out card: its size in px and what is drawn, in order."""

    width: int
    height: int
    items: list[Text | Box | Picture] = field(default_factory=list)
    title: str = ""

    def texts(self) -> list[str]:
        """Every text drawn, in order (what a reader of the card sees)."""
        return [t.text for t in self.items if isinstance(t, Text)]


def clean(value: Any) -> str:
    """``value`` as one line of card text: characters XML does not allow dropped, line breaks and tabs made spaces,
    cut at :data:`MAX_CHARS` characters."""
    text = _NOT_XML.sub("", str(value))
    text = re.sub(r"[\t\r\n]+", " ", text)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


# --- fonts and wrapping: the PNG's metrics decide the lines of both files -------------------------------------------
@cache
def font(size: int, bold: bool = False) -> Any:
    """A PIL font of ``size`` px: DejaVu Sans where the system has it, else Pillow's own scalable default."""
    from PIL import ImageFont

    for name in _FONT_FILES[bold]:
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)


def text_width(text: str, size: int, bold: bool = False) -> float:
    """Width in px of ``text`` drawn at ``size`` (the PNG's font)."""
    return float(font(size, bold).getlength(text))


def wrap(text: str, width: float, size: int = 14, bold: bool = False, max_lines: int = MAX_LINES) -> list[str]:
    """``text`` broken into lines no wider than ``width`` px, between words (a word wider than a line is cut); at most
    ``max_lines`` lines, the last ending in "…" when text was left out."""
    words, lines, line = clean(text).split(" "), [], ""
    for word in words:
        while text_width(word, size, bold) > width:  # a word wider than the line: cut it where it fills the line
            cut = max(1, next((k for k in range(len(word), 0, -1) if text_width(word[:k], size, bold) <= width), 1))
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:cut])
            word = word[cut:]
        trial = f"{line} {word}" if line else word
        if line and text_width(trial, size, bold) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    lines.append(line)
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        while last and text_width(last + " …", size, bold) > width:
            last = last[:-1]
        lines = [*lines[: max_lines - 1], last.rstrip() + " …"]
    return lines


def _paragraph(
    items: list[Any], x: float, y: float, text: str, width: float, size: int = 14, bold: bool = False, colour: str = INK
) -> float:
    """Add ``text`` wrapped to ``width`` with its first baseline at ``y``; returns the baseline after the last line."""
    step = round(size * 1.35)
    for line in wrap(text, width, size, bold):
        items.append(Text(x, y, line, size, bold, colour))
        y += step
    return y


# --- the two cards ----------------------------------------------------------------------------------------------------
def question_card(view: dict[str, Any], model: str, pairing: str, verdict: str = "") -> Card:
    """The Browse question as a card: the query (and its image), each candidate with its role, score, rank, bindings
    kept and image, the answer framed in green; the margin and the verdict at the foot.

    Args:
        view: :func:`bindlab.studies.browse.question_view`'s dict.
        model: the encoder id that scored it.
        pairing: the pairing (tt, ti, it, ii).
        verdict: the verdict as the tab words it (e.g. "correct", "wrong"); "" leaves it out.
    """
    items: list[Any] = []
    inner = WIDTH - 2 * PAD
    y = PAD + 14
    items.append(Text(PAD, y, clean(f"bindlab · Browse · {model} · pairing {pairing}"), 12, colour=GREY))
    y += 26
    q = view["query"]
    items.append(Text(PAD, y, clean(f"Query · {view['id']} · N={view['n_objects']} · {view['subset']}"), 16, True))
    y += 8
    top = y
    has_q_image = bool(q.get("image"))
    text_x = PAD + (THUMB + 12 if has_q_image else 0)
    y = _paragraph(items, text_x, y + 18, q["text"], inner - (text_x - PAD), 16)
    if has_q_image:
        items.append(Picture(PAD, top + 4, THUMB, THUMB, str(q["image"])))
        y = max(y, top + THUMB + 14)
    y += 6
    scores = [c["score"] for c in view["candidates"]]
    ranks, digits = numbers.shared_ranks(scores), numbers.tie_digits(scores)
    for k, c in enumerate(view["candidates"]):
        y = _candidate(items, y, k, c, ranks[k], digits)
    items.append(
        Text(
            PAD,
            y + 18,
            clean(
                f"Margin (preserve − best other): {numbers.margin(view['margin'])}"
                + (f" → {verdict}" if verdict else "")
            ),
            15,
            True,
        )
    )
    return Card(WIDTH, int(y + 18 + PAD), items, title=clean(view["id"]))


def _candidate(items: list[Any], y: float, k: int, c: dict[str, Any], rank: str, digits: int) -> float:
    """One candidate's box from ``y``; returns the y below it."""
    inner = WIDTH - 2 * PAD
    has_image = bool(c.get("image"))
    text_x = PAD + 10 + (THUMB + 12 if has_image else 0)
    lines = wrap(c["text"], WIDTH - PAD - 10 - text_x, 14)
    height = max(28 + 19 * len(lines) + 6, THUMB + 16 if has_image else 0)
    answer = bool(c["is_answer"])
    items.append(
        Box(
            PAD,
            y,
            inner,
            height,
            fill="#eef8ee" if answer else "white",
            stroke=GREEN if answer else LINE,
            stroke_width=2.0 if answer else 1.0,
        )
    )
    if has_image:
        items.append(Picture(PAD + 8, y + 8, THUMB, THUMB, str(c["image"])))
    role = ROLE_LABELS.get(c["role"], c["role"])
    items.append(Text(text_x, y + 20, clean(f"{k + 1}. {role}"), 14, True))
    tie = " (tie)" if rank.startswith("=") else ""
    kept = c.get("kept") or []
    items.append(
        Text(
            WIDTH - PAD - 10,
            y + 20,
            clean(
                f"score {numbers.score(c['score'], digits)} · rank {rank}{tie} · bindings kept {sum(kept)}/{len(kept)}"
            ),
            13,
            colour=GREY,
            anchor="end",
        )
    )
    ty = y + 40
    for line in lines:
        items.append(Text(text_x, ty, line, 14))
        ty += 19
    return y + height + 8


def pair_card(view: dict[str, Any], model: str) -> Card:
    """The Pairs pair as a card: its two images with their captions, the 2x2 scores (rows = captions, columns =
    images, each caption's own image shaded) and the I2T / T2I / Group verdicts with the margin.

    Args:
        view: :func:`bindlab.studies.pairs.pair_view`'s dict.
        model: the encoder id that scored it.
    """
    items: list[Any] = []
    y = PAD + 14
    items.append(Text(PAD, y, clean(f"bindlab · Pairs · {model}"), 12, colour=GREY))
    y += 26
    items.append(
        Text(
            PAD,
            y,
            clean(
                f"{view['id']} · scene {view['scene_id']} · edit type {view['edit_type']} "
                f"({view['edit_category']}) · caption level {view['verbosity']}"
            ),
            16,
            True,
        )
    )
    if view.get("edit"):
        y = _paragraph(items, PAD, y + 22, view["edit"], WIDTH - 2 * PAD, 13, colour=GREY) - 19
    y += 14
    col = (WIDTH - 3 * PAD) / 2
    bottom = y
    for j, (side, name) in enumerate(((view["base"], "base"), (view["foil"], "foil"))):
        x = PAD + j * (col + PAD)
        items.append(Box(x, y, col, PAIR_IMAGE + 8, fill="#fafafa"))
        items.append(Picture(x + (col - PAIR_IMAGE) / 2, y + 4, PAIR_IMAGE, PAIR_IMAGE, str(side["image"])))
        items.append(Text(x, y + PAIR_IMAGE + 30, f"i{j} {name} image · c{j} {name} caption", 13, True, GREY))
        bottom = max(bottom, _paragraph(items, x, y + PAIR_IMAGE + 50, side["caption"], col, 14))
    y = bottom + 6
    y = _matrix(items, y, view)
    marks = [("I2T", view["i2t"]), ("T2I", view["t2i"]), ("Group", view["group"])]
    x = PAD
    for name, ok in marks:
        label = f"{name} {'pass' if ok else 'fail'}"
        items.append(Text(x, y + 20, label, 15, True, GREEN if ok else RED))
        x += text_width(label, 15, True) + 22
    items.append(Text(x, y + 20, clean(f"margin {numbers.margin(view['margin'], tol=0.0)}"), 15, True))
    return Card(WIDTH, int(y + 20 + PAD + 4), items, title=clean(view["id"]))


def _matrix(items: list[Any], y: float, view: dict[str, Any]) -> float:
    """The 2x2 score table from ``y``; returns the y below it."""
    s = view["scores"]
    label_w, cell_w, row_h = 150, 130, 28
    x0 = PAD
    for i, name in enumerate(("i0 base image", "i1 foil image")):
        items.append(Text(x0 + label_w + i * cell_w + 12, y + 18, name, 13, True, GREY))
    y += 26
    for c in (0, 1):
        items.append(Text(x0, y + 19, f"c{c} {'base' if c == 0 else 'foil'} caption", 13, True))
        for i in (0, 1):
            x = x0 + label_w + i * cell_w
            items.append(Box(x, y, cell_w, row_h, fill="#eef6ee" if c == i else "white", radius=0))
            items.append(Text(x + 12, y + 19, numbers.score(s[f"c{c}_i{i}"]), 14, c == i))
        y += row_h
    return y + 8


# --- drawing ----------------------------------------------------------------------------------------------------------
def _thumbnail(path: str, w: float, h: float, scale: int = 1) -> Any:
    """The image at ``path`` scaled to fit w x h (times ``scale``), RGB; None when it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            ratio = min(w * scale / im.width, h * scale / im.height)  # up or down: small renders fill their box
            return im.resize((max(1, round(im.width * ratio)), max(1, round(im.height * ratio))), Image.LANCZOS)
    except (OSError, UnidentifiedImageError, ValueError):
        return None


def card_svg(card: Card) -> str:
    """The card as a standalone SVG document (images embedded as PNG data, every text escaped)."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{card.width}" height="{card.height}" '
        f'viewBox="0 0 {card.width} {card.height}" font-family="{FONT_FAMILY}">',
        f"<title>{escape(clean(card.title))}</title>" if card.title else "",
        f'<rect width="{card.width}" height="{card.height}" fill="white"/>',
    ]
    for it in card.items:
        if isinstance(it, Box):
            out.append(
                f'<rect x="{it.x:.1f}" y="{it.y:.1f}" width="{it.w:.1f}" height="{it.h:.1f}" rx="{it.radius:g}" '
                f'fill="{it.fill}" stroke="{it.stroke}" stroke-width="{it.stroke_width:g}"/>'
            )
        elif isinstance(it, Text):
            weight = ' font-weight="bold"' if it.bold else ""
            out.append(
                f'<text x="{it.x:.1f}" y="{it.y:.1f}" font-size="{it.size}"{weight} fill="{it.colour}" '
                f'text-anchor="{"end" if it.anchor == "end" else "start"}" xml:space="preserve">'
                f"{escape(clean(it.text), quote=True)}</text>"
            )
        elif isinstance(it, Picture):
            im = _thumbnail(it.path, it.w, it.h, PNG_SCALE)
            if im is None:
                continue
            buf = io.BytesIO()
            im.save(buf, format="PNG")
            w, h = im.width / PNG_SCALE, im.height / PNG_SCALE
            data = base64.b64encode(buf.getvalue()).decode("ascii")
            out.append(
                f'<image x="{it.x + (it.w - w) / 2:.1f}" y="{it.y + (it.h - h) / 2:.1f}" width="{w:.1f}" '
                f'height="{h:.1f}" href="data:image/png;base64,{data}"/>'
            )
    out.append("</svg>")
    return "\n".join(s for s in out if s)


def card_image(card: Card, scale: int = PNG_SCALE) -> Any:
    """The card drawn with PIL, ``scale`` times its size in px (a ``PIL.Image``, RGB)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (card.width * scale, card.height * scale), "white")
    draw = ImageDraw.Draw(img)
    for it in card.items:
        if isinstance(it, Box):
            box = [it.x * scale, it.y * scale, (it.x + it.w) * scale, (it.y + it.h) * scale]
            draw.rounded_rectangle(
                box,
                radius=it.radius * scale,
                fill=None if it.fill == "none" else it.fill,
                outline=it.stroke,
                width=max(1, round(it.stroke_width * scale)),
            )
        elif isinstance(it, Text):
            draw.text(
                (it.x * scale, it.y * scale),
                clean(it.text),
                fill=it.colour,
                font=font(it.size * scale, it.bold),
                anchor="rs" if it.anchor == "end" else "ls",
            )
        elif isinstance(it, Picture):
            im = _thumbnail(it.path, it.w, it.h, scale)
            if im is not None:
                img.paste(
                    im,
                    (
                        round((it.x + (it.w - im.width / scale) / 2) * scale),
                        round((it.y + (it.h - im.height / scale) / 2) * scale),
                    ),
                )
    return img


def card_png(card: Card, scale: int = PNG_SCALE) -> bytes:
    """The card as PNG bytes (:func:`card_image`)."""
    buf = io.BytesIO()
    card_image(card, scale).save(buf, format="PNG")
    return buf.getvalue()


def write_card(card: Card, folder: str | Path, stem: str) -> list[Path]:
    """Write ``<stem>.png`` and ``<stem>.svg`` into ``folder``; returns their paths (PNG first). ``stem`` is made a
    safe file name here (letters, digits, ``._-``)."""
    folder = Path(folder)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", clean(stem)).strip("._")[:80] or "card"
    png, svg = folder / f"{name}.png", folder / f"{name}.svg"
    png.write_bytes(card_png(card))
    svg.write_text(card_svg(card), encoding="utf-8")
    return [png, svg]
