"""Text-only finetuning triplets (SABER section 4, appendix B): seven construction types, validated.

Pipeline per example (B.1): the generator *plans* it (construction type, queried bindings, distractors, context,
register, opener, length band, binding-distance range, with running frequency caps), an :class:`Engine` *writes*
the positive caption, the generator *assembles* the query (pairs in random order) and two hard negatives (word-level
permutations of the positive: one permutes attributes, one permutes objects, articles repaired), and
:func:`validate` checks every rule of B.3/B.4. Failures are discarded, counted by reason and regenerated.

Bindings are read structurally, not parsed from free text: every attribute and object word appears exactly once,
so each binding is a pair of word *positions* in the positive. A negative that only moves attribute (or object)
words keeps every other word in place, so the same positions carry its bindings; reading the words at those
positions gives the negative's binding set, which must break every queried binding (B.4). Where the text itself
carries the binding (back-references in ``deferred_bind_anaphoric``, word order in ``deferred_bind_respective``)
the validator also checks that the text agrees with the declared bindings.

Two deliberate readings of the paper, because B.2 and B.4 pull in different directions:

- ``triple_bind_swap`` keeps exactly one queried pair bound in both negatives (B.2); the other two must break.
- ``attr_bundle`` binds two attributes to each object and its attribute negative swaps one family slot only (B.2);
  "breaks every binding" is read per object: each object's attribute set must change.

Splits (B.5): the five in-distribution types split 80/10/10 into train/val/test by example (deterministic from the
seed); every example of the two deferred_bind types is ``heldout``. Each example yields two triplet rows
(``ex000123-a`` with the attribute negative, ``ex000123-o`` with the object negative).

Two optional axes (:class:`Variants`; without them the output is unchanged): the query's sentence template
(:mod:`bindlab.data.templates`; rows then carry ``template``, and each held-out template gets the test examples
re-written in it as ``test_template_<name>``, ids ``ex000123-<name>-a``), and held-out words
(:mod:`bindlab.data.triplets.holdout`: no train/val/test/heldout text contains one; half of the test examples are planned from
them alone, split ``test_unseen_words``).

The package, by concern — everything that writes triplet text lives here: :mod:`~.spec` (construction types,
splits, limits), :mod:`~.template_engine` (the word lists by family and kind, the engine contract and the template
engine), :mod:`~.holdout` (held-out words), :mod:`~.words` (word positions, permutations), :mod:`~.example`
(assembling an example), :mod:`~.validate` (the B.3/B.4 rules), :mod:`~.engines` (who writes the positive: templates
or a language model), :mod:`~.plan` (diversity controls, caps, splits), :mod:`~.generate` (the loop), :mod:`~.audit`
(split leaks) and :mod:`~.io` (files). Everything public is re-exported here. The query's sentence templates
(:mod:`bindlab.data.templates`) stay outside: the SABER MCQ generator writes with them too.
"""

from __future__ import annotations

from bindlab.data.triplets.engines import Engine, EngineOutputError, HFEngine, make_engine, parse_engine_json
from bindlab.data.triplets.example import Example, assemble, negative_maps, query_text
from bindlab.data.triplets.generate import Variants, generate_examples, generate_triplets
from bindlab.data.triplets.io import check_row, load_triplets, write_triplets
from bindlab.data.triplets.plan import UsageTracker, WordPools, assign_splits, plan_example
from bindlab.data.triplets.spec import (
    CONSTRUCTIONS,
    HELD_OUT,
    IN_DISTRIBUTION,
    NEGATIVE_KINDS,
    REJECTION_REASONS,
    SPLITS,
    UNSEEN_WORDS_SPLIT,
    is_split,
    template_split,
)
from bindlab.data.triplets.template_engine import ExamplePlan, TemplateEngine, WrittenExample
from bindlab.data.triplets.validate import binding_distance, validate
from bindlab.data.triplets.words import article_errors, permute_words, words_of

__all__ = [
    "CONSTRUCTIONS",
    "Engine",
    "EngineOutputError",
    "Example",
    "ExamplePlan",
    "HELD_OUT",
    "HFEngine",
    "IN_DISTRIBUTION",
    "NEGATIVE_KINDS",
    "REJECTION_REASONS",
    "SPLITS",
    "TemplateEngine",
    "UNSEEN_WORDS_SPLIT",
    "UsageTracker",
    "Variants",
    "WordPools",
    "WrittenExample",
    "article_errors",
    "assemble",
    "assign_splits",
    "binding_distance",
    "check_row",
    "generate_examples",
    "generate_triplets",
    "is_split",
    "load_triplets",
    "make_engine",
    "negative_maps",
    "parse_engine_json",
    "permute_words",
    "plan_example",
    "query_text",
    "template_split",
    "validate",
    "words_of",
    "write_triplets",
]
