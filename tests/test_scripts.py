"""Text in scripts other than space-separated Latin (issue 9 §1): one Unicode-script rule
(languages.py) used by ECLeKTiC recall, same-script groups, OWL units, masking and taxonomy, and
CKA continuations. Pure functions and probes without a model: fast."""

from __future__ import annotations

import random

import pandas as pd
import pytest
import regex

from babelprobe.families.eclektic.analysis import summarise_setting
from babelprobe.families.owl.analysis import error_category
from babelprobe.families.cka.config import DEMO_CKA
from babelprobe.families.owl.config import DEMO_OWL
from babelprobe.data.polyglot_or_not import load_cka_facts
from babelprobe.families.eclektic.data import EclekticRow
from babelprobe.families.owl.data import OwlItem, load_owl
from babelprobe.data.perturbations import MASK, NameNotMaskable, mask_names, shuffle_words
from babelprobe.text.scripts import SCRIPTS, char_script, detect_script, is_unspaced, language_script
from babelprobe.text.units import joins_without_space, text_units
from babelprobe.families.eclektic.metrics import word_recall, words_of
from babelprobe.text.segment import word_count
from babelprobe.families.owl.metrics import name_candidates, name_cloze_correct, script_tokens, split_passage
from babelprobe.models.base import GenerateResult
from babelprobe.families.cka.probe import continuation
from babelprobe.families.eclektic.probe import EclekticProbe
from babelprobe.families.owl.probe import OwlProbe

# ---------------------------------------------------------------- 1. ECLeKTiC normalized recall

FOUND = [  # (gold, prediction, target language): every gold word is in the prediction
    ("トビアス・マイスター", "ドイツ語の吹き替えはトビアス・マイスターです", "ja"),  # katakana + particles
    ("パリ", "パリです", "ja"),
    ("ﾊﾟﾘ", "答えはパリ。", "ja"),  # halfwidth katakana: NFKC
    ("ひらがな", "それはひらがなですね", "ja"),  # hiragana
    ("東京タワー", "正解は東京タワーです", "ja"),  # mixed Han + katakana
    ("北爱尔兰", "在爱尔兰北部", "zh"),  # each ideograph a word (footnote 7)
    ("กรุงเทพ", "เมืองหลวงคือกรุงเทพครับ", "th"),
    ("서울", "서울입니다", "ko"),  # copula attached
    ("서울", "수도는 서울에서는 멀다", "ko"),  # particles stacked
    ("פריז", "בפריז", "he"),  # proclitic preposition
    ("פָּרִיז", "ופריז", "he"),  # vowel points dropped; conjunction
    ("القاهرة", "بالقاهرة", "ar"),
    ("القاهرة", "وللقاهرة", "ar"),  # ل + ال written لل
    ("Tobias Meister", "Tobias Meisters Stimme", "de"),  # genitive -s
    ("İstanbul", "ISTANBUL'da", "tr"),  # Turkish İ casefolds with a dot; apostrophe is punctuation
    ("Pariisi", "Hän asuu Pariisissa", "fi"),  # case ending, 3 letters
    ("Paris", "It is PARIS, of course.", "en"),
    ("ＰＡＲＩＳ", "paris", "en"),  # fullwidth: NFKC
]
NEAR_MISSES = [  # (gold, prediction, target language, recall): a different word sharing a prefix
    ("パリ", "パリスです", "ja", 0.0),  # a longer katakana name
    ("서울", "서울대학교입니다", "ko", 0.0),  # Seoul National University is not Seoul
    ("פריז", "ספריז", "he", 0.0),  # ס is not a proclitic
    ("Tobias Meister", "Tobias Meisterson", "de", 0.5),
    ("Paris", "Parisian cafés", "en", 0.0),
    ("Helsinki", "Helsinkiläinen", "fi", 0.0),  # a 6-letter derivation
    ("Ankara", "Ankaralılar", "tr", 0.0),
    ("1961", "19615", "en", 0.0),  # digits never take an ending
]


@pytest.mark.parametrize("gold,prediction,language", FOUND)
def test_normalized_recall_finds_attached_forms(gold, prediction, language):
    assert word_recall(gold, prediction, language) == 1.0


@pytest.mark.parametrize("gold,prediction,language,recall", NEAR_MISSES)
def test_normalized_recall_rejects_a_different_name(gold, prediction, language, recall):
    assert word_recall(gold, prediction, language) == recall


def test_compat_is_still_the_notebook():
    # the notebook's substring rule, unchanged: it finds the near-misses and misses case/NFKC
    assert [word_recall(g, p, lang, "compat") for g, p, lang, _ in NEAR_MISSES] == [1.0] * 8
    assert word_recall("Paris", "It is PARIS, of course.", "en", "compat") == 0.0
    assert word_recall("ﾊﾟﾘ", "答えはパリ。", "ja", "compat") == 0.0
    assert word_recall("北爱尔兰", "爱尔兰", "zh", "compat") == 0.75
    assert word_recall("Tobias Meister", "Tobias Meisters Stimme", "de", "compat") == 1.0


def test_units_by_script():
    assert words_of("ドイツ語のトビアス・マイスター") == ["ドイツ", "語", "の", "トビアス", "マイスター"]
    assert words_of("1961年") == ["1961", "年"]


# ---------------------------------------------------------------- 2. one script rule


def test_script_table_names_the_same_sets_as_the_iso_codes():
    text = "".join(map(chr, range(0x20, 0x30000)))
    for code, name in SCRIPTS.items():
        assert regex.findall(rf"\p{{Script={code}}}", text) == regex.findall(rf"\p{{Script={name}}}", text), code


@pytest.mark.parametrize("ch,script", [
    ("Ａ", "Latin"),  # FULLWIDTH LATIN: not Katakana, not unknown
    ("ﾡ", "Hangul"),  # HALFWIDTH HANGUL was mapped to Katakana
    ("ｱ", "Katakana"), ("ー", "Katakana"), ("々", "Han"), ("ั", "Thai"), ("я", "Cyrillic"), ("1", None), (",", None),
])
def test_char_script_reads_unicode_properties(ch, script):
    assert char_script(ch) == script


def test_hangul_is_spaced_and_thai_marks_are_thai_everywhere():
    assert detect_script("ﾡﾢﾣ") == "Hangul"
    assert not is_unspaced("서") and is_unspaced("ั") and is_unspaced("ー")
    assert script_tokens("서울에 갑니다") == ["서울에", "갑니다"]  # OWL tokens: Korean words, not syllables
    assert text_units("서울에 갑니다") == ["서울에", "갑니다"]
    assert words_of("서울에 갑니다") == ["서울에", "갑니다"]
    assert not joins_without_space("서울의 수도는")
    assert joins_without_space("ที่")  # ends in a Thai tone mark
    assert joins_without_space("東京。") and not joins_without_space("café") and not joins_without_space("cafe\u0301")


def test_cka_continuations_on_the_bundled_data_are_unchanged():
    # every bundled language is spaced: the object follows the stem after one space, as before
    facts = load_cka_facts(DEMO_CKA)
    assert len(facts) > 100
    for fact in facts:
        for stem in fact.stems:
            for obj in (fact.true, *fact.false):
                assert continuation(stem, obj) == (obj if stem[-1].isspace() else " " + obj), (fact.fact_id, stem)


# ---------------------------------------------------------------- 3. same script by language


def test_language_script_from_likely_subtags():
    assert [language_script(c) for c in ("ja", "zh", "zh-TW", "ko", "he", "sr", "sr-Latn", "en")] == [
        "Han", "Han", "Han", "Hangul", "Hebrew", "Cyrillic", "Latin", "Latin"]
    assert language_script("xx") is None


def test_same_script_pairs_follow_the_language_not_the_question_text():
    # ja questions mostly in hiragana or mostly in Han: both are Japanese, Han like Chinese (§4.2)
    rows = [
        EclekticRow(q_id="q1", source_language="zh", target_language="zh", question="东京塔在哪里？", answer="东京"),
        EclekticRow(q_id="q1", source_language="zh", target_language="ja", question="東京はどこですか", answer="東京"),
        EclekticRow(q_id="q1", source_language="zh", target_language="en", question="Where is it?", answer="Tokyo"),
        EclekticRow(q_id="q2", source_language="zh", target_language="zh", question="首都", answer="北京"),
        EclekticRow(q_id="q2", source_language="zh", target_language="ja", question="日本国首都東京都", answer="北京"),
    ]
    probe = EclekticProbe()
    records = [probe.score(r, [GenerateResult(text=r.answer)]) for r in rows]
    assert [r.script for r in records] == ["Han", "Han", "Latin", "Han", "Han"]
    items = pd.DataFrame([r.model_dump() for r in records])
    assert {k: v.overall.n for k, v in summarise_setting(items).same_script.items()} == {"same": 2, "cross": 1}
    # a run stored before the fix (scripts read from the text) is grouped the same way
    items["script"] = [detect_script(r.question) for r in rows]
    assert items["script"].tolist()[1] == "Hiragana"
    assert {k: v.overall.n for k, v in summarise_setting(items).same_script.items()} == {"same": 2, "cross": 1}


# ---------------------------------------------------------------- 4. OWL units for shuffle and split

ZH = "林黛玉说：宝玉来了。她笑着走进屋里，看见众人都在。"


def zh_item(passage: str = ZH, names: tuple[str, ...] = ("林黛玉",)) -> OwlItem:
    return OwlItem(book_id="hlm", author="曹雪芹", title_en="Dream of the Red Chamber", language="zh",
                   language_group="unseen", passage_id="1", passage=passage, names=names)


def test_unspaced_passages_shuffle_and_split_by_words():
    # units are jieba's words (issue 16 §2), not characters
    shuffled = shuffle_words(ZH, seed=0, key="hlm/1/zh")
    assert shuffled != ZH and sorted(shuffled) == sorted(ZH)
    assert "林黛玉" in shuffled and "众人" in shuffled
    first, second = split_passage(ZH)
    assert first and second and first + second == ZH
    assert word_count(first) == word_count(ZH) // 2  # words: its punctuation is no word (issue 27 §6)
    prompt = OwlProbe("prefix").prompt(zh_item())
    assert f"<passage>{first}</passage>" in prompt


def test_spaced_passages_shuffle_and_split_as_before():
    # byte-identical to the whitespace rule on the bundled passages (the demo's OWL numbers)
    for item in load_owl(DEMO_OWL):
        for seed in (0, 1, 7):
            words = item.passage.split()
            random.Random(f"{seed}/{item.key}").shuffle(words)
            assert shuffle_words(item.passage, seed, item.key) == " ".join(words)
        words = item.passage.split()
        half = len(words) // 2
        assert split_passage(item.passage) == (" ".join(words[:half]), " ".join(words[half:]))


# ---------------------------------------------------------------- 5. OWL masking


def test_names_glued_to_unspaced_text_are_masked():
    assert mask_names(ZH, ["林黛玉", "宝玉"]) == f"{MASK}说：{MASK}来了。她笑着走进屋里，看见众人都在。"
    assert mask_names("Harry说", ["Harry"]) == f"{MASK}说"
    prompt = OwlProbe("name-cloze", "masked").prompt(zh_item())
    assert MASK in prompt.split("Here is the passage:")[1] and "林黛玉" not in prompt


def test_a_name_that_cannot_be_masked_is_an_error_row():
    # the Finnish genitive Tomin is a form of the name, masked since issue 16 §1
    assert mask_names("Tomin kissa istui.", ["Tom"], "fi") == f"{MASK} kissa istui."
    with pytest.raises(NameNotMaskable, match="Tom"):
        mask_names("Tomintalossakinko kissa istui.", ["Tom"], "fi")  # an ending beyond the rule
    item = zh_item("Tomintalossakinko kissa istui ikkunalla.", ("Tom",)).model_copy(update={"language": "fi"})
    probe = OwlProbe("name-cloze", "masked")
    assert probe.requests(item) == []  # nothing is asked
    with pytest.raises(NameNotMaskable):
        probe.score(item, [])  # the runner turns this into the item's error
    row = probe.failed(item, "scoring failed: NameNotMaskable: cannot mask 'Tom'")
    assert row.error and row.prompt == "" and row.correct is None


# ---------------------------------------------------------------- 6. OWL error taxonomy


def cloze_row(name: str) -> pd.Series:
    return pd.Series({"task": "name-cloze", "name": name, "output": f"<name>{name}</name>"})


@pytest.mark.parametrize("name,category", [
    ("Он", "pronoun"), ("она", "pronoun"), ("he", "pronoun"), ("él", "pronoun"),
    ("Mr.", "honorific"), ("Господин", "honorific"), ("Oblonsky", "wrong name"),
])
def test_error_taxonomy_in_every_script(name, category):
    assert error_category(cloze_row(name)) == category


def test_honorifics_are_not_gold_names():
    assert name_candidates(["Mr. Darcy", "Don Quixote"]) == {"Mr. Darcy", "Darcy", "Don Quixote", "Quixote"}
    assert not name_cloze_correct("<name>Mr.</name>", ["Mr. Darcy"])
    assert not name_cloze_correct("<name>Mrs.</name>", ["Mr. Darcy"])
    assert not name_cloze_correct("<name>Don</name>", ["Don Quixote"])
    assert name_cloze_correct("<name>Darcy</name>", ["Mr. Darcy"])
