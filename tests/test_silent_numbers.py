"""Issue 16 ("Silent wrong numbers, round two"): name masks that leak the name, word segmentation
for scripts written without spaces, ECLeKTiC normalized recall, name-cloze honorifics and
pronouns. Each case here returned a confident wrong answer (or a silently degraded unit) on the
code before the issue."""

from __future__ import annotations

import random
import re
import unicodedata
import warnings

import pandas as pd
import pytest

from babelprobe.families.owl.analysis import error_category
from babelprobe.families.owl.data import OwlItem
from babelprobe.data.perturbations import MASK, NameNotMaskable, mask_names, shuffle_units, shuffle_words
from babelprobe.text.units import join_units, text_units
from babelprobe.families.eclektic.metrics import word_recall
from babelprobe.families.owl.metrics import (
    HONORIFICS_BY_LANGUAGE, is_honorific, name_candidates, name_cloze_correct, script_tokens, split_passage,
)
from babelprobe.families.owl.probe import OwlProbe

# ---------------------------------------------------------------- 1. masking never leaks the name

# (language, name, passage): every mention is a form of the name the old mask_names left visible
# (a particle, a prefix, an ending, capitals), next to one it did mask.
LEAKS = [
    ("ko", "앨리스", "앨리스는 토끼를 보았다. 토끼가 앨리스에게 말했다. 그리고 앨리스가 웃었다. 앨리스"),
    ("he", "עליסה", "ועליסה אמרה: עליסה, בואי. הספר של עליסה. כשעליסה הלכה, לעליסה היה חתול."),
    ("ar", "أليس", "وقالت أليس: يا أليس، تعالي. لأليس كتاب. فأليس نائمة وبأليس."),
    ("fi", "Alice", "Alicen kissa istui. Alice nauroi. Alicelle annettiin kirja. Alicesta puhuttiin."),
    ("tr", "Alice", "Alice'in kedisi vardı. ALİCE geldi. Alice'e baktı. Alice ile gitti."),
    ("ru", "Алиса", "Алиса пошла домой. У Алисы был кот. Алису видели все. С Алисой говорили. Об Алисе."),
    ("uk", "Оксана", "Оксана прийшла. Оксані дали книгу. Оксану бачили. З Оксаною говорили."),
    ("en", "Alice", "ALICE WAS BEGINNING TO GET VERY TIRED. Alice sat by her sister; Alice's book had no pictures."),
    ("de", "Alice", "Alices Schwester las. ALICE war müde. Alice saß am Ufer."),
]


def _forms_visible(passage: str, name: str, language: str) -> list[str]:
    """Words of ``passage`` that are the name or start with it (or with the stem of a declined
    name), compared case-insensitively with Turkish I folded, after any proclitic of ko/he/ar."""
    def fold(s: str) -> str:
        return unicodedata.normalize("NFC", s).replace("İ", "i").replace("I", "i").replace("ı", "i").lower()

    stems = {fold(name)} | ({fold(name[:-1])} if language in {"ru", "uk"} else set())
    found = []
    for word in re.findall(r"\w+", passage):
        w = fold(word)
        candidates = [w] + ([w[k:] for k in range(1, 4)] if language in {"he", "ar"} else [])
        if any(c.startswith(stem) for c in candidates for stem in stems):
            found.append(word)
    return found


def _item(passage: str, name: str, language: str) -> OwlItem:
    return OwlItem(book_id="b", author="A", title_en="T", title="T", language=language, language_group="unseen",
                   passage_id="1", passage=passage, names=(name,), year=1900)


@pytest.mark.parametrize("language,name,passage", LEAKS, ids=[x[0] for x in LEAKS])
def test_masked_name_cloze_prompts_never_contain_a_form_of_the_name(language, name, passage):
    assert _forms_visible(passage, name, language)  # the check sees the forms in the raw passage
    for perturbation in ("masked", "masked-shuffled"):
        probe = OwlProbe("name-cloze", perturbation)
        item = _item(passage, name, language)
        try:
            prompt = probe.prompt(item)
        except NameNotMaskable:
            continue  # an error row: no prompt is asked
        shown = prompt.split("Here is the passage:")[1]
        assert MASK in shown
        assert _forms_visible(shown, name, language) == [], shown


def test_masks_keep_particles_and_proclitics_and_take_endings():
    assert mask_names("앨리스는 웃었다. 앨리스에게서 편지가 왔다.", ["앨리스"], "ko") == \
        f"{MASK}는 웃었다. {MASK}에게서 편지가 왔다."
    assert mask_names("ועליסה אמרה", ["עליסה"], "he") == f"ו{MASK} אמרה"
    assert mask_names("Alicen kissa", ["Alice"], "fi") == f"{MASK} kissa"
    assert mask_names("У Алисы кот", ["Алиса"], "ru") == f"У {MASK} кот"
    assert mask_names("ALICE sat. Alice's cat.", ["Alice"], "en") == f"{MASK} sat. {MASK}'s cat."
    # a different word that starts with the name is not a form of it, in English
    assert mask_names("Alice met Alicia.", ["Alice"], "en") == f"{MASK} met Alicia."
    assert mask_names("alice in lower case is a common noun here; Alice", ["Alice"], "en") == \
        f"alice in lower case is a common noun here; {MASK}"


def test_a_form_that_cannot_be_masked_is_an_error_row_naming_it():
    # issue 27: the Finnish paradigm (text/data/names/fi.tsv) places case + clitics (-lle-kin-ko-han)
    assert mask_names("Ja sitten Alicellekinkohan sanottiin. Alice.", ["Alice"], "fi") == \
        f"Ja sitten {MASK} sanottiin. {MASK}."
    # ... but not a word glued after the name (Alice + talossa): the layer cannot place it
    with pytest.raises(NameNotMaskable, match=r"'Alicetalossa' at character 10"):
        mask_names("Ja sitten Alicetalossa sanottiin. Alice.", ["Alice"], "fi")
    item = _item("Ja sitten Alicetalossa sanottiin. Alice.", "Alice", "fi")
    probe = OwlProbe("name-cloze", "masked")
    assert probe.requests(item) == []
    with pytest.raises(NameNotMaskable):
        probe.score(item, [])


# ---------------------------------------------------------------- 2. segmentation


def test_unspaced_scripts_are_cut_into_dictionary_words():
    assert text_units("ผมชอบกินกาแฟที่กรุงเทพ") == ["ผม", "ชอบ", "กิน", "กาแฟ", "ที่", "กรุงเทพ"]
    assert text_units("吾輩は猫である。名前はまだ無い。") == ["吾輩", "は", "猫", "で", "ある", "。", "名前", "は", "まだ", "無い", "。"]
    assert text_units("我爱北京天安门") == ["我", "爱", "北京", "天安门"]
    assert "東京" in text_units("東京に行きます")
    from babelprobe.text.dictionary import run_language

    # Han is Japanese in a text with kana or when the caller says so, else Chinese
    assert run_language("Han", "東京に行きます") == "ja" and run_language("Han", "東京都庁", "ja") == "ja"
    assert run_language("Han", "我爱北京") == "zh" and run_language("Thai", "กาแฟ") == "th"
    # spaced scripts stay exactly text.split()
    for text in ("The quick brown fox, jumped.", "Все счастливые семьи", "서울에서 만났다", "שלום  עולם"):
        assert text_units(text) == text.split()


def test_shuffles_move_words_not_letters():
    thai = "ผมชอบกินกาแฟที่กรุงเทพมากครับ"
    shuffled = shuffle_words(thai, 0, "k", "th")
    words = text_units(thai, "th")
    random.Random("0/k").shuffle(words)
    assert shuffled == "".join(words) != thai and sorted(shuffled) == sorted(thai)
    assert all(word in shuffled for word in ("กรุงเทพ", "กาแฟ", "ครับ"))
    japanese = "吾輩は猫である。名前はまだ無い。"
    assert "吾輩" in shuffle_words(japanese, 3, "k") and "名前" in shuffle_words(japanese, 3, "k")
    control = shuffle_units("我爱北京天安门", 0, "k")
    assert "天安门" in control and sorted(text_units(control)) == sorted(["我", "爱", "北京", "天安门"])


def test_prefix_probe_counts_and_splits_words():
    thai = "ผมชอบกินกาแฟที่กรุงเทพมากครับ แต่เพื่อนของผมชอบดื่มชาเย็นที่เชียงใหม่"
    first, second = split_passage(thai, "th")
    words = text_units(thai)
    assert len(text_units(first)) == len(words) // 2 and text_units(first) + text_units(second) == words
    item = _item(thai, "x", "th").model_copy(update={"names": ()})
    prompt = OwlProbe("prefix").prompt(item)
    count = int(re.search(r"more than (\d+) words", prompt).group(1))
    assert count == len(text_units(second)) and count < len(second) // 2  # words, not letters (no punctuation here)
    assert script_tokens("ผมชอบกินกาแฟ") == ["ผม", "ชอบ", "กิน", "กาแฟ"]


def test_a_script_without_segmenter_is_said_once_never_silently():
    from babelprobe.text import dictionary as segmenters

    segmenters._RECORDED.pop("Tibetan", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text_units("བོད་ཡིག")
        text_units("ཡིག བོད")
    said = [w for w in caught if issubclass(w.category, segmenters.SegmenterMissing)]
    assert len(said) == 1 and "Tibetan" in str(said[0].message)
    assert any("Tibetan" in line for line in segmenters.recorded_warnings())
    segmenters.start_run()  # the next run says it again, once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text_units("བོད་ཡིག")
        text_units("བོད་ཡིག")
    assert len([w for w in caught if issubclass(w.category, segmenters.SegmenterMissing)]) == 1


def test_a_missing_segmenter_package_is_recorded(monkeypatch):
    from babelprobe.text import dictionary as segmenters

    def absent():
        raise ImportError("No module named 'pythainlp'")

    monkeypatch.setitem(segmenters._FACTORIES, "th", absent)
    monkeypatch.setattr(segmenters, "_RECORDED", {})
    segmenters.segmenter.cache_clear()
    segmenters._segment.cache_clear()
    try:
        with pytest.warns(segmenters.SegmenterMissing, match="pythainlp is not installed"):
            units = text_units("กาแฟ")
        assert units == ["ก", "า", "แ", "ฟ"]
        assert any("pythainlp" in line for line in segmenters.recorded_warnings())
    finally:
        segmenters.segmenter.cache_clear()
        segmenters._segment.cache_clear()


def test_join_units_puts_no_space_inside_unspaced_text():
    assert join_units(text_units("ผมชอบกินกาแฟ")) == "ผมชอบกินกาแฟ"


# ---------------------------------------------------------------- 3. ECLeKTiC normalized recall

# (gold, prediction, language, normalized recall); compat (the notebook) is pinned elsewhere
RECALL = [
    # numbers, dates, scores, symbols: a whole token
    ("1945-05-12", "1945-12-05", "en", 0.0), ("1945-05-12", "It was 1945-05-12.", "en", 1.0),
    ("2:1", "1:2", "en", 0.0), ("2:1", "They won 2:1.", "en", 1.0), ("3.5", "5.3", "en", 0.0),
    ("3.5", "about 3.5", "en", 1.0), ("-40", "40", "en", 0.0), ("40", "-40", "en", 0.0),
    ("-40", "\u221240 degrees", "en", 1.0), ("C++", "C", "en", 0.0), ("C", "C++", "en", 0.0),
    ("C++", "C++", "en", 1.0), ("C#", "C", "en", 0.0), ("10:30", "10:03", "en", 0.0), ("5%", "50%", "en", 0.0),
    ("1945", "in 1945.", "en", 1.0), ("1945", "ב-1945", "he", 1.0), ("AT&T", "AT&T's network", "en", 1.0),
    ("1990", "1990'larda", "tr", 1.0), ("C++", "C++'ın", "tr", 1.0), ("1990-1995", "1990'larda", "tr", 0.0),
    # Korean
    ("BTS", "BTS입니다", "ko", 1.0), ("C++", "C++는", "ko", 1.0), ("1945", "1945년에", "ko", 1.0),
    ("학생", "학생으로서", "ko", 1.0), ("학생", "학생이지만", "ko", 1.0), ("세종 대왕", "세종대왕은", "ko", 1.0),
    ("세종대왕", "세종 대왕은", "ko", 1.0), ("서울", "서울대학교", "ko", 0.0),
    # Hebrew article after ב/כ/ל
    ("הכנסת", "בכנסת", "he", 1.0), ("הכנסת", "לכנסת", "he", 1.0), ("הכנסת", "וכשהכנסת", "he", 1.0),
    ("הכנסת", "ככנסת", "he", 1.0), ("הכנסת", "מכנסת", "he", 0.0),
    # native digits
    ("1945", "١٩٤٥", "ar", 1.0), ("1945", "۱۹۴۵", "fa", 1.0), ("1945", "१९४५", "hi", 1.0),
    ("1945", "๑๙๔๕", "th", 1.0), ("1945", "１９４５", "ja", 1.0), ("1945", "১৯৪৫", "bn", 1.0),
    # Roman numerals and one-letter words take no ending
    ("World War I", "World War II", "en", 2 / 3), ("Louis XV", "Louis XVI", "fr", 0.5), ("A", "AB", "en", 0.0),
    ("Henry VIII", "Henry VIII", "en", 1.0),
    # Turkish I, format characters
    ("Iğdır", "IĞDIR'da", "tr", 1.0), ("İstanbul", "ISTANBUL", "tr", 1.0), ("Paris", "Pa\u00adris", "fr", 1.0),
    ("Paris", "Pa\u200bris", "fr", 1.0),
    # Thai words, not substrings
    ("กา", "กาแฟ", "th", 0.0), ("กรุงเทพ", "คือกรุงเทพครับ", "th", 1.0),
    # unchanged rules
    ("Paris", "Parisian", "en", 0.0), ("Meister", "Meisters", "de", 1.0), ("東京", "東京です", "ja", 1.0),
]


@pytest.mark.parametrize("gold,prediction,language,expected", RECALL,
                         ids=[f"{g}|{p}" for g, p, _, _ in RECALL])
def test_normalized_recall_rules(gold, prediction, language, expected):
    assert word_recall(gold, prediction, language) == pytest.approx(expected)


def test_every_rule_is_documented():
    import babelprobe.families.eclektic.metrics as module

    for phrase in ("Whole tokens", "Arabic-Indic", "Persian", "Devanagari", "Thai", "dotless", "soft hyphen",
                   "Roman numeral", "one-letter", "BTS입니다", "으로서", "이지만", "세종 대왕", "בכנסת", "กาแฟ"):
        assert phrase in module.__doc__, phrase


# ---------------------------------------------------------------- 4. honorifics and pronouns

HONORIFIC_CASES = [
    ("Count", "Count Vronsky", "en"), ("Prince", "Prince Andrei", "en"), ("Uncle", "Uncle Tom", "en"),
    ("Colonel", "Colonel Brandon", "en"), ("St.", "St. John Rivers", "en"), ("князь", "князь Мышкин", "ru"),
    ("граф", "граф Безухов", "ru"), ("пан", "пан Володыёвский", "ru"), ("пан", "пан Тадеуш", "uk"),
    ("Pan", "Pan Tadeusz", "pl"), ("Graf", "Graf Dracula", "de"), ("Comte", "Comte de Monte-Cristo", "fr"),
    ("Tío", "Tío Toby", "es"), ("Paşa", "Paşa Halil", "tr"), ("бай", "бай Ганьо", "bg"), ("Uncle", "Uncle Tom", None),
]


@pytest.mark.parametrize("answer,gold,language", HONORIFIC_CASES)
def test_an_honorific_alone_is_not_the_name(answer, gold, language):
    assert not name_cloze_correct(f"<name>{answer}</name>", [gold], language)
    family_name = gold.split()[-1]
    assert name_cloze_correct(f"<name>{family_name}</name>", [gold], language)
    assert answer not in name_candidates([gold], language)
    row = pd.Series({"task": "name-cloze", "name": answer, "output": f"<name>{answer}</name>", "language": language})
    assert error_category(row) == "honorific"


def test_honorific_lists_are_pinned_per_language():
    # issue 27: the lists moved to text/data/titles/<lang>.tsv (a source per row) and grew to every
    # language OWL, ECLeKTiC and Polyglot-or-Not ship; the issue-16 lists are all still there
    sizes = {lang: len(words) for lang, words in HONORIFICS_BY_LANGUAGE.items()}
    before = {"en": 70, "es": 36, "fr": 41, "de": 38, "it": 35, "pt": 31, "nl": 20, "ru": 58, "uk": 41,
              "bg": 39, "pl": 33, "cs": 29, "tr": 36, "vi": 12, "hu": 18}
    assert all(sizes[lang] >= size for lang, size in before.items()), sizes
    # a word that is an honorific in one language only is a name word elsewhere (Peter Pan)
    assert is_honorific("Pan", "pl") and not is_honorific("Pan", "en")
    assert name_cloze_correct("<name>Pan</name>", ["Peter Pan"], "en")


@pytest.mark.parametrize("pronoun", ["він", "вона", "воно", "вони", "той", "його", "її", "тя", "то", "те", "него", "нея"])
def test_ukrainian_and_bulgarian_pronouns_are_filed_as_pronouns(pronoun):
    row = pd.Series({"task": "name-cloze", "name": pronoun, "output": f"<name>{pronoun}</name>"})
    assert error_category(row) == "pronoun"
