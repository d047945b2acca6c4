"""Conformance of ECLeKTiC's recall, number tokens and judge yes/no (issue 27, classes 4 and 9).

Operations of tests/languages/<code>.tsv run here (the table's language is the file's code):

- ``recall``: ``input`` is a model's prediction, ``argument`` the gold answer, ``expected`` the
  normalized word recall R(prediction, gold) of ECLeKTiC §3.1 (families/eclektic/metrics.py:
  word_recall), e.g. 1, 0.5, 0.667 (to 3 decimals);
- ``number``: ``input`` is a number as written, ``expected`` its canonical form
  (text/numbers.py: canonical_number) or ``none`` when it is no number;
- ``yes_no``: ``input`` is a judge's answer, ``expected`` ``yes``, ``no`` or ``none`` (neither:
  an error for the judge stage, never a NO) as metrics.parse_judge reads it in that language.
"""

from __future__ import annotations

from collections import Counter

import pytest

from babelprobe.families.eclektic.metrics import parse_judge, recall_verdict, word_recall
from babelprobe.text.numbers import canonical_number
from language_cases import Case, case_params, load_cases

OPERATIONS = {"recall", "number", "yes_no"}
# ECLeKTiC's 12 languages and the ones issue 27 names for these classes: 10+ cases per operation
REQUIRED = ("en", "de", "es", "fr", "he", "hi", "id", "it", "ja", "ko", "pt", "zh", "ms", "fil", "ar")


# Rows the layer still reads wrong (lang-review, issue 27): strict, so a fix must take its row out.
_TRADITIONAL = ("hanziconv folds whole texts to simplified, so two distinct traditional characters that share one "
                "simplified form (髮/發 -> 发, 乾/幹 -> 干, 鍾/鐘 -> 钟) become one; a one-way comparison (a character "
                "equals its own simplified form, never a sibling) needs both spellings kept (lang-guard)")
# issue 27's ten recall classes are fixed at their mechanism (lang-mech); guard rows (lang-guard) still wrong:
_RANGE_WITH_COUNTER = ("a gold range written against its counter (1914–1918年) is one whole unit, so its 年 is not "
                       "counted apart as footnote 7 counts each ideograph: a prediction without the range scores 0, "
                       "not the 0.5 of 年 (an under-count, never a wrong YES)")
STILL_WRONG: dict[tuple[str, ...], str] = {  # (language, input) or (language, input, argument)
    ("fi", "Mattila"): "the generic ending rule (agglutinative: up to 4 letters, text/data/languages.tsv) accepts "
                       "Matti + -la; Finnish has no listed strong-grade endings yet to replace it",
    ("ja", "1918年から1914年まで"): _RANGE_WITH_COUNTER,
    ("zh", "1918年至1914年"): _RANGE_WITH_COUNTER,
    ("zh", "1914年或1918年"): _RANGE_WITH_COUNTER,
    ("zh", "髮"): _TRADITIONAL,
    ("zh", "乾"): _TRADITIONAL,
    ("zh", "鍾"): _TRADITIONAL,
    # lang-review4
    ("es", "1 000 000", "1.000.000"): "a number grouped with plain spaces (RAE, Ortografía 2010 §4.2.4.1.2: 1 000 000) is cut into "
                         "three words by segment.words, though canonical_number reads it whole: recall needs the same "
                         "digit-group joining for a plain space where the language groups with spaces",
    ("pt", "10 000", "10.000"): "a number grouped with a plain space (10 000) is cut into two words; see the es row",
}


@pytest.mark.parametrize("case", case_params(OPERATIONS))
def test_conformance(case: Case, request: pytest.FixtureRequest) -> None:
    why = STILL_WRONG.get((case.language, case.input, case.argument)) or STILL_WRONG.get((case.language, case.input))
    if why is not None:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    if case.operation == "recall":
        got = word_recall(case.argument, case.input, case.language)
        assert got == pytest.approx(float(case.expected), abs=0.001), f"{case.where} ({case.source})"
    elif case.operation == "number":
        got_number = canonical_number(case.input, case.language)
        assert (got_number or "none") == case.expected, f"{case.where} ({case.source})"
    else:
        verdict = parse_judge(case.input, case.language)
        got_word = {True: "yes", False: "no", None: "none"}[verdict]
        assert got_word == case.expected, f"{case.where} ({case.source})"


def test_every_required_language_has_ten_cases_per_operation():
    counts = Counter((c.language, c.operation) for c in load_cases(OPERATIONS))
    short = [(lang, op, counts[(lang, op)]) for lang in REQUIRED for op in sorted(OPERATIONS) if counts[(lang, op)] < 10]
    assert not short, short


def test_judge_languages_have_yes_and_no():
    """Every ECLeKTiC language (and Polyglot-or-Not's) parses a yes and a no (issue 27 class 9)."""
    from babelprobe.text.yes_no import yes_no_words

    languages = set(REQUIRED) | set("bg ca cs da de en es fr hr hu it nl pl pt ro ru sl sr sv uk".split())
    for language in sorted(languages):
        answers = {w.answer for w in yes_no_words(language)}
        assert {True, False} <= answers, language


# ---------------------------------------------------------------- the classes, failing on main

CLASS_4 = [  # (prediction, gold, language): every gold word is in the prediction
    ("1990–1995", "1990-1995", "en"), ("−40", "-40", "en"), ("1\u00a0000\u00a0000", "1000000", "fr"),
    ("10\u2009000", "10000", "en"), ("$ 5", "$5", "en"), ("5 €", "5€", "de"), ("U.S.", "US", "en"),
    ("1980's", "1980s", "en"), ("Jakartalah", "Jakarta", "id"), ("bukunya", "buku", "id"), ("ב1948", "1948", "he"),
    ("וב1948", "1948", "he"), ("Italie", "l'Italie", "fr"), ("1.000", "1000", "de"), ("Louis 14", "Louis XIV", "fr"),
    ("١٬٠٠٠", "1000", "ar"), ("1937–1945年", "1937-1945年", "zh"), ("Kuala Lumpurlah", "Kuala Lumpur", "ms"),
]


@pytest.mark.parametrize("prediction,gold,language", CLASS_4)
def test_class_4_recall_tokenization(prediction, gold, language):
    assert word_recall(gold, prediction, language) == 1.0


@pytest.mark.parametrize("answer,language,verdict", [
    ("हाँ", "hi", True), ("नहीं", "hi", False), ("हाँ।", None, True), ("नहीं, उत्तर पाठ में नहीं है", None, False),
    ("不是", "zh", False), ("ไม่ใช่", "th", False), ("Tidak.", "id", False), ("Так", "uk", True), ("hmm", "hi", None),
])
def test_class_9_judge_answers_in_every_script(answer, language, verdict):
    assert parse_judge(answer, language) is verdict


def test_recall_records_evidence_and_flags_what_it_cannot_decide():
    verdict = recall_verdict("Jakarta", "Jakartalah", "id")
    assert verdict.value == 1.0 and verdict.flag is None
    (evidence,) = verdict.evidence
    assert evidence.rule == "affix" and evidence.matched == "jakarta" and "lah" in evidence.form
    assert "Sneddon" in evidence.source
    number = recall_verdict("1000000", "1\u00a0000\u00a0000", "fr").evidence
    assert [e.rule for e in number] == ["number"]
    # a language with no profile: the generic ending rule decides, and the item is flagged
    unknown = recall_verdict("Abcd", "Abcdxy", "qqq")
    assert unknown.value == 1.0 and unknown.flag and "qqq" in unknown.flag
    refused = recall_verdict("Abcd", "Abcdxyz", "qqq")
    assert refused.value == 0.0 and refused.flag and "may be a form" in refused.flag


def test_eclektic_items_carry_evidence_and_flags_counted_per_language():
    """Each scored item records what its gold words matched and any flag; the summary counts
    flagged items per target language and the HTML item view shows both (issue 27, point 3)."""
    import pandas as pd

    from babelprobe.families.eclektic.analysis import summarise_eclektic
    from babelprobe.families.eclektic.config import DEMO_ECLEKTIC
    from babelprobe.families.eclektic.data import load_eclektic
    from babelprobe.families.eclektic.probe import EclekticProbe
    from babelprobe.families.eclektic.report import eclektic_sections, text_flag_lines
    from babelprobe.models.base import GenerateResult
    from babelprobe.text.evidence import evidence_from_json

    rows = [r for r in load_eclektic(DEMO_ECLEKTIC) if r.q_id == "ru-onegin"]
    probe = EclekticProbe()
    records = [probe.score(r, [GenerateResult(text=r.answer + "s")]) for r in rows]
    de = next(rec for rec in records if rec.target_language == "de")
    assert de.recall == 1.0 and de.text_flag is None
    assert {e.rule for e in evidence_from_json(de.evidence)} <= {"fold", "exact", "ending"}
    assert any(e.rule == "ending" for e in evidence_from_json(de.evidence))  # Puschkins: genitive -s
    other = next(rec for rec in records if not rec.is_source and rec.target_language != "de")
    flagged = other.model_copy(update={"target_language": "qqq", "text_flag": "no language profile for 'qqq'"})
    items = pd.DataFrame([r.model_dump() for r in [*records, flagged]])
    summary = summarise_eclektic(items, resamples=10)
    assert summary.settings[0].text_flags == {"qqq": 1}
    assert any("1 qqq" in line for line in text_flag_lines(summary))
    table = eclektic_sections(summary, items)[1].items
    assert "evidence (gold word matched as)" in table.columns and "text flag" in table.columns
    assert any(row[-1].startswith("flagged: no language profile") for row in table.rows)
