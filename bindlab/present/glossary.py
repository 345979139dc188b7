"""The glossary: one short, exact definition of every term the app shows (the Glossary panel at the top of the page).

Each definition says what the code computes (``bindlab.eval``, ``bindlab.analysis``, ``bindlab.train.lines``,
``bindlab.studies.compare``), so a number on screen can be read without the papers. Plain text only: the app shows
each entry as escaped text.
"""

from __future__ import annotations

GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "tt / ti / it / ii",
        "The MCQ pairing: the query's modality, then the candidates' (t = text caption, i = rendered "
        "image). tt: a caption against four captions; ti: a caption against four images; it: an image against four "
        "captions; ii: an image against four images. Image pairings need an encoder with an image tower and a question "
        "set with images: the embedded one with images is drawn over the renderable vocabulary (the shapes and "
        "attributes the renderer can draw), a smaller one than the full SABER vocabulary.",
    ),
    ("N", 'The number of objects in a scene, each with its own attribute ("a red cube and a blue sphere": N = 2).'),
    (
        "n",
        "The number of items a score is averaged over: questions (MCQ), queries (retrieval), pairs times caption "
        "levels (Pairs) or benchmark items. Compare says, for each task and pairing, how many it scored and what was "
        "left out and why.",
    ),
    (
        "preserve / attr swap / obj swap / joint swap",
        "The four candidates of a SABER question. preserve: the query's "
        "bindings in another order (the right answer). attribute swap: the same objects, the attributes moved to other "
        "objects. object swap: the same attributes, the objects moved. joint swap: both moved. At N = 2 the joint swap "
        'is replaced by "replace one": one binding kept, the attribute or object of the other replaced by a word not in '
        "the query.",
    ),
    (
        "independent / nested",
        "SABER subsets: an independent question's scene is drawn on its own; a nested chain "
        "adds one binding per scene size, keeping the earlier ones.",
    ),
    (
        "accuracy / credit",
        "MCQ credit of one question: 1 when the right candidate scores highest, 1/t when it ties "
        "with t - 1 others for the top, else 0 (random tie-breaking). Accuracy is the mean credit.",
    ),
    (
        "chance",
        "What a model blind to binding would score: it knows which attributes and objects each candidate holds "
        "but not which attribute goes with which object. MCQ: 1/t per question for the t candidates with the answer's "
        "words (1/3 at N = 2, 1/4 at N >= 3); a set's chance is the mean over its questions (0.259 on the embedded "
        "default, exactly the bag-of-words model bow). Pairs: 1/4 for I2T and T2I, 1/6 for Group.",
    ),
    (
        "95 % interval",
        "A percentile bootstrap interval of the mean: the items are resampled 1,000 times (seeded). A "
        "score is above / below chance when its whole interval lies above / below the chance level, else at chance.",
    ),
    (
        "leader",
        "In Compare: the top model in the column the leaderboard is sorted by, named only when its 95 % "
        'interval lies wholly above every other model\'s interval; otherwise Compare says "no clear leader" and whose '
        "intervals overlap.",
    ),
    (
        "margin",
        "A score difference that is positive exactly when the model gets it right. MCQ (Compare's diff): the "
        "right candidate's score minus the best other candidate's. Pairs: the smallest of the four differences that "
        "I2T and T2I need (positive exactly when Group passes). Grounding: the matched margin M(α), the grounded "
        "query's similarity to its own value's image prototype minus its mean similarity to the other values' "
        "prototypes. Attention (per layer): the attention between an object and its own attribute minus that between "
        "it and the other objects' attributes, averaged over the caption's objects (0 = no preference).",
    ),
    (
        "I2T",
        "Pairs text score: each of the two images scores its own caption above the other caption (ties fail). "
        "Chance 1/4.",
    ),
    (
        "T2I",
        "Pairs image score: each of the two captions scores its own image above the other image (ties fail). "
        "Chance 1/4.",
    ),
    ("Group", "Pairs: both I2T and T2I pass for the pair. Chance 1/6."),
    (
        "AP / mAP",
        "Retrieval: every query ranks the pooled gallery of all questions' candidates; its positives are the "
        "candidates holding all its bindings. AP is the average precision of one query's ranking, mAP the mean over "
        "queries. Grounding's macro-mAP is the mean over factor values of each value's AP on the whole gallery.",
    ),
    (
        "R@1 / R@5",
        "Retrieval recall at k: the share of queries with a positive among the top k (ties broken at "
        "random, in expectation).",
    ),
    (
        "α",
        "Grounding strength: the grounded query is q'(α) = norm(q + α d), where q is a factor value's text query "
        "and d the unit direction from the mean of the other values' image prototypes to this value's prototype. "
        "α = 0 is the text query alone; the chosen α is picked on the validation split only (grid 0 to 8, step "
        "0.05).",
    ),
    (
        "α*",
        "Where the matched margin crosses zero: α* = -c with c = q · d, only when -1 < c < 0 (a negative text-only "
        'margin that grounding lifts); otherwise "no crossing".',
    ),
    (
        "LiNeS",
        "Post-hoc layer-increasing scaling of a finetune's update (Wang et al., ICLR 2025): block ℓ of L "
        "(0-based) keeps λ(ℓ) = a + (1 - a) ℓ / (L - 1) of its change, so the first block keeps a and the last all of "
        "it; parameters outside the blocks keep a. bindlab's default a = 0.1; a = 1 scales nothing.",
    ),
    ("unscaled", "The finetuned model with its whole update (no LiNeS scaling; what LiNeS a = 1 gives)."),
    ("base", "The model before finetuning."),
)


def glossary_text() -> str:
    """The glossary as plain text, one ``term: definition`` line per term."""
    return "\n".join(f"{term}: {text}" for term, text in GLOSSARY)


__all__ = ["GLOSSARY", "glossary_text"]
