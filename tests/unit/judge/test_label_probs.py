"""The arithmetic of verdicts read from token probabilities (arena_verl.judge.verdicts.label_probs): which tokens
spell a label, renormalisation over the labels, ties splitting their mass, the expected pointwise score, the low-mass
decision, the extra read after a token that starts labels of different outcomes, and the label tokens of a real
tokenizer trained here (no download)."""

import asyncio
import math

import pytest

from arena_verl.judge.prompting.templates import load_template
from arena_verl.judge.verdicts.label_probs import (
    VERDICT_PREFIX,
    LabelTargets,
    LabelVocabulary,
    is_low_mass,
    pairwise_targets,
    pointwise_targets,
    read_labels,
    reading_from_masses,
    token_spellings,
    verdict_continuation,
)
from arena_verl.judge.verdicts.parsing import parse_score, parse_verdict

PAIRWISE = pairwise_targets()
POINTWISE = pointwise_targets()


def outcomes(token, targets=PAIRWISE, pieces=None):
    return {value for _, value in token_spellings(token, targets, pieces)}


def test_the_templates_decide_the_label_set():
    assert dict(pairwise_targets(load_template("math")).spellings) == {"A": 1.0, "B": 0.0, "TIE": 0.5}
    assert dict(pairwise_targets("Reply with only [[A]] or [[B]].").spellings) == {"A": 1.0, "B": 0.0}
    assert dict(pointwise_targets(load_template("pointwise")).spellings) == {"1": 1.0, "0.5": 0.5, "0": 0.0}
    assert dict(pointwise_targets("[[1]] or [[0]]").spellings) == {"1": 1.0, "0": 0.0}


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("A", {1.0}),
        (" A", {1.0}),
        ("a", {1.0}),  # the parser ignores case
        ("A]]", {1.0}),
        (" B ]", {0.0}),
        ("TIE", {0.5}),
        (" tie", {0.5}),
        ("AB", set()),
        ("A.", set()),
        (" ", set()),
        ("", set()),
        ("The", set()),
    ],
)
def test_which_tokens_spell_a_pairwise_label(token, expected):
    assert outcomes(token) == expected


def test_a_first_piece_counts_only_where_the_tokenizer_starts_the_label_with_it():
    assert outcomes("TI") == {0.5} and outcomes("T") == {0.5}  # no tokenizer known: any start counts
    pieces = frozenset({"TI", " TI"})
    assert outcomes("TI", pieces=pieces) == {0.5} and outcomes(" TI", pieces=pieces) == {0.5}
    assert outcomes("T", pieces=pieces) == set()  # "T" starts other words with this tokenizer
    assert outcomes("A", pieces=frozenset()) == {1.0}  # complete labels never need a piece


def test_a_token_starting_labels_of_different_outcomes_is_ambiguous():
    assert token_spellings("0", POINTWISE) == ((".5", 0.5), ("", 0.0))
    assert (
        outcomes("1", POINTWISE) == {1.0} and outcomes("0.", POINTWISE) == {0.5} and outcomes("0]]", POINTWISE) == {0.0}
    )
    after = LabelTargets(((".5", 0.5), ("", 0.0)), first=False)
    assert outcomes("]]", after) == {0.0} and outcomes(" ]", after) == {0.0} and outcomes(".", after) == {0.5}
    assert outcomes(" .5", after) == set()  # "[[0 .5]]" is no verdict


def test_renormalisation_ties_and_the_expected_score():
    reading = reading_from_masses({1.0: 0.2, 0.0: 0.2, 0.5: 0.1})
    assert reading.outcome == pytest.approx(0.5) and reading.mass == pytest.approx(0.5)
    assert sum(p for _, p in reading.probabilities) == pytest.approx(1.0)
    assert reading_from_masses({1.0: 0.3, 0.0: 0.1}).outcome == pytest.approx(0.75)
    assert reading_from_masses({0.5: 0.4}).outcome == pytest.approx(0.5)  # a tie splits its mass
    assert reading_from_masses({1.0: 0.1, 0.5: 0.3, 0.0: 0.6}).outcome == pytest.approx(0.25)  # expected score
    assert reading_from_masses({}) is None and reading_from_masses({1.0: 0.0, 0.0: 0.0}) is None
    assert is_low_mass(reading, 0.6) and not is_low_mass(reading, 0.5)


def scripted(positions):
    """A read function answering from a table {continuation: {token: probability}}, recording what it was asked."""
    asked = []

    async def read(continuation, targets):
        asked.append(continuation)
        return positions.get(continuation, {})

    return read, asked


def test_every_spelling_adds_to_its_label_and_other_tokens_are_missing_mass():
    read, asked = scripted({"[[": {"A": 0.3, " A": 0.1, "a": 0.05, "B": 0.15, "TI": 0.1, "The": 0.3}})
    reading = asyncio.run(read_labels(read, VERDICT_PREFIX, PAIRWISE))
    assert asked == ["[["]
    assert reading.mass == pytest.approx(0.7)
    assert dict(reading.probabilities) == pytest.approx({1.0: 0.45 / 0.7, 0.0: 0.15 / 0.7, 0.5: 0.1 / 0.7})
    assert reading.outcome == pytest.approx((0.45 + 0.05) / 0.7)


def test_no_label_mass_is_no_verdict():
    read, _ = scripted({"[[": {"The": 0.6, "I": 0.4}})
    assert asyncio.run(read_labels(read, "[[", PAIRWISE)) is None
    read, _ = scripted({})
    assert asyncio.run(read_labels(read, "[[", PAIRWISE)) is None


def test_the_pointwise_zero_is_read_once_more_to_split_0_from_0_5():
    read, asked = scripted({"[[": {"1": 0.4, "0": 0.4, " 0": 0.1, "x": 0.1}, "[[0": {".": 0.25, "]]": 0.5, "]": 0.25}})
    reading = asyncio.run(read_labels(read, "[[", POINTWISE))
    assert asked == ["[[", "[[0"]  # the heaviest spelling of the ambiguous group is continued
    # "0" and " 0" (0.5 in all) split 1 : 3 between 0.5 and 0
    assert reading.mass == pytest.approx(0.9)
    assert dict(reading.probabilities) == pytest.approx({1.0: 0.4 / 0.9, 0.5: 0.125 / 0.9, 0.0: 0.375 / 0.9})
    assert reading.outcome == pytest.approx((0.4 + 0.0625) / 0.9)


def test_an_ambiguous_token_without_a_continuation_loses_its_mass():
    read, asked = scripted({"[[": {"1": 0.2, "0": 0.6}, "[[0": {"hello": 0.9}})
    reading = asyncio.run(read_labels(read, "[[", POINTWISE))
    assert asked == ["[[", "[[0"] and reading.outcome == 1.0 and reading.mass == pytest.approx(0.2)
    read, asked = scripted({"[[": {"1": 0.2, "0": 0.6}, "[[0": {"]]": 1.0}})
    assert asyncio.run(read_labels(read, "[[", POINTWISE, continuations=0)).mass == pytest.approx(0.2)
    assert asked == ["[["]


def test_the_verdict_is_read_where_a_reasoning_judge_wrote_it():
    assert verdict_continuation("A is sound, B guesses.\nFinal verdict: [[A]]", parse_verdict) == (
        "A is sound, B guesses.\nFinal verdict: [["
    )
    # an echoed instruction is no verdict: the whole reply is kept and the verdict asked after it
    echo = "[[A]] if Attempt A is better, [[B]] if Attempt B is better"
    assert verdict_continuation(echo, parse_verdict) == echo + "\n\n[["
    assert verdict_continuation("<think>long reasoning cut by the limit", parse_verdict) == (
        "<think>long reasoning cut by the limit\n</think>\n\n[["
    )
    assert verdict_continuation("", parse_verdict) == "[["
    assert verdict_continuation("Solid work. [[0.5]]", parse_score) == "Solid work. [["


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    """A byte-level BPE trained here on verdict-like text: it merges some labels into single tokens and writes
    others in pieces, like a real tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token=None))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=330, special_tokens=["<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    corpus = ["Final verdict: [[A]]", "[[B]] is better", " A wins", "[[TIE]]", "Tie", "Time", "The end", "[[0.5]]"]
    raw.train_from_iterator(corpus * 40, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")
    fast.save_pretrained(str(tmp_path_factory.mktemp("verdict-tokenizer")))
    return fast


def test_the_label_tokens_of_a_real_tokenizer(tokenizer):
    vocabulary = LabelVocabulary(tokenizer)
    ids = vocabulary.token_ids(PAIRWISE)
    texts = {vocabulary.texts[i] for i in ids}
    pieces = vocabulary.first_pieces(PAIRWISE)
    for text in texts:  # every id asked for spells (the start of) a label
        assert token_spellings(text, PAIRWISE, pieces)
    assert {"A", "B", "a", "b"} <= texts  # single bytes: tokens of any byte-level BPE
    for variant in ("A", " A", "B", " B", "TIE", " TIE", "Tie", "tie"):  # the tokenizer's own start of each
        first = vocabulary.texts[tokenizer.encode(variant, add_special_tokens=False)[0]]
        assert first in texts or not first.strip()  # a bare space is no label (its mass is missing)
    assert "TIE" in texts and "Tie" in texts  # merged by the training corpus: complete single tokens
    assert "The" not in texts and "Time" not in texts
    assert ("T" in texts) == ("T" in pieces)  # "T" counts only if the tokenizer starts a spelling of TIE with it
    # A whole distribution over the vocabulary: the label masses are the sums over those tokens.
    probabilities = [1.0 / len(vocabulary.texts)] * len(vocabulary.texts)
    by_text = vocabulary.by_text((i, probabilities[i]) for i in ids)
    assert math.isclose(sum(by_text.values()), len(ids) / len(vocabulary.texts))


def test_the_zero_is_continued_with_the_tokens_that_follow_it(tokenizer):
    vocabulary = LabelVocabulary(tokenizer)
    after = LabelTargets(((".5", 0.5), ("", 0.0)), first=False)
    texts = {vocabulary.texts[i] for i in vocabulary.token_ids(after)}
    assert {"]", "."} <= texts and all(t.lstrip(" ").startswith(("]", ".")) for t in texts)
    assert len(vocabulary.token_ids(PAIRWISE)) <= LabelVocabulary.max_ids


def test_an_ambiguous_token_of_negligible_mass_is_not_read_further():
    read, asked = scripted({"[[": {"1": 0.5, "0": 0.005}, "[[0": {"]]": 1.0}})
    reading = asyncio.run(read_labels(read, "[[", POINTWISE))
    assert asked == ["[["] and reading.outcome == 1.0 and reading.mass == pytest.approx(0.5)
