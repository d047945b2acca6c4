"""Issue 27, classes 1, 2, 3 and 5 (names and titles): one test per class, each failing on the code
before the issue, plus the evidence OWL items carry. Cases come from the grammars cited in
src/babelprobe/text/data/names/*.tsv and ordinary spelling, in languages and scripts beyond the
issue's examples; the per-language tables are tests/languages/<code>.tsv (test_conformance_names)."""

from __future__ import annotations

import json

import pytest

from babelprobe.data.perturbations import MASK, NameNotMaskable, mask_names, mask_with_evidence
from babelprobe.families.owl.analysis import error_category
from babelprobe.families.owl.data import OwlItem
from babelprobe.families.owl.metrics import name_cloze_correct, name_cloze_verdict
from babelprobe.families.owl.probe import OwlProbe
from babelprobe.models.base import GenerateResult

# ---------------------------------------------------------------- class 1: inflected beyond a short ending

INFLECTED = [  # (language, name, passage with a case form, the form)
    ("pl", "Tomasz", "Dałem książkę Tomaszowi.", "Tomaszowi"),
    ("pl", "Paweł", "Nie widziałem Pawła.", "Pawła"),
    ("cs", "Pavel", "Dal jsem to Pavlovi.", "Pavlovi"),
    ("sk", "Marek", "Bez Marka nejdem.", "Marka"),
    ("uk", "Іван", "Іванові дали книгу.", "Іванові"),
    ("ru", "Павел", "С Павлом говорили.", "Павлом"),
    ("lt", "Petras", "Petro nebuvo namie.", "Petro"),
    ("lv", "Andris", "Andra māja.", "Andra"),
    ("lv", "Jānis", "Jāņa draugs.", "Jāņa"),
    ("el", "Γιάννης", "Είδα τον Γιάννη.", "Γιάννη"),
    ("ta", "ராமன்", "ராமனுக்கு பசி.", "ராமனுக்கு"),
    ("bn", "রাম", "রামের বাড়ি।", "রামের"),
    ("mai", "राम", "रामकेँ बजाउ।", "रामकेँ"),
    ("hr", "Ivan", "Ivanu su dali knjigu.", "Ivanu"),
    ("hu", "Anna", "Annának adták.", "Annának"),
    ("is", "Jón", "Þetta er bók Jóns.", "Jóns"),  # no table: simplemma's lemma dictionary
]


@pytest.mark.parametrize("language,name,passage,form", INFLECTED, ids=[f"{x[0]}-{x[3]}" for x in INFLECTED])
def test_class1_inflected_names_are_masked_and_accepted(language, name, passage, form):
    masked = mask_names(passage, [name], language)
    assert form not in masked and MASK in masked, masked
    assert name_cloze_correct(f"<name>{form}</name>", [name], language)


def test_class1_a_glued_form_the_layer_cannot_place_is_refused_naming_it():
    with pytest.raises(NameNotMaskable, match=r"'Alicetalossa' at character 0"):
        mask_names("Alicetalossa oli kissa.", ["Alice"], "fi")  # Finnish: agglutinative, not a case form
    with pytest.raises(NameNotMaskable, match="no name paradigm"):
        mask_names("Xanaqa kuxani.", ["Xana"], "qu")  # Quechua: no profile or name table in the layer


# ---------------------------------------------------------------- class 2: one name never matches another

OTHER_NAMES = [  # (language, name, passage, the other name that must stay)
    ("en", "Jo", "Jo met John.", "John"),
    ("en", "Ann", "Ann met Anna.", "Anna"),
    ("fi", "Jo", "Jo tapasi Johnin.", "Johnin"),
    ("fi", "Ann", "Ann ja Anna.", "Anna"),
    ("tr", "Ann", "Ann ve Anna geldi.", "Anna"),
    ("tr", "Ali", "Ali ile Aliye.", "Aliye"),
    ("ko", "앨리스", "앨리스와 앨리스터.", "앨리스터"),
    ("de", "Hans", "Hans und Hansi.", "Hansi"),
    ("ru", "Иван", "Иван и Иванов.", "Иванов"),
    ("he", "משה", "משה אמר משהו.", "משהו"),
    ("ta", "சீதா", "சீதா சீதாராமனை பார்த்தாள்.", "சீதாராமனை"),
    ("vi", "Thúy Kiều", "Thúy Kiều và Thúy Vân.", "Thúy Vân"),
]


@pytest.mark.parametrize("language,name,passage,other", OTHER_NAMES, ids=[f"{x[0]}-{x[1]}-{x[3]}" for x in OTHER_NAMES])
def test_class2_a_mask_never_hides_another_name(language, name, passage, other):
    masked = mask_names(passage, [name], language)
    assert other in masked and MASK in masked, masked


# ---------------------------------------------------------------- class 3: spelling variants of one name

VARIANTS = [  # (language, name, passage, the variant)
    ("el", "Γιάννης", "Ο ΓΙΑΝΝΗΣ ήρθε.", "ΓΙΑΝΝΗΣ"),  # capitals without accents
    ("es", "Ángel", "ANGEL llegó.", "ANGEL"),
    ("ru", "Алёна", "Алена пришла.", "Алена"),  # ё written е
    ("ar", "أليس", "أليـــس هنا.", "أليـــس"),  # tatweel
    ("ar", "علي", "جاء عليّ.", "عليّ"),  # harakat (shadda)
    ("he", "משה", "מֹשֶׁה בא.", "מֹשֶׁה"),  # niqqud
    ("vi", "Kiều", "Kie\u0302\u0300u hát.", "Kie\u0302\u0300u"),  # NFD
    ("yo", "Adébáyọ̀", "Ade\u0301ba\u0301yo\u0323\u0300 sùn.", "Ade\u0301ba\u0301yo\u0323\u0300"),  # NFD
    ("ja", "アンナ・カレーニナ", "アンナ＝カレーニナは言った。", "アンナ＝カレーニナ"),  # name separators
    ("en", "Alexei Vronsky", "Vronsky smiled.", "Vronsky"),  # one part alone
    ("ru", "Анна Каренина", "Вронский любил Каренину.", "Каренину"),  # a part alone, declined
]


@pytest.mark.parametrize("language,name,passage,variant", VARIANTS, ids=[f"{x[0]}-{x[3]}" for x in VARIANTS])
def test_class3_spelling_variants_are_one_name(language, name, passage, variant):
    masked = mask_names(passage, [name], language)
    assert variant not in masked and MASK in masked, masked
    assert name_cloze_correct(f"<name>{variant}</name>", [name], language)


# ---------------------------------------------------------------- class 5: a title alone is not a name

TITLES_ALONE = [  # (language, the title, the gold name)
    ("st", "Ntate", "Ntate Moloi"), ("tn", "Rra", "Rra Matekoni"), ("yo", "Ọ̀gbẹ́ni", "Ọ̀gbẹ́ni Adé"),
    ("mg", "Andriamatoa", "Andriamatoa Rabe"), ("hi", "श्रीमती", "श्रीमती सीता"), ("mai", "बाबू", "बाबू राम"),
    ("el", "Κύριος", "Κύριος Παπαδόπουλος"), ("ta", "திரு", "திரு ராமன்"), ("ty", "Tavana", "Tavana Teva"),
    ("ja", "先生", "先生"), ("ko", "선생님", "김 선생님"), ("id", "Pak", "Pak Budi"), ("ar", "الشيخ", "الشيخ زايد"),
]


@pytest.mark.parametrize("language,title,gold", TITLES_ALONE, ids=[x[0] for x in TITLES_ALONE])
def test_class5_a_title_alone_names_no_one(language, title, gold):
    correct = name_cloze_correct(f"<name>{title}</name>", [gold], language)
    assert correct == (title == gold)  # a character called by the title alone (先生 in Kokoro) is named by it
    if title != gold:
        verdict = name_cloze_verdict(f"<name>{title}</name>", [gold], language)
        assert verdict.evidence and verdict.evidence[0].rule == "title"


def test_class5_pronouns_and_abstentions_per_language():
    def category(answer: str, language: str) -> str:
        return error_category(__import__("pandas").Series(
            {"task": "name-cloze", "name": answer, "output": f"<name>{answer}</name>", "language": language}))

    assert category("elle", "fr") == "pronoun" and category("αυτός", "el") == "pronoun"
    assert category("वह", "hi") == "pronoun" and category("yena", "st") == "pronoun"
    assert category("không biết", "vi") == "abstention" and category("bilmiyorum", "tr") == "abstention"
    assert category("Budi", "id") == "wrong name"


# ---------------------------------------------------------------- evidence and flags in OWL items


def _item(passage: str, names: tuple[str, ...], language: str) -> OwlItem:
    return OwlItem(book_id="b", author="A", title_en="T", title="T", language=language, language_group="unseen",
                   passage_id="1", passage=passage, names=names, year=1900)


def test_masks_and_verdicts_record_their_evidence_in_owl_items():
    masked = mask_with_evidence("Dal jsem to Pavlovi.", ["Pavel"], "cs")
    (evidence,) = masked.evidence
    assert evidence.matched == "Pavlovi" and evidence.span == (12, 19) and "cs.tsv" in evidence.rule
    probe = OwlProbe("name-cloze", "masked")
    record = probe.score(_item("Dal jsem to Pavlovi.", ("Pavel",), "cs"), [GenerateResult(text="Pavel</name>")])
    cells = json.loads(record.evidence)
    assert cells[0]["matched"] == "Pavlovi" and cells[0]["span"] == [12, 19]
    assert cells[-1]["rule"] == "owl:exact" and record.correct and record.text_flag is None
    # a language without a name paradigm: masked as written, and flagged
    record = probe.score(_item("Kuxani Xana.", ("Xana",), "qu"), [GenerateResult(text="Xana</name>")])
    assert record.text_flag and "no name paradigm" in record.text_flag
    # a refused mask is an error row, flagged
    row = probe.failed(_item("Alicetalossa.", ("Alice",), "fi"), "scoring failed: NameNotMaskable: cannot mask")
    assert row.error and row.text_flag


def test_direct_probe_verdicts_record_which_gold_matched():
    from babelprobe.families.owl.metrics import direct_probe_correct, direct_probe_verdict

    answer = '"title": "Nineteen Eighty Four", "author": "George Orwell"'
    verdict = direct_probe_verdict(answer, ["Nineteen Eighty-Four", "1984"], ["George Orwell"])
    assert verdict.correct == direct_probe_correct(answer, ["Nineteen Eighty-Four", "1984"], ["George Orwell"])
    title, author = verdict.evidence
    assert title.form == "Nineteen Eighty-Four" and "similarity" in title.rule and author.form == "George Orwell"
    wrong = direct_probe_verdict('"title": "Animal Farm", "author": "George Orwell"', ["1984"], ["George Orwell"])
    assert not wrong.correct and wrong.evidence == ()
