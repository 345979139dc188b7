"""Engines that write the positive caption for a plan: the template engine and a transformers causal LM.

The text-generation engine (:class:`HFEngine`) loads lazily (safetensors only) and answers in JSON; anything
unusable is an :class:`EngineOutputError`, counted as a rejection and regenerated.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Protocol

from bindlab.data.triplets.template_engine import ExamplePlan, TemplateEngine, WrittenExample


class Engine(Protocol):
    """Writes the positive caption for a plan. ``name`` is recorded as provenance."""

    name: str

    def write(self, plan: ExamplePlan, rng: random.Random) -> WrittenExample:
        """Return the caption for ``plan``; raise :class:`EngineOutputError` for an unusable output."""
        ...


class EngineOutputError(ValueError):
    """An engine produced something that is not a caption (counted as a rejection, then regenerated)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


_TYPE_INSTRUCTIONS = {
    "pair_swap": 'Each queried attribute directly precedes its object ("a red kite").',
    "triple_bind_cycle": 'Each queried attribute directly precedes its object ("a red kite").',
    "triple_bind_swap": 'Each queried attribute directly precedes its object ("a red kite").',
    "attr_bundle": 'Each object is directly preceded by both of its attributes ("a red wooden kite").',
    "predicative": (
        "Detach every queried attribute from its object with a copula, change-of-state verb or "
        'relative clause ("the kite was red"); never write the attribute right before any object.'
    ),
    "deferred_bind_respective": (
        "Mention both objects first, then assign the attributes together in the same "
        "order followed by the word 'respectively' (\"the kite and the bench were red "
        'and wooden, respectively").'
    ),
    "deferred_bind_anaphoric": (
        "Mention both objects first, then assign each attribute by back-reference with "
        "'the {r1}' (first-mentioned object) and 'the {r2}' (second-mentioned object); "
        "never use it, its, they, them or their."
    ),
}


def parse_engine_json(text: str) -> str:
    """The caption from a language model's JSON answer ``{"positive": "..."}`` (first JSON object in the text).

    Raises:
        EngineOutputError: ``engine_output_unparsable`` when no such object is found.
    """
    start = text.find("{")
    while start != -1:
        end = text.find("}", start)
        while end != -1:
            try:
                obj = json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                end = text.find("}", end + 1)
                continue
            caption = obj.get("positive") if isinstance(obj, dict) else None
            if isinstance(caption, str) and caption.strip():
                return " ".join(caption.split())
            break
        start = text.find("{", start + 1)
    raise EngineOutputError("engine_output_unparsable", text[:80])


class HFEngine:
    """A transformers causal LM writes the captions (chat template, JSON answer); loads lazily, safetensors only.

    Its outputs go through the same :func:`validate` as the template engine's; anything unusable is counted as a
    rejection and regenerated.

    Args:
        model_id: hub id ``ORG/NAME`` or a local folder.
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
        max_new_tokens: generation budget per caption.
        temperature: sampling temperature; 0 means greedy decoding.
        revision: optional hub revision.
    """

    def __init__(
        self,
        model_id: str,
        device: str = "auto",
        max_new_tokens: int = 160,
        temperature: float = 0.8,
        revision: str | None = None,
    ) -> None:
        if not model_id:
            raise ValueError("HFEngine needs a model id, e.g. hf:google/gemma-3-1b-it")
        self.model_id = model_id
        self.name = f"hf:{model_id}"
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.revision = revision
        self._model: Any = None
        self._tokenizer: Any = None

    def load(self) -> None:
        """Load tokenizer and model once. Raises ValueError with one clear sentence when that is impossible."""
        if self._model is not None:
            return
        from bindlab.config import hub_offline, resolve_device

        local = Path(self.model_id).expanduser().exists()
        if not local and hub_offline():
            raise ValueError(
                f"engine {self.name}: the Hugging Face hub is unreachable (offline), so {self.model_id!r} could not "
                "be downloaded; download it while online, pass a local folder (hf:/path/to/model) or use "
                "--engine template"
            )
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model_id, revision=self.revision)
            model = AutoModelForCausalLM.from_pretrained(
                self.model_id, revision=self.revision, use_safetensors=True, dtype="auto"
            )
        except (OSError, ValueError, ImportError) as e:
            raise ValueError(
                f"engine {self.name}: could not load {self.model_id!r} ({type(e).__name__}: {e}); "
                "check the id, that it has safetensors weights, or use --engine template"
            ) from None
        if getattr(self._tokenizer, "chat_template", None) is None:
            raise ValueError(
                f"engine {self.name}: {self.model_id!r} has no chat template; use an instruction-tuned model"
            )
        self._model = model.to(resolve_device(self.device)).eval()

    def prompt(self, plan: ExamplePlan) -> str:
        """The user message for ``plan``: bindings, structure, context, register, opener, length and distance."""
        r1, r2 = plan.references
        lines = [
            "Write one caption sentence for a text-retrieval dataset.",
            f"Construction: {plan.construction}. " + _TYPE_INSTRUCTIONS[plan.construction].format(r1=r1, r2=r2),
            "Attribute-object bindings to express (objects in this order of first mention): "
            + "; ".join(f"{a} -> {o}" for a, o in plan.pairs)
            + ".",
        ]
        if plan.construction == "deferred_bind_anaphoric" and plan.reverse_reference:
            lines.append(f"Assign the second-mentioned object's attribute first (start with 'the {r2}').")
        if plan.distractors:
            lines.append(
                "Also weave in these extra pairs, each attribute right before its object: "
                + ", ".join(f"{a} {o}" for a, o in plan.distractors)
                + "."
            )
        lines += [
            f"Setting: {plan.context}. Register: {plan.register}. Opener style: {plan.opener.replace('_', ' ')}.",
            f"Length: {plan.length_band[0]}-{plan.length_band[1]} words. Binding distance: "
            f"{plan.distance_range[0]}-{plan.distance_range[1]} words.",
            "Use every attribute and object word exactly once and no other attribute or object words.",
            'Answer with JSON only: {"positive": "<the caption>"}',
        ]
        return "\n".join(lines)

    def write(self, plan: ExamplePlan, rng: random.Random) -> WrittenExample:
        """Generate, parse and return the caption for ``plan``."""
        import torch

        self.load()
        messages = [{"role": "user", "content": self.prompt(plan)}]
        prompt = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = self._tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self._model.device)
        torch.manual_seed(rng.getrandbits(63))
        sample = self.temperature > 0
        with torch.no_grad():
            out = self._model.generate(
                **inputs,
                max_new_tokens=self.max_new_tokens,
                do_sample=sample,
                temperature=self.temperature if sample else None,
                top_p=0.95 if sample else None,
                pad_token_id=self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
            )
        text = self._tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        return WrittenExample(parse_engine_json(text), plan.pairs, plan.distractors, self.name)


def make_engine(spec: str) -> Engine:
    """``"template"`` -> :class:`TemplateEngine`; ``"hf:ORG/NAME"`` -> :class:`HFEngine` (loaded on first use)."""
    spec = (spec or "").strip()
    if spec == "template":
        return TemplateEngine()
    if spec.startswith("hf:") and len(spec) > 3:
        return HFEngine(spec[3:])
    raise ValueError(f"unknown engine {spec!r}; choose 'template' or 'hf:ORG/NAME' (a causal LM with a chat template)")
