"""The new rules of the language layer must not over-match (issue 27, lang-guard): each rule's
guard, checked at its mechanism. The conformance tables (tests/languages/*.tsv, rows with source
``guard:``) hold the cases per language; these tests pin the mechanisms' own contracts."""

from __future__ import annotations

import pytest

from babelprobe.data.perturbations import mask_names
from babelprobe.families.eclektic.metrics import parse_judge, recall_verdict, word_recall
from babelprobe.text.affixes import stem_match
from babelprobe.text.numbers import han_digit_years


@pytest.mark.parametrize("between,language,is_range", [
    (" to ", "en", True), (" bis ", "de", True), (" e il ", "it", True), ("年至", "zh", True), ("年から", "ja", True),
    (" or ", "en", False), (" oder ", "de", False), (" ou ", "fr", False), ("年或", "zh", False), ("年または", "ja", False),
    (". in ", "en", False), ("; ", "en", False), ("。", "ja", False), (" or ", "xx", True),  # 'or' is English only
])
def test_parts_a_range(between, language, is_range):
    from babelprobe.text.numbers import parts_a_range  # new here: imported in the test, so main reports each case

    assert parts_a_range(between, language) is is_range


def test_range_evidence_only_where_no_break():
    found = recall_verdict("1914–1918", "from 1914 to 1918", "en")
    assert found.value == 1.0 and [e.rule for e in found.evidence] == ["range"]
    assert word_recall("1914–1918", "in 1914; and in 1918", "en") == 0.0


@pytest.mark.parametrize("text,expected", [
    ("一九八四年", "1984年"), ("二〇〇一年", "2001年"), ("三四年", "三四年"), ("五六年前", "五六年前"), ("一一道来", "一一道来"),
])
def test_han_digit_years_need_three_digits(text, expected):
    assert han_digit_years(text) == expected


@pytest.mark.parametrize("word,gold,found", [
    ("matin", "matti", True), ("matilla", "matti", True), ("pekanpaiva", "pekka", False),
    ("helsingissäkin", "helsinki", True), ("matilda", "matti", False), ("joel", "joki", False),
    ("hangover", "hanko", False), ("turuna", "turku", False),
])
def test_weak_grade_takes_only_closing_endings(word, gold, found):
    assert (stem_match(word, gold, "fi") is not None) is found


@pytest.mark.parametrize("answer,language,verdict", [
    ("不知道吗? 是的", None, True), ("你不知道吗？不是。", "zh", False), ("不知道。", "zh", None),
    ("No, sé que no", "es", False), ("No sé", "es", None), ("Nie. Wiem", "pl", False), ("मुझे नहीं पता", "hi", None),
])
def test_dont_know_neither_asked_back_nor_across_punctuation(answer, language, verdict):
    assert parse_judge(answer, language) is verdict


@pytest.mark.parametrize("text,name,language,expected", [
    ("王明和王先生", "王", "zh", "王明和[MASK]先生"), ("明子と明が来た。", "明", "ja", "明子と[MASK]が来た。"),
    ("林黛玉说", "林黛玉", "zh", "[MASK]说"), ("王先生的书", "王", "zh", "[MASK]先生的书"),
    ("凤姐儿笑道", "凤姐", "zh", "[MASK]儿笑道"), ("老王来了", "王", "zh", "老[MASK]来了"),  # never leave the name
])
def test_unspaced_mask_not_inside_a_longer_word(text, name, language, expected):
    assert mask_names(text, [name], language) == expected


@pytest.mark.parametrize("prediction,gold,value", [
    ("SĄD", "sad", 0.0), ("SAD", "sąd", 1.0), ("LODZ", "Łódź", 1.0), ("HẢ", "Hà", 0.0), ("10,5 €", "10", 0.0),
    ("10,5 €", "10,5", 1.0), ("10 €", "10", 1.0),
])
def test_capitals_keep_printed_diacritics_and_decimal_amounts_stay_whole(prediction, gold, value):
    language = {"SĄD": "pl", "SAD": "pl", "LODZ": "pl", "HẢ": "vi"}.get(prediction, "de")
    assert word_recall(gold, prediction, language) == value
