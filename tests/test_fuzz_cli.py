"""Hostile CLI inputs: every malformed input ends with exit status 2 and one clear ``error:`` line.

A table of cases (bad numbers, NaN/inf, caps, devices, a FIFO, folders, long names, paths outside the allowed
roots, malformed and inconsistent data files, decompression bombs, bad output paths, bad environment) is fed
through :func:`bindlab.cli.main` in-process. Each case runs under an alarm (no hang), must not print a traceback,
must not succeed silently, and must end with exactly one line holding ``error:``. Only ``bow`` (no weights) and the
tiny bundled toy model are used, so the suite runs in well under two minutes — except the out-of-memory cases, which
run MiniLM with its weight loading made to fail as running out of memory does (:data:`FAULTS`). Some cases check
more after the run (:data:`AFTER`): a link planted in an export folder still points at an untouched file.
Finetune cases run with ``--background``, so a setting accepted without a word (a silent success) would queue a job
and fail its case: a model with no trainable text tower, and ``--config`` settings no flag carries (:data:`CONFIGS`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from bindlab.cli import main

CASE_SECONDS = 30  # a case that takes longer is a hang
LINK_TARGET_TEXT = "a file outside the export folder; no export may write here\n"
LINKED_EXPORT_FILES = ("mcq_summary.csv", "provenance.json", "mcq_items.jsonl")  # names `eval mcq --export` writes


# --- the data the cases use ------------------------------------------------------------------------------------------
def _good_mcq() -> dict:
    from bindlab.data.saber import generate_saber

    return generate_saber(per_size=2, sizes=[2, 3], seed=0)[0].to_json()


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` but holds one tiny IDAT (a bomb that costs nothing)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b"")
    )


def _mutated(mutate) -> str:
    obj = _good_mcq()
    mutate(obj)
    return json.dumps(obj)


def _set(path: list, value):
    def f(o):
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value

    return f


MCQ_FILES: dict[str, bytes | str] = {
    "garbage_bytes": os.urandom(1).join([b"\x00\xff\xfe garbage \x81\x82"] * 50),
    "undecodable_utf8": b'{"id": "q\xff\xfe", "query": {}}\n',
    "empty": "",
    "blank_lines": "\n\n   \n",
    "not_json": "hello world\n",
    "json_array_line": "[1, 2, 3]\n",
    "json_string_line": '"just a string"\n',
    "json_number_line": "42\n",
    "json_null_line": "null\n",
    "deeply_nested_list": "[" * 100_000 + "]" * 100_000 + "\n",
    "deeply_nested_obj": '{"a":' * 50_000 + "1" + "}" * 50_000 + "\n",
    "nested_100": _mutated(_set(["extra_field"], json.loads("[" * 100 + "]" * 100))),
    "nan_number": _mutated(_set(["n_objects"], float("nan"))),
    "infinity_number": _mutated(lambda o: o.__setitem__("score", float("inf"))),
    "answer_not_preserve": _mutated(lambda o: o.__setitem__("answer", (o["answer"] + 1) % 4)),
    "four_preserves": _mutated(lambda o: [c.__setitem__("role", "preserve") for c in o["candidates"]]),
    "no_preserve": _mutated(lambda o: [c.__setitem__("role", "attr_swap") for c in o["candidates"]]),
    "n_objects_1e9": _mutated(_set(["n_objects"], 1_000_000_000)),
    "n_objects_float": _mutated(_set(["n_objects"], 2.5)),
    "n_objects_zero": _mutated(_set(["n_objects"], 0)),
    "n_objects_negative": _mutated(_set(["n_objects"], -3)),
    "n_objects_bool": _mutated(_set(["n_objects"], True)),
    "n_objects_mismatch": _mutated(_set(["n_objects"], 7)),
    "answer_bool": _mutated(_set(["answer"], True)),
    "answer_negative": _mutated(_set(["answer"], -1)),
    "answer_string": _mutated(_set(["answer"], "0")),
    "answer_huge": _mutated(_set(["answer"], 10**30)),
    "chain_pos_negative": _mutated(_set(["chain_pos"], -1)),
    "chain_id_object": _mutated(_set(["chain_id"], {"a": 1})),
    "three_candidates": _mutated(lambda o: o["candidates"].pop()),
    "candidates_object": _mutated(_set(["candidates"], {"a": 1})),
    "candidate_not_object": _mutated(lambda o: o["candidates"].__setitem__(0, "text")),
    "query_not_object": _mutated(_set(["query"], [1, 2])),
    "bindings_not_pairs": _mutated(_set(["query", "bindings"], [["red"]])),
    "bindings_string": _mutated(_set(["query", "bindings"], "red cube")),
    "role_unknown": _mutated(lambda o: o["candidates"][0].__setitem__("role", "wild")),
    "text_empty": _mutated(_set(["query", "text"], "   ")),
    "text_number": _mutated(_set(["query", "text"], 5)),
    "image_escapes_dotdot": _mutated(_set(["query", "image"], "../../../../etc/passwd")),
    "image_absolute": _mutated(_set(["query", "image"], "/etc/passwd")),
    "image_not_string": _mutated(_set(["query", "image"], 12)),
    "image_empty": _mutated(_set(["query", "image"], "")),
    "image_candidate_escapes": _mutated(lambda o: o["candidates"][2].__setitem__("image", "../x/../../etc/hosts")),
    "missing_fields": '{"id": "x"}\n',
    "duplicate_ids": _mutated(lambda o: None) + "\n" + _mutated(lambda o: None),
    "subset_unknown": _mutated(_set(["subset"], "sideways")),
    "id_object": _mutated(_set(["id"], {"x": 1})),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """Files and special paths the cases point at (all under one temporary folder)."""
    root = tmp_path_factory.mktemp("fuzz")
    w: dict[str, Path] = {"root": root}
    good = root / "good"
    good.mkdir()
    (good / "mcq.jsonl").write_text(json.dumps(_good_mcq()) + "\n")
    w["good_mcq"] = good / "mcq.jsonl"
    for name, content in MCQ_FILES.items():
        d = root / name
        d.mkdir()
        p = d / "mcq.jsonl"
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(
            content if isinstance(content, bytes) else content + "\n"
        )
        w[name] = p
    fifo = root / "fifo.jsonl"
    os.mkfifo(fifo)
    w["fifo"] = fifo
    w["folder"] = root / "good"
    w["missing"] = root / "nope" / "missing.jsonl"
    w["long_name"] = root / ("x" * 256 + ".jsonl")
    w["long_path"] = root / "/".join(["y" * 200] * 25)
    link = root / "link_out.jsonl"
    link.symlink_to("/etc/passwd")
    w["symlink_out"] = link
    w["a_file"] = w["good_mcq"]
    # images: a bomb header, a truncated PNG, garbage, a FIFO, inside a pairs file
    imgs = root / "pairs"
    imgs.mkdir()
    (imgs / "bomb.png").write_bytes(_png_header(20000, 20000))
    good_png = _png_header(8, 8)
    (imgs / "trunc.png").write_bytes(good_png[:40])
    (imgs / "garbage.png").write_bytes(os.urandom(200))
    os.mkfifo(imgs / "fifo.png")
    from PIL import Image

    Image.new("RGB", (8, 8), (200, 10, 10)).save(imgs / "ok.png")
    for kind in ("bomb", "trunc", "garbage", "fifo"):
        row = {
            "id": "p0",
            "base": {"image": f"{kind}.png", "captions": {"short": "a red cube"}},
            "foil": {"image": "ok.png", "captions": {"short": "a blue cube"}},
        }
        (imgs / f"{kind}.jsonl").write_text(json.dumps(row) + "\n")
        w[f"pairs_{kind}"] = imgs / f"{kind}.jsonl"
    row = {
        "id": "p0",
        "base": {"image": "../good/mcq.jsonl", "captions": {"short": "a"}},
        "foil": {"image": "ok.png", "captions": {"short": "b"}},
    }
    (imgs / "escape.jsonl").write_text(json.dumps(row) + "\n")
    w["pairs_escape"] = imgs / "escape.jsonl"
    (imgs / "nan.jsonl").write_text(
        '{"id": "p0", "pixels_changed": NaN, "base": {"image": "ok.png", '
        '"captions": {"short": "a"}}, "foil": {"image": "ok.png", "captions": '
        '{"short": "b"}}}\n'
    )
    w["pairs_nan"] = imgs / "nan.jsonl"
    # a factor grid folder with a negative context, one with a leaking header, one whose meta.json is an array
    for name, text, meta in [
        ("grid_negative", "image,shape,hue,pattern,context,replica\na.png,cube,red,plain,-1,0\n", None),
        ("grid_header", "HF_TOKEN=secret\n", None),
        ("grid_meta_array", "image,shape,hue,pattern,context,replica\na.png,cube,red,plain,0,0\n", "[1, 2]"),
        (
            "grid_meta_nested",
            "image,shape,hue,pattern,context,replica\na.png,cube,red,plain,0,0\n",
            "[" * 5000 + "]" * 5000,
        ),
        ("grid_escape", "image,shape,hue,pattern,context,replica\n../../etc/passwd,cube,red,plain,0,0\n", None),
    ]:
        d = root / name
        d.mkdir()
        (d / "index.csv").write_text(text)
        if meta is not None:
            (d / "meta.json").write_text(meta)
        w[name] = d
    # a pair whose foil is its base: the same caption, the same image path, the same file behind a link, the same bytes
    shutil.copyfile(imgs / "ok.png", imgs / "ok_copy.png")
    (imgs / "ok_link.png").symlink_to("ok.png")
    for kind, base_img, foil_img, foil_caption in [
        ("same_caption", "ok.png", "bomb.png", "a red cube"),
        ("same_image", "ok.png", "./ok.png", "a blue cube"),
        ("same_file", "ok.png", "ok_link.png", "a blue cube"),
        ("same_bytes", "ok.png", "ok_copy.png", "a blue cube"),
    ]:
        row = {
            "id": "p0",
            "base": {"image": base_img, "captions": {"short": "a red cube"}},
            "foil": {"image": foil_img, "captions": {"short": foil_caption}},
        }
        (imgs / f"{kind}.jsonl").write_text(json.dumps(row) + "\n")
        w[f"pairs_{kind}"] = imgs / f"{kind}.jsonl"
    # an MCQ whose query image is a FIFO (the map reads images for its hover thumbnails)
    d = root / "mcq_fifo_image"
    d.mkdir()
    os.mkfifo(d / "q.png")
    (d / "mcq.jsonl").write_text(_mutated(_set(["query", "image"], "q.png")) + "\n")
    w["mcq_fifo_image"] = d / "mcq.jsonl"
    # triplets: rows without their split; rows whose bindings are not words of their captions (nothing to measure)
    trip = {
        "id": "t0",
        "construction": "pair_swap",
        "query": "a red cube and a blue sphere",
        "positive": "a red cube beside a blue sphere",
        "negative": "a blue cube beside a red sphere",
        "negative_kind": "attribute",
        "bindings": [["red", "cube"], ["blue", "sphere"]],
        "split": "test",
    }
    d = root / "triplets"
    d.mkdir()
    (d / "no_split.jsonl").write_text(json.dumps({k: v for k, v in trip.items() if k != "split"}) + "\n")
    w["triplets_no_split"] = d / "no_split.jsonl"
    (d / "unmeasurable.jsonl").write_text(
        json.dumps({**trip, "bindings": [["purple", "zebra"], ["green", "yak"]]}) + "\n"
    )
    w["triplets_unmeasurable"] = d / "unmeasurable.jsonl"
    # export folders holding a link planted where an export file goes, pointing at a file outside the folder
    w["link_target"] = root / "outside_target.txt"
    w["link_target"].write_text(LINK_TARGET_TEXT)
    for k, name in enumerate(LINKED_EXPORT_FILES):
        d = root / f"export_link_{k}"
        d.mkdir()
        (d / name).symlink_to(w["link_target"])
        w[f"export_link_{k}"] = d
    # triplets: the MCQ garbage files double as bad triplet files
    out = root / "outputs"
    out.mkdir()
    w["out_dir"] = out
    w["out_file"] = out / "existing.json"
    w["out_file"].write_text("{}")
    w["home_file"] = root / "home_is_a_file"
    w["home_file"].write_text("not a folder")
    # finetune: real triplets (so each case meets its own check, not a missing folder), --config files whose one
    # setting only a file can carry, and a home with one finished job (for `jobs export-script`)
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.jobs.manager import local_owner

    rows, stats = generate_triplets(40, seed=0)
    write_triplets(root / "trip", rows, stats)
    for name, cfg in CONFIGS.items():
        w[f"config_{name}"] = root / f"config_{name}.json"
        w[f"config_{name}"].write_text(json.dumps(cfg))
    job = root / "jobhome" / "jobs" / FUZZ_JOB
    job.mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"model": "minilm", "data": str(root / "trip"), "num_processes": 2}))
    (job / "status.json").write_text(
        json.dumps({"id": FUZZ_JOB, "state": "done", "owner": local_owner(), "created": "2026-01-01T00:00:00+00:00"})
    )
    return w


# --- the table -------------------------------------------------------------------------------------------------------
# --config settings a flag cannot carry, each once accepted without a word (and ignored, or failing the job later)
CONFIGS: dict[str, dict] = {
    "debug_unknown": {"debug": {"sleep_per_stp": 1}},
    "debug_sleep_huge": {"debug": {"sleep_per_step": 1e9}},
    "debug_fail_text": {"debug": {"fail_at_step": "x"}},
    "heavy_text": {"heavy": "no"},
    "evaluate_text": {"evaluate": "no"},
    "lora_alpha_huge": {"lora_alpha": 1e308},
    "lora_dropout_5": {"lora_dropout": 5},
}
FUZZ_JOB = "20260101-000000-f00f00"  # the finished job of the world's jobhome
MCQ_CMDS = [("eval", "mcq"), ("eval", "retrieval")]
BAD_POSITIVE = ["0", "-1", "-100", "abc", "1.5", "nan", "inf", "", "1e999", "0x10"]
BAD_NONNEG = ["-1", "-5", "abc", "nan", "-inf", "2.5", "1e999"]
BAD_FLOAT = ["nan", "inf", "-inf", "NaN", "Infinity", "abc", ""]
HUGE = "1000000000"


class SafetensorError(Exception):
    """Stands in for ``safetensors_rust.SafetensorError`` (a plain Exception subclass)."""


# case id -> the error MiniLM's weight loading (transformers' AutoModel.from_pretrained) raises in that case: the
# disguises running out of memory takes there (an mmap of the weights, a shared library, the allocator)
FAULTS: dict[str, Callable[[], BaseException]] = {
    "oom-memory-error": MemoryError,
    "oom-mmap-runtime-error": lambda: RuntimeError(
        "unable to mmap 90868224 bytes from file <model.safetensors>: Cannot allocate memory (12)"
    ),
    "oom-mmap-oserror": lambda: OSError(errno.ENOMEM, "Cannot allocate memory"),
    "oom-safetensors": lambda: SafetensorError(
        "Error while deserializing header: Cannot allocate memory (os error 12)"
    ),
    "oom-shared-library": lambda: ImportError("libtorch_cpu.so: failed to map segment from shared object"),
    "oom-bad-alloc": lambda: RuntimeError("std::bad_alloc"),
}


def _link_untouched(k: int) -> Callable[[dict[str, Path]], None]:
    def check(w: dict[str, Path]) -> None:
        file = LINKED_EXPORT_FILES[k]
        link = w[f"export_link_{k}"] / file
        assert link.is_symlink(), f"{link} was replaced or removed"
        assert w["link_target"].read_text() == LINK_TARGET_TEXT, "the export wrote through the link"
        assert [p.name for p in link.parent.iterdir()] == [file], "an export refused for a link wrote files"

    return check


# case id -> a check after the run (the case's own outcome is the table's)
AFTER: dict[str, Callable[[dict[str, Path]], None]] = {
    f"eval-mcq-export-link-{f}": _link_untouched(k) for k, f in enumerate(LINKED_EXPORT_FILES)
}


def _cases() -> list[tuple[str, list[str], dict[str, str]]]:
    """(case id, argv with {placeholders}, extra environment)."""
    c: list[tuple[str, list[str], dict[str, str]]] = []

    def add(cid: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        c.append((cid, argv, env or {}))

    eval_base = {f"{a}-{b}": [a, b, "--data", "{good_mcq}", "--model", "bow"] for a, b in MCQ_CMDS}
    # numbers
    for name, base in eval_base.items():
        for v in BAD_POSITIVE:
            add(f"{name}-batch-size={v}", base + ["--batch-size", v])
        for v in BAD_NONNEG:
            add(f"{name}-limit={v}", base + ["--limit", v])
        add(f"{name}-batch-size-huge", base + ["--batch-size", HUGE])
        add(f"{name}-limit-huge", base + ["--limit", HUGE])
    gen = {
        "saber": (["generate", "saber", "--out", "{root}/gen-saber"], ["--per-size", "--size", "--workers"]),
        "triplets": (["generate", "triplets", "--out", "{root}/gen-trip"], ["--n"]),
        "composet": (
            ["generate", "composet", "--out", "{root}/gen-comp"],
            ["--scenes", "--foils-per-scene", "--size", "--workers"],
        ),
        "factors": (["generate", "factors", "--out", "{root}/gen-fac"], ["--contexts", "--replicas", "--workers"]),
    }
    for name, (base, flags) in gen.items():
        for flag in flags:
            for v in ["0", "-1", "abc", "nan", HUGE, "1e999"]:
                add(f"gen-{name}{flag}={v}", base + [flag, v])
        add(f"gen-{name}-seed-negative", base + ["--seed", "-1"])
    ft = ["finetune", "--model", "minilm", "--data", "{root}/trip", "--background"]
    add("finetune-model-bow", ["finetune", "--model", "bow", "--data", "{root}/trip", "--background"])
    add("finetune-model-open-clip", ft[:2] + ["open_clip:ViT-B-32/openai"] + ft[3:])
    for name in CONFIGS:
        add(f"finetune-config-{name}", ft + ["--config", "{config_" + name + "}"])
    export = ["jobs", "export-script", FUZZ_JOB]
    for flag, v in [("--nproc", "0"), ("--nproc", "-1"), ("--nodes", "0")]:
        add(f"jobs-export-script{flag}={v}", export + [flag, v], {"BINDLAB_HOME": "{root}/jobhome"})
    for flag in ["--lr", "--lora-alpha", "--margin", "--weight-decay"]:
        for v in BAD_FLOAT:
            add(f"finetune{flag}={v}", ft + [flag, v])
    for flag, vals in [
        ("--lr", ["0", "-1e-3"]),
        ("--lora-alpha", ["0", "-4"]),
        ("--margin", ["-0.5"]),
        ("--epochs", ["0", "-1", HUGE]),
        ("--max-steps", ["-1", HUGE]),
        ("--batch-size", ["0", "-8"]),
        ("--lora-rank", ["0", "-2"]),
        ("--num-processes", ["0", HUGE]),
        ("--eval-rows", ["-1"]),
    ]:
        for v in vals:
            add(f"finetune{flag}={v}", ft + [flag, v])
    toy = ["train", "toy", "--arch", "clip", "--out", "{root}/toy"]
    for flag, vals in [
        ("--steps", ["0", "-1", HUGE]),
        ("--batch-size", ["0", "-1"]),
        ("--lr", ["nan", "inf", "0"]),
        ("--threads", ["0", HUGE]),
        ("--hard-share", ["nan", "2", "-1"]),
        ("--pool-size", ["0"]),
        ("--checkpoint-every", ["0"]),
        ("--eval-sample", ["-1"]),
        ("--image-size", ["-1", HUGE]),
    ]:
        for v in vals:
            add(f"train-toy{flag}={v}", toy + [flag, v])
    mp = ["map", "--model", "bow", "--data", "{good_mcq}", "--out", "{root}/map.html"]
    for flag, vals in [
        ("--n-neighbors", ["0", "-1", "1", "100000", HUGE]),
        ("--min-dist", ["nan", "-1", "inf"]),
        ("--limit", ["-1"]),
        ("--thumb-size", ["0", HUGE]),
    ]:
        for v in vals:
            add(f"map{flag}={v}", mp + [flag, v])
    add("map-n-neighbors-above-the-points", mp + ["--n-neighbors", "400"])  # one question: 5 points
    # seeds: numpy's range is 0 <= seed < 2**32
    for v in ["1234567890123456789012", str(2**32)]:  # (-1: the generators' and pairs' cases above)
        add(f"map-seed={v}", mp + ["--seed", v])
        add(f"pairs-seed={v}", ["eval", "pairs", "--model", "bow", "--data", "{pairs_bomb}", "--seed", v])
        add(f"gen-saber-seed={v}", ["generate", "saber", "--out", "{root}/gen-saber-seed", "--seed", v])
        add(f"attention-seed={v}", ["attention", "--model", "bow", "--data", "{good_mcq}", "--seed", v])
    # devices: checked for every model, also for one that ignores it (bow)
    for name, base in eval_base.items():
        for v in ["gpu9", "cuda:x", "cuda:99", "tpu", "cpu:0"]:
            add(f"{name}-device={v}", base + ["--device", v])
    add("pairs-device=gpu9", ["eval", "pairs", "--model", "bow", "--data", "{pairs_same_bytes}", "--device", "gpu9"])
    add("attention-limit=-1", ["attention", "--model", "bow", "--data", "{good_mcq}", "--limit", "-1"])
    add("ground-n-boot=-1", ["ground", "--model", "bow", "--data", "{grid_negative}", "--n-boot", "-1"])
    add("pairs-batch-size=0", ["eval", "pairs", "--model", "bow", "--data", "{pairs_bomb}", "--batch-size", "0"])
    add("pairs-seed=-1", ["eval", "pairs", "--model", "bow", "--data", "{pairs_bomb}", "--seed", "-1"])
    add("benchmark-limit=-1", ["eval", "benchmark", "--name", "winoground", "--model", "bow", "--limit", "-1"])
    add("eval-toy-sample=-1", ["eval", "toy", "--model", "toy:clip", "--sample", "-1"])

    # data files and special paths, through every command that reads an MCQ-like JSONL
    readers = {
        **eval_base,
        "attention": ["attention", "--model", "bow", "--data", "{good_mcq}"],
        "map": ["map", "--model", "bow", "--data", "{good_mcq}", "--out", "{root}/map2.html"],
    }
    bad_data = list(MCQ_FILES) + ["fifo", "folder", "missing", "long_name", "long_path", "symlink_out"]
    for name, base in readers.items():
        for d in bad_data:
            if name in ("attention", "map") and d in ("duplicate_ids",):
                continue
            add(f"{name}-data-{d}", [("{" + d + "}" if x == "{good_mcq}" else x) for x in base])
        for outside in [
            "/etc/passwd",
            "/etc/shadow",
            "/proc/self/environ",
            "/dev/zero",
            "/dev/null",
            "/dev/urandom",
            "../../../../../../etc/hostname",
            "~/.bashrc",
            "/",
        ]:
            add(f"{name}-data-{outside}", [(outside if x == "{good_mcq}" else x) for x in base])
    for d in ["garbage_bytes", "fifo", "folder", "missing"]:  # each malformed file that reaches a job costs ~15 s
        add(f"finetune-triplets-{d}", ["finetune", "--model", "minilm", "--data", "{" + d + "}"])
    for d in ["/etc/passwd", "/dev/zero"]:
        add(f"finetune-triplets-{d}", ["finetune", "--model", "minilm", "--data", d])
    for kind in ("bomb", "trunc", "garbage", "fifo", "escape", "nan"):
        add(
            f"pairs-image-{kind}",
            ["eval", "pairs", "--model", "toy:clip", "--data", "{pairs_" + kind + "}", "--device", "cpu"],
        )
    for kind in ("same_caption", "same_image", "same_file", "same_bytes"):  # a foil that is its base
        add(f"pairs-foil-is-base-{kind}", ["eval", "pairs", "--model", "bow", "--data", "{pairs_" + kind + "}"])
    add(
        "map-image-fifo",
        ["map", "--model", "bow", "--data", "{mcq_fifo_image}", "--out", "{root}/map3.html", "--method", "pca"],
    )
    add(
        "map-image-fifo-toy",
        ["map", "--model", "toy:clip", "--data", "{mcq_fifo_image}", "--out", "{root}/map4.html", "--method", "pca"],
    )
    for d in ("triplets_no_split", "triplets_unmeasurable"):
        add(f"attention-{d}", ["attention", "--model", "toy:clip", "--data", "{" + d + "}", "--device", "cpu"])
    for g in ("grid_negative", "grid_header", "grid_meta_array", "grid_meta_nested", "grid_escape", "folder"):
        add(f"ground-{g}", ["ground", "--model", "toy:clip", "--data", "{" + g + "}", "--device", "cpu"])
    for d in ("/etc", "/dev/zero", "{fifo}"):
        add(f"ground-{d}", ["ground", "--model", "toy:clip", "--data", d])
    add("benchmark-manifest-array", ["eval", "benchmark", "--name", "{json_array_line}", "--model", "bow"])
    add(
        "benchmark-data-outside",
        ["eval", "benchmark", "--name", "winoground", "--model", "bow", "--data", "/etc/passwd"],
    )

    # output paths
    for name, base in eval_base.items():
        for flag in ("--out", "--per-item"):
            for target in [
                "/dev/full",
                "/dev/null",
                "{out_dir}",
                "{a_file}/x.json",
                "{root}/" + "z" * 256 + ".json",
                "{fifo}",
                "bindlab/assets/evil.json",
                "",
            ]:
                add(f"{name}{flag}={target}", base + [flag, target])
        for target in ["{out_file}", "/dev/null", "{a_file}/sub", "bindlab/assets/exported"]:
            add(f"{name}-export={target}", base + ["--export", target])
    for k, name in enumerate(LINKED_EXPORT_FILES):
        add(f"eval-mcq-export-link-{name}", eval_base["eval-mcq"] + ["--export", "{export_link_" + str(k) + "}"])
    for g, (base, _) in gen.items():
        for target in ["{out_file}", "/dev/full", "{a_file}/sub", "bindlab/assets/gen", "{root}/" + "q" * 300]:
            add(f"gen-{g}-out={target}", [base[0], base[1], "--out", target])
    add("map-out-folder", ["map", "--model", "bow", "--data", "{good_mcq}", "--out", "{out_dir}"])
    add("map-out-dev-full", ["map", "--model", "bow", "--data", "{good_mcq}", "--out", "/dev/full"])
    add("train-toy-out-file", ["train", "toy", "--arch", "clip", "--out", "{out_file}"])
    add("eval-toy-out-assets", ["eval", "toy", "--model", "toy:clip", "--out", "bindlab/assets/card.json"])

    # environment
    add("home-is-a-file", eval_base["eval-mcq"], {"BINDLAB_HOME": "{home_file}"})
    add("limit-env-garbage", eval_base["eval-mcq"], {"BINDLAB_MAX_FILE_BYTES": "lots"})
    add("limit-env-negative", eval_base["eval-mcq"], {"BINDLAB_MAX_JSONL_LINES": "-3"})
    add("file-over-size-cap", eval_base["eval-mcq"], {"BINDLAB_MAX_FILE_BYTES": "100"})
    add(
        "file-over-line-cap",
        [x.replace("{good_mcq}", "{duplicate_ids}") for x in eval_base["eval-mcq"]],
        {"BINDLAB_MAX_JSONL_LINES": "1"},
    )
    add(
        "public-mode-cwd-not-a-root",
        ["eval", "mcq", "--data", "README.md", "--model", "bow"],
        {"BINDLAB_PUBLIC": "1", "BINDLAB_DATA_ROOTS": ""},
    )
    add("public-batch-cap", eval_base["eval-mcq"] + ["--batch-size", "100000"], {"BINDLAB_PUBLIC": "1"})

    # MiniLM's weights cannot be loaded for want of memory (FAULTS): a fresh home (no cached embeddings) and a batch
    # size of each case's own (a fresh encoder instance, whose weights load now)
    for k, cid in enumerate(FAULTS, start=3):
        add(
            cid,
            ["eval", "mcq", "--data", "{good_mcq}", "--model", "minilm", "--device", "cpu", "--batch-size", str(k)],
            {"BINDLAB_HOME": "{root}/home-" + cid},
        )

    # argparse-level usage errors
    for argv in (
        ["nope"],
        ["eval"],
        ["eval", "mcq"],
        ["eval", "mcq", "--data"],
        ["generate", "saber"],
        ["eval", "mcq", "--data", "x", "--model", "bow", "--bogus"],
        ["map", "--method", "tsne"],
    ):
        add("usage-" + "_".join(argv), argv)
    return c


CASES = _cases()
# Cases whose wiring lives in a CLI module another change owns: strict xfails, so they flip when it is wired.
XFAIL: dict[str, str] = {}
PARAMS = [
    pytest.param(
        cid, argv, env, id=cid, marks=[pytest.mark.xfail(strict=True, reason=XFAIL[cid])] if cid in XFAIL else []
    )
    for cid, argv, env in CASES
]


def test_table_is_large_enough():
    assert len(CASES) >= 300, len(CASES)
    assert len({cid for cid, _, _ in CASES}) == len(CASES), "case ids must be unique"


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"no result after {CASE_SECONDS}s")


@pytest.mark.parametrize("cid,argv,env", PARAMS)
def test_malformed_input_gives_one_error_line(cid, argv, env, world, capsys, monkeypatch):
    fill = {k: str(v) for k, v in world.items()}
    argv = [a.format(**fill) if "{" in a else a for a in argv]
    for k, v in env.items():
        monkeypatch.setenv(k, v.format(**fill) if "{" in v else v)
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)  # the repo: `bindlab/assets/...` means the shipped folder
    if cid in FAULTS:
        import transformers

        def out_of_memory(*args, **kwargs):
            raise FAULTS[cid]()

        monkeypatch.setattr(transformers.AutoModel, "from_pretrained", out_of_memory)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse usage errors
            rc = e.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err[-2000:]
    assert rc == 2, f"exit status {rc} (silent success?)\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}"
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err[-2000:]
    assert len(errors[0]) < 1000, errors[0][:300]
    if cid in FAULTS:
        assert "error: out of memory;" in errors[0], errors[0]
    if cid in AFTER:
        AFTER[cid](world)


def test_shipped_assets_untouched():
    """Nothing in the table wrote into the repo's bindlab/assets/ folder."""
    assets = Path(__file__).resolve().parent.parent / "assets"
    assert not any((assets / n).exists() for n in ("evil.json", "exported", "gen", "card.json"))
