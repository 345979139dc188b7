"""A device this machine does not have is refused up front, by every study's request and the API, in one sentence
(which device, why not, what to use) — the same check the CLI runs (``validate.check_device``)."""

from __future__ import annotations

import pytest
import torch

import bindlab
from bindlab.studies.attention import AttentionRequest, CaptionRequest
from bindlab.studies.benchmark import BenchmarkRequest
from bindlab.studies.browse import McqRequest
from bindlab.studies.compare import CompareRequest
from bindlab.studies.grounding import GroundingRequest
from bindlab.studies.grounding_sweep import SweepRequest
from bindlab.studies.pairs import PairsRequest
from bindlab.studies.validate import check_device

MISSING = f"cuda:{torch.cuda.device_count() + 7}"  # a GPU index no machine running the tests has

# the sentence: which device, why it cannot be used here, what to use instead
GONE = r"device 'cuda:\d+': (no CUDA GPU is visible on this machine|this machine has \d+ CUDA devices).*; use "


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A tiny MCQ file and a tiny Pairs file (the requests check that their data exists before the device)."""
    out = tmp_path_factory.mktemp("device-data")
    bindlab.generate_saber(out / "saber", per_size=2, sizes="2-3")
    bindlab.generate_pairs(out / "pairs", scenes=1, foils_per_scene=15, size=64)
    return {"mcq": str(out / "saber" / "mcq.jsonl"), "pairs": str(out / "pairs" / "pairs.jsonl")}


REQUESTS = {
    "mcq": lambda d, f: McqRequest(data=f["mcq"], model="bow", device=d),
    "pairs": lambda d, f: PairsRequest(data=f["pairs"], model="bow", device=d),
    "compare": lambda d, f: CompareRequest(models=["bow", "minilm"], device=d),
    "benchmark": lambda d, f: BenchmarkRequest(name="winoground", model="bow", device=d),
    "attention": lambda d, f: AttentionRequest(model="minilm", device=d),
    "caption": lambda d, f: CaptionRequest(
        model="minilm", text="a red cube and a blue sphere", bindings="red:cube, blue:sphere", device=d
    ),
    "grounding": lambda d, f: GroundingRequest(data="", model="toy:clip", device=d),
    "sweep": lambda d, f: SweepRequest(data="", model="toy:clip", device=d),
}


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_every_request_refuses_a_device_that_is_not_here(kind, files):
    with pytest.raises(ValueError, match=GONE) as e:
        REQUESTS[kind](MISSING, files)
    assert "\n" not in str(e.value) and "Traceback" not in str(e.value)
    assert REQUESTS[kind]("cpu", files).device == "cpu"  # and the ordinary ones pass
    assert REQUESTS[kind](" auto ", files).device == "auto"


@pytest.mark.parametrize("bad", ["", "tpu", 3, None])
def test_a_malformed_device_names_the_choices(bad):
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        check_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_says_so_and_what_to_use(files):
    with pytest.raises(ValueError, match=r"device 'cuda': no CUDA GPU is visible on this machine; use cpu or auto"):
        McqRequest(data=files["mcq"], model="bow", device="cuda")


def test_the_api_checks_the_device_before_loading():
    with pytest.raises(ValueError, match=GONE):
        bindlab.load_encoder("bow", device=MISSING)
