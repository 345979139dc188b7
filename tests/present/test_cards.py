"""Cards (bindlab.present.cards): the Browse question and the Pairs pair as SVG and PNG, drawn from one layout.

Real views from the bundled sets and toy models; user text is text in the SVG (escaped, never markup); the PNG
decodes with PIL at the card's size times PNG_SCALE and shows its images."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from bindlab.present import cards

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script> & <img src=x onerror=alert(1)> \x00\x07 ]]>'


def _question_view(image: str | None = None, text: str = "A red cube and a blue sphere.") -> dict:
    cands = []
    for k, (role, score) in enumerate((("obj_swap", 0.91), ("preserve", 0.93), ("attr_swap", 0.5), ("replace", 0.2))):
        cands.append(
            {
                "role": role,
                "text": text if k != 2 else HOSTILE,
                "bindings": [],
                "kept": [k == 1, True],
                "score": score,
                "is_answer": role == "preserve",
                "image": image,
            }
        )
    return {
        "id": "n02-ind-007",
        "n_objects": 2,
        "subset": "independent",
        "query": {"text": "A red cube and a blue sphere.", "bindings": [], "image": image},
        "candidates": cands,
        "margin": 0.02,
        "credit": 1.0,
    }


def _svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)  # well-formed XML, whatever the texts held
    return [t.text or "" for t in root.iter(f"{NS}text")]


def test_question_card_svg_has_every_text_escaped_and_no_markup_from_the_data():
    card = cards.question_card(_question_view(), "minilm", "tt", "correct")
    svg = cards.card_svg(card)
    assert "<script" not in svg and "<img" not in svg and "onerror=alert(1)>" not in svg
    assert "&lt;script&gt;" in svg and "\x00" not in svg and "\x07" not in svg
    texts = " ".join(_svg_texts(svg))
    for shown in (
        "Query · n02-ind-007 · N=2 · independent",
        "2. preserve ✓",
        "score 0.930 · rank 1",
        "bindings kept 2/2",
        "Margin (preserve − best other): +0.020 → correct",
        '<script>alert("x")',
    ):
        assert shown in texts, shown
    assert card.texts() == _svg_texts(svg)  # the PNG draws the same lines


def test_question_card_png_decodes_at_the_cards_size():
    card = cards.question_card(_question_view(), "minilm", "tt")
    png = cards.card_png(card)
    with Image.open(io.BytesIO(png)) as im:
        assert im.format == "PNG"
        assert im.size == (card.width * cards.PNG_SCALE, card.height * cards.PNG_SCALE)
    assert card.width == cards.WIDTH and 300 < card.height < 1200


def test_a_long_caption_wraps_within_the_card_and_stops_at_max_lines():
    card = cards.question_card(_question_view(text="word " * 400), "minilm", "tt")
    lines = [t for t in card.items if isinstance(t, cards.Text) and t.text.startswith("word")]
    assert lines and all(cards.text_width(t.text, t.size) <= cards.WIDTH - 2 * cards.PAD for t in lines)
    assert len(lines) == 3 * cards.MAX_LINES and lines[cards.MAX_LINES - 1].text.endswith("…")
    long_word = cards.wrap("x" * 500, 200)
    assert len(long_word) == cards.MAX_LINES and all(cards.text_width(w, 14) <= 200 for w in long_word)


def test_pair_card_from_the_bundled_set_shows_images_scores_and_verdicts(tmp_path):
    from bindlab.studies import pairs

    s = pairs.scored_pairs(str(pairs.default_pairs_dataset()), "toy:clip", "all")
    pid = pairs.filter_pairs(s)[0]
    view = pairs.pair_view(s, pid)
    card = cards.pair_card(view, "toy:clip")
    png, svg = cards.write_card(card, tmp_path, f"{pid}_card")
    assert (png.name, svg.name) == (f"{pid}_card.png", f"{pid}_card.svg")
    texts = " ".join(_svg_texts(svg.read_text()))
    for k in ("c0_i0", "c0_i1", "c1_i0", "c1_i1"):
        assert f"{view['scores'][k]:.3f}" in texts
    for name, ok in (("I2T", view["i2t"]), ("T2I", view["t2i"]), ("Group", view["group"])):
        assert f"{name} {'pass' if ok else 'fail'}" in texts
    assert view["base"]["caption"] in texts and view["foil"]["caption"] in texts
    root = ET.fromstring(svg.read_text())
    images = [i for i in root.iter(f"{NS}image") if i.get("href", "").startswith("data:image/png;base64,")]
    assert len(images) == 2
    with Image.open(png) as im:
        assert im.size == (card.width * cards.PNG_SCALE, card.height * cards.PNG_SCALE)
        # the base image is drawn where its box is: not the white page there
        pic = next(p for p in card.items if isinstance(p, cards.Picture))
        centre = (int((pic.x + pic.w / 2) * cards.PNG_SCALE), int((pic.y + pic.h / 2) * cards.PNG_SCALE))
        assert im.convert("RGB").getpixel(centre) != (255, 255, 255)


def test_question_card_with_images_embeds_them(tmp_path):
    path = tmp_path / "q.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    svg = cards.card_svg(cards.question_card(_question_view(str(path)), "toy:clip", "ii"))
    assert svg.count("data:image/png;base64,") == 5  # the query and its four candidates
    missing = cards.card_svg(cards.question_card(_question_view(str(tmp_path / "gone.png")), "toy:clip", "ii"))
    assert "data:image" not in missing  # a file that cannot be read draws nothing, never an error


@pytest.mark.parametrize("stem, name", [("../../etc/passwd", "etc_passwd"), ("<b>", "b"), ("", "card")])
def test_file_names_are_safe(tmp_path, stem, name):
    png, svg = cards.write_card(cards.question_card(_question_view(), "bow", "tt"), tmp_path, stem)
    assert png == tmp_path / f"{name}.png" and svg.parent == tmp_path


def test_the_card_buttons_write_both_files():
    """What Browse's and Pairs' *Card as PNG / SVG* buttons run, on the bundled sets."""
    from bindlab.studies import pairs as pairs_study
    from bindlab.ui import browse, pairs

    files = browse.card_files("", "bow", "tt", "n02-ind-003")
    assert [f.rsplit("/", 1)[1] for f in files] == ["n02-ind-003_card.png", "n02-ind-003_card.svg"]
    assert "n02-ind-003" in open(files[1], encoding="utf-8").read()
    pid = pairs_study.filter_pairs(
        pairs_study.scored_pairs(str(pairs_study.default_pairs_dataset()), "toy:clip", "all")
    )[0]
    files = pairs.card_files("", "toy:clip", "all", "short", pid)
    with Image.open(files[0]) as im:
        assert im.format == "PNG"
