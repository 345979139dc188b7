"""A small held-out set of general sentences for the forgetting control, as paraphrase pairs.

Written for bindlab (no external data, nothing about attributes and objects): everyday topics, each sentence with
a paraphrase that shares few words with it. Two uses: how far the pairwise-similarity structure of these
sentences drifts from the base model, and paraphrase retrieval (is each sentence's paraphrase its nearest
neighbour?), which a model that forgot general semantics loses.
"""

from __future__ import annotations

PARAPHRASE_PAIRS: tuple[tuple[str, str], ...] = (
    ("The train to the city was delayed by an hour this morning.", "This morning's city train ran sixty minutes late."),
    ("She finally passed her driving test on the third attempt.", "After two failures, she got her driving licence."),
    ("The committee postponed the vote until next week.", "The panel pushed the decision back by seven days."),
    ("Prices at the supermarket have risen sharply this year.", "Groceries cost a lot more than they did last year."),
    ("He forgot his umbrella and got soaked walking home.", "Without an umbrella, he was drenched on his way back."),
    (
        "The museum is closed on Mondays for maintenance.",
        "You cannot visit the gallery at the start of the week because of upkeep.",
    ),
    ("Our flight was cancelled because of the storm.", "Bad weather grounded the plane we were supposed to take."),
    ("The children built a sandcastle near the water.", "Kids made a fort out of sand close to the sea."),
    ("I can't find my keys anywhere in the house.", "My keys have gone missing somewhere at home."),
    ("The new law will take effect in January.", "The legislation becomes binding at the start of the year."),
    ("He has been learning to play the violin since childhood.", "Ever since he was a boy, he has studied the violin."),
    ("The restaurant was so crowded that we left.", "There were too many diners, so we went elsewhere."),
    (
        "Scientists discovered a new species of frog in the rainforest.",
        "Researchers found a previously unknown frog in the jungle.",
    ),
    (
        "The company reported record profits for the quarter.",
        "The firm earned more in these three months than ever before.",
    ),
    ("Please turn off the lights when you leave the room.", "Switch the lamps off on your way out, please."),
    ("The patient recovered quickly after the surgery.", "Following the operation, the sick man healed fast."),
    ("Traffic on the motorway was at a standstill for hours.", "Cars on the highway did not move for a long time."),
    (
        "She reads the newspaper every morning over breakfast.",
        "Each day she goes through the news while eating her first meal.",
    ),
    ("The football match ended in a draw.", "Neither team won the soccer game."),
    (
        "The old bridge is being repaired after the flood.",
        "Workers are fixing the aging crossing that the high water damaged.",
    ),
    ("My phone battery dies within a few hours.", "The cell's charge runs out very fast."),
    (
        "The teacher asked the students to hand in their essays.",
        "Pupils were told to submit their written assignments.",
    ),
    ("He apologised for arriving late to the meeting.", "He said sorry for turning up after the session had begun."),
    (
        "The village has no hospital, so patients travel to town.",
        "Sick people must go to the city because there is no clinic locally.",
    ),
    ("Snow is expected in the mountains tonight.", "Forecasters predict snowfall on the peaks this evening."),
    ("The author is working on her second novel.", "The writer is busy with another book, her next one."),
    ("They moved abroad to find better jobs.", "Seeking improved employment, they emigrated."),
    ("The software update fixed several security problems.", "The patch closed a number of vulnerabilities."),
    ("We watched the sunset from the top of the hill.", "From the summit we saw the sun go down."),
    ("The bakery sells out of bread before noon.", "By midday the baker has no loaves left."),
    ("The river burst its banks after days of rain.", "Persistent downpours made the stream overflow."),
    (
        "He lost his wallet on the bus yesterday.",
        "Yesterday his purse went missing during the ride on public transport.",
    ),
    ("The concert was cancelled because the singer fell ill.", "The show was called off since the vocalist was sick."),
    (
        "Most shops in the town close early on Sundays.",
        "On the weekend's last day, stores there shut in the afternoon.",
    ),
    (
        "The doctor advised him to exercise more and eat less sugar.",
        "His physician told him to be more active and cut down on sweets.",
    ),
    ("The library extended its opening hours during exams.", "At test time the reading room stays open longer."),
    ("Wildfires forced thousands of residents to evacuate.", "Blazes made many people flee their homes."),
    ("The baby finally fell asleep after midnight.", "The infant only dozed off once the clock passed twelve."),
    ("Our neighbours are renovating their kitchen.", "The people next door are redoing their cooking area."),
    ("The price of petrol dropped last month.", "Fuel got cheaper in the previous month."),
)


def general_sentences() -> list[str]:
    """All sentences, pairs adjacent: ``[s0, p0, s1, p1, ...]`` (80 sentences)."""
    return [s for pair in PARAPHRASE_PAIRS for s in pair]
