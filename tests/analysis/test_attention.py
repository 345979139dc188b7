"""Attention binding margins: hand-set attention against a hand computation, the direction rule, locating
bindings (hyphens, repeats, phrases), the free-text parser, real tiny models of every backend, and the CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bindlab.analysis.attention import (
    Caption,
    analyse_caption,
    binding_margin,
    load_caption_sets,
    locate_bindings,
    margin_ratio,
    margin_summary,
    parse_bindings,
    set_margins,
    unit_attention,
)
from bindlab.encoders.attention_access import WORD, EncodedText, TextAttentionAccess
from tests.cli_run import run


# --- a tiny attention "model" whose maps are set by hand --------------------------------------------------------
def chunk_encode(text: str) -> EncodedText:
    """[CLS] + every caption word cut into 3-character sub-tokens ("polka-dot" -> "pol", "ka-", "dot")."""
    tokens, spans = ["[CLS]"], [None]
    for m in WORD.finditer(text):
        for s in range(m.start(), m.end(), 3):
            e = min(s + 3, m.end())
            tokens.append(text[s:e])
            spans.append((s, e))
    return EncodedText(text, {}, tokens, spans, 1)


def hand_access(maps: list[np.ndarray], causal: bool = False) -> TextAttentionAccess:
    """An attention access that tokenizes with :func:`chunk_encode` and returns the given per-layer maps."""
    return TextAttentionAccess(
        "hand", None, len(maps), maps[0].shape[0], causal, encode=chunk_encode, layer_maps=lambda enc: iter(maps)
    )


CAPTION = Caption("a polka-dot cube and a red ball", (("polka-dot", "cube"), ("red", "ball")))
# Token positions under chunk_encode: 0 [CLS] | a 1 | polka-dot 2 3 4 | cube 5 6 | and 7 | a 8 | red 9 | ball 10 11
PD, CUBE, RED, BALL, SEQ = [2, 3, 4], [5, 6], [9], [10, 11], 12


def e(attn: np.ndarray, frm: list[int], to: list[int]) -> float:
    """Naive reference: mean over heads and over `frm` tokens of the summed attention to `to` tokens."""
    total = 0.0
    for h in range(attn.shape[0]):
        for i in frm:
            total += sum(attn[h, i, j] for j in to) / len(frm)
    return total / attn.shape[0]


def random_maps(layers: int = 3, heads: int = 2, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    maps = rng.random((layers, heads, SEQ, SEQ))
    return list(maps / maps.sum(-1, keepdims=True))


def test_tokenization_of_the_hand_model_is_what_the_test_assumes():
    enc = chunk_encode(CAPTION.text)
    assert enc.tokens[2:5] == ["pol", "ka-", "dot"] and enc.tokens[5:7] == ["cub", "e"] and len(enc.tokens) == SEQ


def test_margin_matches_hand_computation_later_to_earlier():
    maps = random_maps()
    got = analyse_caption(hand_access(maps), CAPTION).margins
    # cube (later) -> polka-dot is its own attribute; red is later than cube, so red -> cube; ball is later than both.
    want = [np.mean([e(a, CUBE, PD) - e(a, RED, CUBE), e(a, BALL, RED) - e(a, BALL, PD)]) for a in maps]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_margin_matches_hand_computation_earlier_to_later():
    maps = random_maps(seed=1)
    got = analyse_caption(hand_access(maps), CAPTION, "earlier_to_later").margins
    want = [np.mean([e(a, PD, CUBE) - e(a, CUBE, RED), e(a, RED, BALL) - e(a, PD, BALL)]) for a in maps]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_designed_maps_give_plus_and_minus_one():
    """Objects that look only at their own attribute give +1; looking only at the other attribute gives -1."""
    own = np.zeros((1, SEQ, SEQ))
    own[0, :, 0] = 1  # default: everything looks at [CLS]
    for i in CUBE:
        own[0, i] = 0
        own[0, i, PD] = 1 / 3  # spread over polka-dot's three sub-tokens: the sum is 1
    for i in BALL:
        own[0, i] = 0
        own[0, i, RED] = 1
    other = np.zeros((1, SEQ, SEQ))
    other[0, :, 0] = 1
    other[0, RED[0]] = 0
    other[0, RED[0], CUBE] = 0.5  # red -> cube is the cube-vs-other-attribute reading
    for i in BALL:
        other[0, i] = 0
        other[0, i, PD] = 1 / 3
    m = analyse_caption(hand_access([own, other]), CAPTION).margins
    np.testing.assert_allclose(m, [1.0, -1.0])


def test_direction_rule_predicative_phrasing_reads_attribute_to_object():
    cap = Caption("the cube is red and the ball is blue", (("red", "cube"), ("blue", "ball")))
    # tokens: 0 CLS | the 1 | cube 2 3 | is 4 | red 5 | and 6 | the 7 | ball 8 9 | is 10 | blue 11 12
    maps = list(np.random.default_rng(2).random((2, 2, 13, 13)))
    got = analyse_caption(hand_access(maps), cap).margins
    cube, red, ball, blue = [2, 3], [5], [8, 9], [11, 12]
    # cube: own red (red later) red->cube; other blue (later) blue->cube. ball: own blue->ball; other: ball->red.
    want = [np.mean([e(a, red, cube) - e(a, blue, cube), e(a, blue, ball) - e(a, ball, red)]) for a in maps]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_causal_model_refuses_earlier_to_later():
    with pytest.raises(ValueError, match="causal"):
        analyse_caption(hand_access(random_maps(), causal=True), CAPTION, "earlier_to_later")
    with pytest.raises(ValueError, match="direction"):
        analyse_caption(hand_access(random_maps()), CAPTION, "sideways")


def test_unit_attention_and_binding_margin_against_loops():
    rng = np.random.default_rng(5)
    attn = rng.random((3, 9, 9))
    sets = [[1, 2], [3], [4, 5, 6], [8]]
    w = unit_attention(attn, sets)
    for u, su in enumerate(sets):
        for v, sv in enumerate(sets):
            assert w[u, v] == pytest.approx(e(attn, su, sv))
    # one object only -> nothing to compare
    assert np.isnan(binding_margin(w, [0, 1, 2, 3], [(1, (0,))]))


def test_attribute_bundle_two_attributes_per_object():
    cap = Caption(
        "a prickly pixelated cube and a red ball", (("prickly", "cube"), ("pixelated", "cube"), ("red", "ball"))
    )
    # 0 CLS | a 1 | prickly 2 3 4 | pixelated 5 6 7 | cube 8 9 | and 10 | a 11 | red 12 | ball 13 14
    maps = list(np.random.default_rng(3).random((1, 2, 15, 15)))
    got = analyse_caption(hand_access(maps), cap).margins
    pr, px, cube, red, ball = [2, 3, 4], [5, 6, 7], [8, 9], [12], [13, 14]
    a = maps[0]
    want = np.mean(
        [
            np.mean([e(a, cube, pr), e(a, cube, px)]) - e(a, red, cube),
            e(a, ball, red) - np.mean([e(a, ball, pr), e(a, ball, px)]),
        ]
    )
    assert got[0] == pytest.approx(want, rel=1e-12)


# --- locating bindings ------------------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    return WORD.findall(text)


def test_locate_hyphenated_words_and_case():
    lay = locate_bindings(
        words("A Polka-Dot teddy-bear and a red cube."), [("polka-dot", "teddy-bear"), ("red", "cube")]
    )
    assert lay.labels == ("Polka-Dot", "teddy-bear", "red", "cube")
    assert lay.objects == ((1, (0,)), (3, (2,)))


def test_locate_repeated_attribute_and_repeated_object():
    lay = locate_bindings(words("a red cube and a red sphere"), [("red", "cube"), ("red", "sphere")])
    assert lay.units == ((1, 1), (2, 1), (5, 1), (6, 1)) and lay.objects == ((1, (0,)), (3, (2,)))
    lay = locate_bindings(words("a red cube and a blue cube"), [("red", "cube"), ("blue", "cube")])
    assert lay.units == ((1, 1), (2, 1), (5, 1), (6, 1)) and lay.objects == ((1, (0,)), (3, (2,)))


def test_locate_multiword_phrase_and_errors():
    lay = locate_bindings(words("a dark red cube and a blue ball"), [("dark red", "cube"), ("blue", "ball")])
    assert lay.units[0] == (1, 2) and lay.labels[0] == "dark red"
    with pytest.raises(ValueError, match="'green'.*not a word of the caption"):
        locate_bindings(words("a red cube and a blue ball"), [("green", "cube")])
    with pytest.raises(ValueError, match="already bound"):
        locate_bindings(words("a red cube and a blue ball"), [("red", "cube"), ("red", "ball")])


def test_parse_bindings():
    assert parse_bindings("red:cube, blue : sphere; dark red:ball") == [
        ("red", "cube"),
        ("blue", "sphere"),
        ("dark red", "ball"),
    ]
    for bad, msg in [
        ("", "no bindings"),
        ("red cube", "#1 'red cube' is not attribute:object"),
        ("red:cube, blue:", "#2"),
        ("a:b:c", "#1"),
    ]:
        with pytest.raises(ValueError, match=re.escape(msg)):
            parse_bindings(bad)


def test_set_margins_skips_unlocatable_captions_with_reason():
    maps = random_maps()
    caps = [CAPTION, Caption("a red ball", (("green", "ball"),)), Caption("a red ball", (("red", "ball"),))]
    r = set_margins(hand_access(maps), "t", caps)
    assert set(r.skipped) == {1, 2} and "not a word" in r.skipped[1] and "fewer than two objects" in r.skipped[2]
    s = r.summary(n_boot=50)
    assert s["n_captions"] == 1 and s["n_skipped"] == 2 and len(s["margin_mean"]) == 3


def test_summary_and_ratio():
    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.1, (200, 4))
    s = margin_summary(base, n_boot=200)
    assert all(lo <= m <= hi for lo, m, hi in zip(s["ci_low"], s["margin_mean"], s["ci_high"], strict=True))
    r = margin_ratio(base, 2 * base, n_boot=200)
    np.testing.assert_allclose(r["ratio"], 2.0, rtol=1e-5)
    with pytest.raises(ValueError, match="same number of layers"):
        margin_ratio(base, base[:, :3])


def test_load_caption_sets_formats(tmp_path, small_benchmark):
    path, qs = small_benchmark
    sets = load_caption_sets(path, limit=5)
    assert list(sets) == ["queries"] and [c.text for c in sets["queries"]] == [q.query.text for q in qs[:5]]
    cap = tmp_path / "caps.jsonl"
    cap.write_text(
        json.dumps({"text": "a red cube and a blue ball", "bindings": "red:cube, blue:ball"})
        + "\n"
        + json.dumps({"text": "x", "bindings": [["a", "b"]]})
        + "\n"
    )
    assert load_caption_sets(cap)["captions"][0].bindings == (("red", "cube"), ("blue", "ball"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"foo": 1}) + "\n")
    with pytest.raises(ValueError, match="not an MCQ, triplets or captions file"):
        load_caption_sets(bad)


def test_triplet_file_gives_queries_and_positives(tmp_path):
    from bindlab.data.triplets import generate_triplets, write_triplets

    rows, stats = generate_triplets(6, seed=1)
    paths = write_triplets(tmp_path, rows, stats)
    sets = load_caption_sets(paths["triplets"])
    assert list(sets) == ["queries", "positives"]
    assert len(sets["queries"]) == len({r["query"] for r in rows})
    assert all(len(p.text) > len(q.text) for q, p in zip(sets["queries"], sets["positives"], strict=True))


# --- real models: MiniLM and a tiny random model of every backend ------------------------------------------------
@pytest.mark.parametrize("direction", ["later_to_earlier", "earlier_to_later"])
def test_binding_margin_equals_its_definition(direction):
    """The linear form (margin_weights) against the definition: mean over objects of mean own − mean other."""
    from bindlab.analysis.attention import pair_attention

    rng = np.random.default_rng(11)
    w = rng.random((7, 7))
    positions = [0, 1, 2, 3, 4, 5, 6]
    objects = [(1, (0,)), (3, (2, 6)), (5, (4,))]  # object 3 has an attribute before it and one after it
    want = []
    for k, (obj, own) in enumerate(objects):
        other = [a for j, (_, attrs) in enumerate(objects) if j != k for a in attrs]
        want.append(
            np.mean([pair_attention(w, positions, obj, a, direction) for a in own])
            - np.mean([pair_attention(w, positions, obj, a, direction) for a in other])
        )
    assert binding_margin(w, positions, objects, direction) == pytest.approx(np.mean(want), abs=1e-12)


def test_caption_margins_equal_the_layer_by_layer_formula(minilm):
    """analyse_caption folds pooling and margin into one token-level weight map; per layer it must agree with
    unit_attention followed by binding_margin."""
    from bindlab.analysis.attention import attention_access, locate_bindings
    from bindlab.encoders.attention_access import align_words

    acc = attention_access(minilm)
    cap = Caption(
        "A polka-dot teddy-bear, a red cube, and a striped yo-yo.",
        (("polka-dot", "teddy-bear"), ("red", "cube"), ("striped", "yo-yo")),
    )
    got = analyse_caption(acc, cap).margins
    enc = acc.encode(cap.text)
    words = align_words(cap.text, enc.char_spans)
    layout = locate_bindings([x.word for x in words], cap.bindings)
    sets = [sorted({t for x in words[i : i + n] for t in x.token_indices}) for i, n in layout.units]
    want = [
        binding_margin(unit_attention(attn, sets), layout.positions, layout.objects) for attn in acc.layer_maps(enc)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_minilm_curve_and_both_directions(minilm):
    from bindlab.analysis.attention import attention_access

    acc = attention_access(minilm)
    cap = Caption(
        "A polka-dot teddy-bear, a red cube, and a striped yo-yo.",
        (("polka-dot", "teddy-bear"), ("red", "cube"), ("striped", "yo-yo")),
    )
    a = analyse_caption(acc, cap, with_words=True)
    b = analyse_caption(acc, cap, "earlier_to_later")
    assert a.margins.shape == b.margins.shape == (6,) and np.isfinite(a.margins).all()
    assert not np.allclose(a.margins, b.margins)  # bidirectional: the two directions differ
    w = a.word_attn
    assert w.shape == (6, len(a.words), len(a.words))
    assert len(a.words[1].token_indices) > 1  # "polka-dot" is several word pieces
    # rows are "from" words: each word's attention sums to <= 1 over the caption words ([CLS]/[SEP] take the rest)
    assert (w.sum(-1) <= 1 + 1e-5).all()


def test_bow_has_no_attention():
    from bindlab.analysis.attention import attention_access
    from bindlab.encoders.base import EncoderError, load_encoder

    with pytest.raises(EncoderError, match="no text transformer"):
        attention_access(load_encoder("bow"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("tiny-attn")
    cache: dict[str, object] = {}

    def get(kind: str):
        if kind not in cache:
            cache[kind] = load_encoder(build_tiny(kind, root / kind), device="cpu")
        return cache[kind]

    return get


@pytest.mark.parametrize(
    "kind,causal", [("hf-clip", True), ("hf-siglip", False), ("open-clip", True), ("qwen3vl", True), ("st", False)]
)
def test_tiny_models_give_a_curve_per_layer(tiny, kind, causal):
    from bindlab.analysis.attention import attention_access
    from bindlab.encoders.tiny import LAYERS

    acc = attention_access(tiny(kind))
    assert acc.causal is causal
    caps = [
        Caption("a red cube and a blue ball", (("red", "cube"), ("blue", "ball"))),
        Caption(
            "a striped cat, a wooden chair, and a green bird",
            (("striped", "cat"), ("wooden", "chair"), ("green", "bird")),
        ),
    ]
    r = set_margins(acc, "t", caps)
    assert r.margins.shape == (2, LAYERS) and not r.skipped and np.isfinite(r.margins).all()
    assert np.abs(r.margins).max() > 0  # random weights still prefer something
    if kind == "qwen3vl":
        # chat template: the caption's words sit inside the templated prompt, after the system turn
        enc = acc.encode(caps[0].text)
        res = analyse_caption(acc, caps[0], with_words=True)
        red = next(w for w in res.words if w.word == "red")
        assert enc.token_offset > 5 and min(red.token_indices) > enc.token_offset
        assert "".join(enc.tokens[i] for i in red.token_indices).replace("Ġ", "") == "red"


def test_cli_prints_per_layer_margins_for_minilm(tmp_path, small_benchmark):
    """The ``attention`` command: per-layer margins for MiniLM on a generated MCQ file, with results JSON."""
    path, _ = small_benchmark
    out = tmp_path / "res.json"
    proc = run("attention", "--model", "minilm", "--data", path, "--limit", "10", "--out", out, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "layer  0:" in proc.stdout and "layer  5:" in proc.stdout and "10 captions" in proc.stdout
    res = json.loads(out.read_text())
    assert res["model"] == "st:all-MiniLM-L6-v2" and res["direction"] == "later_to_earlier"
    assert res["n_captions"] == 10 and res["layers"] == list(range(6))
    assert len(res["margin_mean"]) == len(res["ci_low"]) == len(res["ci_high"]) == 6
    assert all(lo <= m <= hi for lo, m, hi in zip(res["ci_low"], res["margin_mean"], res["ci_high"], strict=True))
    assert res["provenance"]["encoder"]["id"] == "st:all-MiniLM-L6-v2" and res["provenance"]["dataset"]["sha256"]
    printed = [float(x) for x in re.findall(r"layer +\d+: ([+-]\d\.\d{4})", proc.stdout)]
    np.testing.assert_allclose(printed, res["margin_mean"], atol=6e-5)


def test_compare_gives_per_layer_ratio(tiny, small_benchmark):
    from bindlab.analysis.attention import results_json, run_attention

    sets = load_caption_sets(small_benchmark[0], limit=8)
    a, b = tiny("hf-clip"), tiny("qwen3vl")
    ra, rb = run_attention(a, sets), run_attention(b, sets)
    res = results_json(a, ra, "later_to_earlier", (b, rb), n_boot=100)
    want = rb["queries"].margins.mean(0) / ra["queries"].margins.mean(0)
    np.testing.assert_allclose(res["ratio"], want, rtol=1e-4)
    assert res["compare"]["model"] == b.id and res["compare"]["sets"]["queries"]["n_captions"] == 8


def test_cli_errors_are_one_line(tmp_path, small_benchmark):
    path, _ = small_benchmark
    for args, msg in [
        (["--model", "bow"], "no text transformer"),
        (["--model", "minilm", "--data", str(tmp_path / "nope.jsonl")], "file not found"),
    ]:
        proc = run("attention", "--data", path, *args, check=False)
        assert proc.returncode == 2 and msg in proc.stderr and "Traceback" not in proc.stderr


def test_binding_cells_follow_the_direction_rule():
    from bindlab.analysis.attention import binding_cells

    lay = locate_bindings(words("the cube is red and the ball is blue"), [("red", "cube"), ("blue", "ball")])
    # words: the0 cube1 is2 red3 and4 the5 ball6 is7 blue8
    assert binding_cells(lay) == [(3, 1, True), (6, 3, False), (8, 1, False), (8, 6, True)]
    assert binding_cells(lay, "earlier_to_later") == [(1, 3, True), (1, 8, False), (3, 6, False), (6, 8, True)]


@pytest.mark.parametrize("n_layers,deep", [(1, [0]), (2, [1]), (3, [2]), (6, [4, 5]), (12, [8, 9, 10, 11])])
def test_deep_layers_are_the_last_third(n_layers, deep):
    from bindlab.analysis.attention import deep_layers

    assert deep_layers(n_layers) == deep


def test_margin_difference_is_paired_over_captions_valid_in_both():
    from bindlab.analysis.attention import margin_difference
    from bindlab.eval.metrics import bootstrap_ci

    rng = np.random.default_rng(4)
    base, other = rng.normal(size=(30, 6)), rng.normal(size=(30, 6))
    base[3, 2], other[7, 0] = np.nan, np.nan  # skipped captions drop out of both sides
    res = margin_difference(base, other, n_boot=300, seed=1)
    keep = [i for i in range(30) if i not in (3, 7)]
    d = other[keep] - base[keep]
    assert res["n_captions"] == 28 and res["layers"] == list(range(6))
    for layer in range(6):
        assert res["diff_mean"][layer] == pytest.approx(np.mean([d[i, layer] for i in range(28)]), abs=1e-6)
        lo, hi = bootstrap_ci(d[:, layer], n_boot=300, seed=1)
        assert (res["ci_low"][layer], res["ci_high"][layer]) == pytest.approx((lo, hi), abs=1e-6)
    assert res["last"]["mean"] == res["diff_mean"][-1] and res["last"]["layer"] == 5
    assert res["deep"]["layers"] == [4, 5]
    assert res["deep"]["mean"] == pytest.approx(np.mean([(d[i, 4] + d[i, 5]) / 2 for i in range(28)]), abs=1e-6)
    same = margin_difference(base, base)
    assert same["diff_mean"] == [0.0] * 6 and same["deep"]["ci_high"] == 0.0
    with pytest.raises(ValueError, match="same number of layers"):
        margin_difference(base, other[:, :4])


# --- per-head margins and the depth axis ------------------------------------------------------------------------
def test_head_margins_are_each_heads_margin_and_average_to_the_layer_margin():
    from bindlab.analysis.attention import head_margins

    rng = np.random.default_rng(7)
    attn = rng.random((4, 9, 9))  # (heads, seq, seq)
    sets, positions, objects = [[1, 2], [3], [4, 5, 6], [8]], [0, 1, 2, 3], [(1, (0,)), (3, (2,))]
    got = head_margins(attn, sets, positions, objects)
    want = [binding_margin(unit_attention(attn[h : h + 1], sets), positions, objects) for h in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    layer_margin = binding_margin(unit_attention(attn, sets), positions, objects)
    assert got.mean() == pytest.approx(layer_margin, rel=1e-12)
    assert np.isnan(head_margins(attn, sets, positions, [(1, (0,))])).all()  # one object: nothing to compare


@pytest.mark.parametrize("direction", ["later_to_earlier", "earlier_to_later"])
def test_caption_head_margins_mean_equals_the_existing_margin(direction):
    maps = random_maps(layers=3, heads=4, seed=3)
    plain = analyse_caption(hand_access(maps), CAPTION, direction)
    r = analyse_caption(hand_access(maps), CAPTION, direction, per_head=True)
    assert r.head_margins.shape == (3, 4)
    np.testing.assert_array_equal(r.margins, plain.margins)  # asking for heads changes no existing number
    np.testing.assert_allclose(r.head_margins.mean(axis=1), plain.margins, rtol=1e-12)
    # head 2 alone is the margin of a model whose only head is head 2
    solo = analyse_caption(hand_access([a[2:3] for a in maps]), CAPTION, direction).margins
    np.testing.assert_allclose(r.head_margins[:, 2], solo, rtol=1e-12)


def test_word_head_keeps_that_heads_word_attention():
    maps = random_maps(layers=2, heads=3, seed=4)
    mean = analyse_caption(hand_access(maps), CAPTION, with_words=True).word_attn
    one = analyse_caption(hand_access(maps), CAPTION, with_words=True, word_head=1).word_attn
    solo = analyse_caption(hand_access([a[1:2] for a in maps]), CAPTION, with_words=True).word_attn
    np.testing.assert_allclose(one, solo, rtol=1e-12)
    assert not np.allclose(one, mean)
    with pytest.raises(ValueError, match="head 3 does not exist"):
        analyse_caption(hand_access(maps), CAPTION, with_words=True, word_head=3)


def test_normalised_depth():
    from bindlab.analysis.attention import normalised_depth

    assert normalised_depth(1) == [0.0]
    assert normalised_depth(3) == [0.0, 0.5, 1.0]
    assert normalised_depth(6) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    with pytest.raises(ValueError, match="at least one layer"):
        normalised_depth(0)


def test_a_generated_folder_reads_as_its_data_file(tmp_path):
    """`attention --data DIR` takes the folder a generator wrote (its triplets.jsonl / mcq.jsonl) as the file itself;
    a folder without one says which files it looked for."""
    from bindlab.analysis.attention import load_caption_sets
    from bindlab.data.triplets import generate_triplets, write_triplets

    rows, stats = generate_triplets(20, seed=0)
    write_triplets(tmp_path / "trip", rows, stats)
    assert load_caption_sets(tmp_path / "trip", limit=5) == load_caption_sets(
        tmp_path / "trip" / "triplets.jsonl", limit=5
    )
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="a folder without mcq.jsonl, triplets.jsonl"):
        load_caption_sets(tmp_path / "empty")
