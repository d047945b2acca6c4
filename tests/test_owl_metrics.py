"""OWL parsers, metrics and perturbations on hand-made edge cases (issue 3 groundwork)."""

from __future__ import annotations

import pytest

from babelprobe.data.perturbations import MASK, mask_and_shuffle, mask_names, shuffle_words
from babelprobe.families.owl.metrics import (
    bleu, chrf, direct_probe_correct, name_candidates, name_cloze_correct, parse_name, parse_title_author,
    script_tokens, similarity, split_passage, trim_echo,
)
from babelprobe.text.tokenize import rouge_l_text as rouge_l


@pytest.mark.parametrize("text,expected", [
    ('<output>"title": "Don Quixote", "author": "Miguel de Cervantes"</output>', ("Don Quixote", "Miguel de Cervantes")),
    ('"title": "Don Quixote","author": "Cervantes"', ("Don Quixote", "Cervantes")),
    ("Title: Moby Dick\nAuthor: Herman Melville", ("Moby Dick", "Herman Melville")),
    ('<output>"author": "Tolstoy", "title": "Anna Karenina"</output>', ("Anna Karenina", "Tolstoy")),
    ('<output>"title": "1984", "author": "George Orwell"}</output>', ("1984", "George Orwell")),
    ("I think this is Moby Dick by Herman Melville.", ("I think this is Moby Dick by Herman Melville.",) * 2),
])
def test_parse_title_author(text, expected):
    assert parse_title_author(text) == expected


def test_direct_probe_rules():
    titles, authors = ["Nineteen Eighty-Four", "1984"], ["George Orwell"]
    assert direct_probe_correct('"title": "Nineteen Eighty Four", "author": "George Orwell"', titles, authors)
    assert direct_probe_correct('"title": "1984", "author": "Orwell, George (Eric Blair)"', titles, ["Orwell"])
    # right author, wrong title is wrong (the paper's most common error)
    assert not direct_probe_correct('"title": "Animal Farm", "author": "George Orwell"', titles, authors)
    # diacritics and non-Latin gold forms go through unidecode
    assert direct_probe_correct('"title": "Ana Karenina", "author": "Lev Tolstoi"', ["Anna Karenina"], ["Лев Толстой"])
    # free text: the raw answer stands for both fields, gold strings found inside it
    assert direct_probe_correct("This is Moby Dick by Herman Melville.", ["Moby Dick"], ["Herman Melville"])


def test_name_cloze_rules():
    assert parse_name("<name>Hester</name>") == "Hester"
    assert parse_name("Answer: <output> Jean\nValjean </output>") == "Jean Valjean"
    assert name_candidates(["Hester Prynne"]) == {"Hester Prynne", "Hester", "Prynne"}
    assert name_cloze_correct("<name>Prynne</name>", ["Hester Prynne"])  # one word of the name
    assert name_cloze_correct("<name>Héster</name>", ["Hester Prynne"])  # diacritics normalised
    assert name_cloze_correct("<name>Hestor</name>", ["Hester Prynne"])  # similarity 0.83 >= 0.7
    assert similarity("hestor", "hester") == pytest.approx(5 / 6)
    assert not name_cloze_correct("<name>She</name>", ["Hester Prynne"])
    assert not name_cloze_correct(f"<name>{MASK}</name>", ["Hester Prynne"])
    assert name_cloze_correct("<name>Раскольников</name>", ["Raskolnikov"])  # transliterated
    assert not name_cloze_correct("", ["Hester"])


def test_prefix_split_and_echo():
    first, second = split_passage("one two three four five")
    assert (first, second) == ("one two", "three four five")
    assert trim_echo("It was the best of times,", "best of times, it was the worst of times") == "it was the worst of times"
    assert trim_echo("call me", "Ishmael. Some years ago") == "Ishmael. Some years ago"


def test_script_tokens_keep_every_script():
    assert script_tokens("Все счастливые семьи, похожи!") == ["все", "счастливые", "семьи", "похожи"]
    assert script_tokens("吾輩は猫である") == ["吾輩", "は", "猫", "で", "ある"]  # words (issue 16 §2)
    assert script_tokens("Ünïcode—text 42") == ["ünïcode", "text", "42"]
    assert script_tokens("मेरा नाम") == ["मेरा", "नाम"]  # Devanagari vowel signs are marks, kept


def test_overlap_metrics_on_non_latin_text():
    ref = "Все счастливые семьи похожи друг на друга"
    assert rouge_l(ref, ref) == pytest.approx(1.0)
    assert 0 < rouge_l("Все семьи похожи", ref) < 1
    assert bleu(ref, ref) == pytest.approx(100.0)
    assert chrf(ref, ref) == pytest.approx(100.0) and chrf(ref, ref, word_order=0) == pytest.approx(100.0)
    hyp = "Все счастливые семьи похожи"
    assert chrf(hyp, ref, word_order=2) != chrf(hyp, ref, word_order=0)  # chrF++ adds word bigrams
    assert rouge_l("吾輩は猫", "吾輩は猫である") > 0.5


def test_perturbations_are_seeded_and_mask_whole_names():
    text = "Hester Prynne met Hester's daughter Pearl; Hesterville is elsewhere."
    masked = mask_names(text, ["Hester Prynne", "Hester", "Pearl"])
    assert masked == f"{MASK} met {MASK}'s daughter {MASK}; Hesterville is elsewhere."
    a = shuffle_words(text, seed=1, key="book/1/en")
    assert a == shuffle_words(text, seed=1, key="book/1/en") != shuffle_words(text, seed=1, key="book/2/en")
    assert sorted(a.split()) == sorted(text.split())
    assert sorted(mask_and_shuffle(text, ["Pearl"], 0, "k").split()) == sorted(mask_names(text, ["Pearl"]).split())


def test_the_authors_rule_keeps_punctuation():
    # "moby dick" vs "moby-dick": ratio 0.89 < 0.9 and no substring: wrong, as in the authors' script
    assert not direct_probe_correct('"title": "Moby Dick", "author": "Herman Melville"', ["Moby-Dick"], ["Herman Melville"])
