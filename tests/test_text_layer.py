"""The language layer's core (issue 27): word counts without punctuation (class 6), word-shuffled
controls in scripts with spaces between phrases (class 7), segmentation flags on memorization
items, one ROUGE-L, the profile table and lazy loading. Expected words come from ordinary reading
of each sentence, not from the code."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from rouge_score import rouge_scorer

from babelprobe.data.perturbations import ControlNotPossible, shuffle_units
from babelprobe.families.memorization.metrics import rouge_l as memorization_rouge_l
from babelprobe.families.owl.data import OwlItem
from babelprobe.families.owl.metrics import split_passage
from babelprobe.families.owl.probe import OwlProbe
from babelprobe.text import Evidence, Unsure, profile, tokens, word_count, words
from babelprobe.text.evidence import evidence_from_json, evidence_json
from babelprobe.text.segment import segmentation_flag
from babelprobe.text.tokenize import rouge_l_text, script_tokens

try:  # the optional `icu` extra (Lao, Khmer, Burmese dictionary word break)
    import icu  # noqa: F401
    HAS_ICU = True
except ImportError:
    HAS_ICU = False


def _item(passage: str, language: str) -> OwlItem:
    return OwlItem(book_id="b", author="a", title_en="t", language=language, language_group="unseen",
                   passage_id="1", passage=passage, names=())


# ---------------------------------------------------------------- class 6: punctuation is no word

# (passage, language, its words as a reader counts them, the first word of the second half)
PREFIX_CASES = [
    ("他说：“好！”我们走吧。", "zh", ["他", "说", "好", "我们", "走", "吧"], "我们"),
    ("「ええ、そう。」と彼女は言った。", "ja", ["ええ", "そう", "と", "彼女", "は", "言っ", "た"], "彼女"),
    ("《红楼梦》、《西游记》和《水浒传》都是小说。", "zh",
     ["红楼梦", "西游记", "和", "水浒传", "都", "是", "小说"], "水浒传"),
]


@pytest.mark.parametrize("passage, language, expected_words, second_starts", PREFIX_CASES)
def test_prefix_halves_and_word_count_leave_punctuation_out(passage, language, expected_words, second_starts):
    assert word_count(passage, language) == len(expected_words)
    first, second = split_passage(passage, language)
    assert first + second == passage
    assert second.lstrip("「《“").startswith(second_starts)
    prompt = OwlProbe("prefix").prompt(_item(passage, language))
    count = int(re.search(r"more than (\d+) words", prompt).group(1))
    assert count == len(expected_words) - len(expected_words) // 2


def test_word_count_in_spaced_scripts_counts_written_words():
    assert word_count("Hello, world — a well-known e-mail from 1980's!", "en") == 7
    assert word_count("Он сказал: «Да!» — и ушёл.", "ru") == 5
    assert word_count("2001년에는 서울에서 살았다.", "ko") == 3


# ---------------------------------------------------------------- class 7: controls shuffle words

PHRASED = [
    ("ผมชอบกินกาแฟ แต่เพื่อนชอบดื่มชา", "th"),  # Thai: spaces between phrases only
    ("吾輩は猫である。\u3000名前はまだ無い。", "ja"),  # an ideographic space between sentences
    ("我喜欢 Python 编程", "zh"),  # a Latin word between Chinese phrases
]


@pytest.mark.parametrize("text, language", PHRASED)
def test_controls_shuffle_words_never_whole_phrases_and_never_give_the_text_back(text, language):
    phrases = text.split()
    controls = {shuffle_units(text, seed, "k", language) for seed in range(24)}
    assert text not in controls
    for control in controls:  # the same letters (a dictionary may cut the new order differently)
        assert sorted("".join(control.split())) == sorted("".join(text.split()))
    # words move across phrase borders: not only permutations of the phrases
    assert controls - {"".join(p) for p in _permutations(phrases)} - {" ".join(p) for p in _permutations(phrases)}


def _permutations(items: list[str]) -> list[tuple[str, ...]]:
    from itertools import permutations

    return list(permutations(items))


@pytest.mark.parametrize("text", ["ha ha ha", "Donaudampfschifffahrt", "  x  ", "กาแฟกาแฟ"])
def test_a_text_with_under_two_distinct_words_has_no_control(text):
    with pytest.raises(ControlNotPossible, match="fewer than 2 distinct words"):
        shuffle_units(text, 0, "k")


def test_spaced_controls_are_unchanged_where_the_shuffle_differs():
    import random

    text = " the quick brown fox jumps"
    for seed in range(8):
        words_ = text.split()
        random.Random(f"{seed}/k").shuffle(words_)
        if " ".join(words_) != text.strip():
            assert shuffle_units(text, seed, "k") == " " + " ".join(words_)


# ---------------------------------------------------------------- point 5: segmentation flags

def test_segmentation_flags_say_why_a_text_is_not_cut_by_a_dictionary():
    assert segmentation_flag("The cat sat.", "en") is None
    assert segmentation_flag("ผมชอบกินกาแฟ", "th") is None
    assert "no row" in segmentation_flag("Some text.", "xx")
    assert "Tibetan" in segmentation_flag("བོད་ཡིག", "bo")
    if HAS_ICU:
        assert segmentation_flag("ສະບາຍດີທຸກຄົນ", "lo") is None  # ICU's Lao dictionary
    else:
        assert "PyICU" in segmentation_flag("ສະບາຍດີທຸກຄົນ", "lo")


@pytest.mark.skipif(not HAS_ICU, reason="PyICU (the icu extra) is not installed")
def test_lao_khmer_burmese_are_cut_into_dictionary_words():
    assert words("ສະບາຍດີທຸກຄົນ", "lo") == ["ສະບາຍດີ", "ທຸກຄົນ"]
    assert words("ខ្ញុំស្រលាញ់ប្រទេសកម្ពុជា", "km") == ["ខ្ញុំ", "ស្រលាញ់", "ប្រទេស", "កម្ពុជា"]
    assert len(words("မြန်မာနိုင်ငံသည်", "my")) == 2


# ---------------------------------------------------------------- one ROUGE-L

TEXTS = [
    ("the cat sat on the mat", "the cat lay on a mat"),
    ("Москва — столица России", "столица России Москва"),
    ("ผมชอบกินกาแฟมาก", "ผมชอบดื่มกาแฟ"),
    ("吾輩は猫である", "吾輩は犬である"),
    ("नमस्ते दुनिया, कैसे हो?", "कैसे हो दुनिया"),
    ("", "x"),
]


@pytest.mark.parametrize("hypothesis, reference", TEXTS)
def test_one_rouge_l_equals_rouge_score_with_the_script_tokenizer(hypothesis, reference):
    class Tokenizer:
        def tokenize(self, text: str) -> list[str]:
            return script_tokens(text)

    expected = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Tokenizer()).score(reference, hypothesis)["rougeL"].fmeasure
    assert rouge_l_text(hypothesis, reference) == expected
    assert memorization_rouge_l(script_tokens(hypothesis), script_tokens(reference)) == expected


# ---------------------------------------------------------------- tokens, profiles, evidence

def test_tokens_have_spans_kinds_and_break_where_the_script_changes():
    got = tokens("2001년에는 U.S. 5%를", "ko")
    assert [(t.text, t.kind) for t in got] == [("2001", "number"), ("년에는", "word"), ("U.S", "word"),
                                               (".", "punct"), ("5", "number"), ("%", "punct"), ("를", "word")]
    text = "ב1948 נוסדה"
    assert [text[t.start:t.end] for t in tokens(text, "he")] == ["ב", "1948", "נוסדה"]


@pytest.mark.parametrize("code, script, spaced", [("pl", "Latin", True), ("th", "Thai", False), ("iw", "Hebrew", True),
                                                  ("zh-Hant", "Han", False), ("sr", "Cyrillic", True),
                                                  ("sr-Latn", "Latin", True), ("heb_Hebr", "Hebrew", True),
                                                  ("az-Cyrl", "Cyrillic", True)])
def test_profiles_come_from_the_table(code, script, spaced):
    found = profile(code)
    assert found is not None and found.script == script and found.spaced is spaced and found.source


@pytest.mark.parametrize("code", ["xx", "qaa", "", "english"])
def test_an_unknown_language_has_no_profile(code):
    assert profile(code) is None


def test_evidence_round_trips_as_json():
    items = [Evidence("name_form", "Tomaszowi", form="Tomasz", span=(3, 12), source="UniMorph pol"), Evidence("fold", "e")]
    assert evidence_from_json(evidence_json(items)) == items
    assert Unsure("no table").reason == "no table"


def test_importing_the_layer_loads_no_segmenter_and_no_table():
    code = ("import sys, babelprobe.text; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jieba', 'fugashi', 'pythainlp', 'icu', 'langcodes')"
            " or m.startswith('babelprobe.text.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- memorization: flags and controls

def _window(text: str, language: str):
    from babelprobe.families.memorization.data import Sample
    from babelprobe.families.memorization.probe import Window

    sample = Sample(sample_id="s1", language=language, text=text, source="x.jsonl:1")
    cut = text.find(" ") + 1  # token 0: the first word and its space (the prompt); then two suffix tokens
    return Window(sample, 1, 2, 3, 0, (1, 2, 3), ((0, cut), (cut, len(text) - 1), (len(text) - 1, len(text))))


def test_memorization_items_carry_the_segmentation_flag_and_reports_count_it():
    import pandas as pd
    from rich.console import Console

    from babelprobe.families.memorization.analysis import summarise_memorization
    from babelprobe.families.memorization.probe import SuffixProbe
    from babelprobe.families.memorization.report import (
        memorization_sections,
        print_memorization_summary,
    )

    probe = SuffixProbe([1], 2)
    records = [probe.failed(_window(text, language), "x") for text, language in
               [("བོད་ཡིག་ནི་", "bo"), ("The cat sat down.", "en"), ("ผมชอบกินกาแฟ", "th"), ("Some words.", "xx")]]
    assert [r.text_flag is not None for r in records] == [True, False, False, True]
    items = pd.DataFrame([r.model_dump() for r in records])
    summary = summarise_memorization(items, n_resamples=10)
    flagged = {row.language: row.text_flagged for row in summary.by_language}
    assert flagged == {"bo": 1, "en": 0, "th": 0, "xx": 1}
    console = Console(record=True, width=200)
    print_memorization_summary(summary, console=console)
    assert "flagged" in console.export_text()
    sections = memorization_sections(summary, items)
    by_language = sections[0].tables[1]
    assert by_language.columns[-1] == "flagged"
    shown = str(sections[1].items.rows)
    assert "text flag: language 'bo' has no row" in shown and "no dictionary segmenter for Tibetan" in shown


def test_a_window_whose_suffix_has_one_distinct_word_gets_no_control():
    from babelprobe.families.memorization.probe import SuffixProbe

    probe = SuffixProbe([1], 2)
    with pytest.raises(ControlNotPossible):
        probe.control_request(_window("ab ha ha", "en"))  # the suffix (after the first token) is 'ha ha'


def test_the_named_policies_equal_the_families_rules():
    from babelprobe.families.owl.metrics import normalize as owl_normalize
    from babelprobe.text import policy

    for text in ["Don  Quijote", "Ἀριστοτέλης", "Москва", "東京", "İstanbul"]:
        assert policy("owl-direct-probe")(text, None) == owl_normalize(text)
        assert policy("script-tokens")(text, None) == " ".join(script_tokens(text))
    assert policy("fold")("ΓΙΆΝΝΗΣ", "el") == "γιαννησ"
    with pytest.raises(ValueError, match="unknown text policy 'x': fold, owl-direct-probe, script-tokens"):
        policy("x")


def _table_with(monkeypatch, name: str, edit) -> None:
    """Serve text/data/<name> with one row changed by ``edit`` (a list of cells -> cells)."""
    from importlib import resources

    from babelprobe.text import tables

    lines = resources.files("babelprobe.text").joinpath(f"data/{name}").read_text(encoding="utf-8").splitlines()
    lines[1] = "\t".join(edit(lines[1].split("\t")))

    class Served:
        def joinpath(self, _: str) -> "Served":
            return self

        def read_text(self, encoding: str) -> str:
            return "\n".join(lines)

    monkeypatch.setattr(tables.resources, "files", lambda package: Served())


@pytest.mark.parametrize("name, edit, message", [
    ("languages.tsv", lambda cells: cells[:3] + ["maybe"] + cells[4:], "text/data/languages.tsv:2: field 'spaced' is 'maybe'"),
    ("languages.tsv", lambda cells: cells[:-1] + [" "], "text/data/languages.tsv:2: field 'source' is empty"),
    ("folding.tsv", lambda cells: cells[:2] + ["swap"] + cells[3:], "text/data/folding.tsv:2: field 'what' is 'swap'"),
    ("folding.tsv", lambda cells: cells[:-1], "text/data/folding.tsv:2: 6 fields, expected 7"),
])
def test_a_bad_table_row_is_an_error_naming_file_line_and_field(monkeypatch, name, edit, message):
    from babelprobe.text import languages, normalize

    _table_with(monkeypatch, name, edit)
    normalize.fold_rules.cache_clear()
    languages.profiles.cache_clear()
    try:
        with pytest.raises(ValueError, match=re.escape(message)):
            languages.profiles() if name == "languages.tsv" else normalize.fold_rules()
    finally:
        monkeypatch.undo()
        normalize.fold_rules.cache_clear()
        languages.profiles.cache_clear()


def test_every_public_name_of_the_layer_loads():
    import babelprobe.text as layer

    assert sorted(layer.__all__) == sorted(layer._WHERE)
    assert all(getattr(layer, name) is not None for name in layer.__all__)
