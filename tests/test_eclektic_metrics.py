"""ECLeKTiC metrics pinned on hand-computed examples (§3, §3.1; the official notebook)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from babelprobe.families.eclektic.analysis import language_matrices, pair_table, summarise_setting, transfer_scores
from babelprobe.families.eclektic.metrics import parse_judge, word_recall, words_of


def test_word_recall_latin_normalized_vs_compat():
    gold, pred = "Northern Ireland", "It is in northern Ireland."
    assert word_recall(gold, pred) == 1.0  # casefold + punctuation stripped
    assert word_recall(gold, pred, "en", "compat") == 0.5  # case-sensitive substring: "Northern" missing
    # substring containment (compat) vs whole words (normalized)
    assert word_recall("Paris", "Parisian cafés", "fr", "compat") == 1.0
    assert word_recall("Paris", "Parisian cafés") == 0.0
    assert word_recall("São Paulo", "Sao Paulo") == 0.5  # diacritics are kept: São != Sao


def test_word_recall_cjk_counts_each_ideograph():
    # 北爱尔兰: four ideographs, three of them in the prediction
    assert words_of("北爱尔兰") == ["北", "爱", "尔", "兰"]
    assert word_recall("北爱尔兰", "在爱尔兰北部") == pytest.approx(1.0)
    assert word_recall("北爱尔兰", "爱尔兰") == pytest.approx(0.75)
    # compat splits ideographs only when the target language is zh or ja
    assert word_recall("北爱尔兰", "爱尔兰", "zh", "compat") == pytest.approx(0.75)
    assert word_recall("北爱尔兰", "爱尔兰", "ko", "compat") == 0.0  # one "word", not a substring
    # mixed scripts: kana run and ideographs, "1961年" -> "1961", "年"
    assert words_of("1961年") == ["1961", "年"]
    assert word_recall("マイン川", "マイン川です") == 1.0
    assert word_recall("1961年", "1961") == 0.5
    assert word_recall("1961年", "1961", "ja", "compat") == 0.5


def test_empty_gold_is_an_error_not_a_division_by_zero():
    with pytest.raises(ValueError, match="empty gold"):
        word_recall("", "anything")
    with pytest.raises(ValueError, match="empty gold"):
        word_recall("  ", "anything", "en", "compat")
    with pytest.raises(ValueError, match="empty gold"):
        word_recall("?!", "anything")


@pytest.mark.parametrize("answer,verdict", [
    ("YES", True), ("yes.", True), ("**Yes**, the answer is derived", True), ("Output: NO - not supported", False),
    ("no", False), ("The answer is: Yes", True), ("Nein", False), ("да", True), ("maybe", None), ("", None),
])
def test_parse_judge(answer, verdict):
    assert parse_judge(answer) is verdict


def items(rows):
    cols = ["q_id", "source_language", "target_language", "is_source", "setting", "script", "recall",
            "recall_compat", "judge_correct", "error"]
    return pd.DataFrame(rows, columns=cols)


def two_questions():
    # q1: source en (R_s = 1.0) with targets de (R_t = 0.5) and ja (R_t = 1.0)
    # q2: source de (R_s = 0.5) with one target en (R_t = 1.0); n_targets differ: 2 and 1
    return items([
        ("q1", "en", "en", True, "closed-book", "Latin", 1.0, 1.0, True, None),
        ("q1", "en", "de", False, "closed-book", "Latin", 0.5, 0.0, False, None),
        ("q1", "en", "ja", False, "closed-book", "Han", 1.0, 1.0, True, None),
        ("q2", "de", "de", True, "closed-book", "Latin", 0.5, 0.5, False, None),
        ("q2", "de", "en", False, "closed-book", "Latin", 1.0, 1.0, True, None),
    ])


def test_overall_and_transfer_by_hand():
    pairs, source = pair_table(two_questions(), "recall")
    scores = transfer_scores(pairs, source)
    # S = [1*0.5, 1*1, 0.5*1]; overall = mean = 2/3
    assert scores.overall.value == pytest.approx(2 / 3)
    # transfer = sum S / sum_q R_s * n_targets(q) = 2 / (1*2 + 0.5*1)
    assert scores.transfer.value == pytest.approx(2 / 2.5)
    assert scores.source_accuracy == pytest.approx(0.75)
    # margins: the notebook's normal approximation, effective n = (sum w)^2 / sum w^2
    assert scores.overall.margin == pytest.approx(1.959964 * math.sqrt((2 / 3) * (1 / 3) / 3), rel=1e-5)
    n_eff = 2.5**2 / (1 + 1 + 0.25)
    assert scores.transfer.margin == pytest.approx(1.959964 * math.sqrt(0.8 * 0.2 / n_eff), rel=1e-5)


def test_binary_judge_transfer_counts_only_known_questions():
    pairs, source = pair_table(two_questions(), "judge_correct")
    scores = transfer_scores(pairs, source)
    # q1 known at source, q2 not: K = {q1}; S = [0, 1, 0]
    assert scores.overall.value == pytest.approx(1 / 3)
    assert scores.transfer.value == pytest.approx(1 / 2)  # 1 of q1's 2 targets


def test_matrices_and_scripts():
    data = two_questions()
    pairs, source = pair_table(data, "recall")
    m = language_matrices(pairs, source, data)
    assert m["overall"]["en"] == {"de": 0.5, "ja": 1.0, "en": 1.0}
    assert m["transfer"]["en"]["en"] == 1.0  # the diagonal is perfect by definition
    assert m["overall"]["de"] == {"en": 0.5, "de": 0.5}
    assert m["transfer"]["de"]["en"] == pytest.approx(1.0)
    summary = summarise_setting(data)
    assert summary.judge is not None and summary.string_compat.overall.value == pytest.approx(0.5)  # S = [0, 1, 0.5]
    # same-script pairs: q1->de, q2->en (Latin/Latin); cross-script: q1->ja (Latin->Han)
    assert summary.same_script["same"].overall.n == 2 and summary.same_script["cross"].overall.n == 1


def test_errored_rows_are_left_out_not_scored_zero():
    data = two_questions()
    data.loc[1, "error"] = "RuntimeError: backend failed"
    pairs, source = pair_table(data, "recall")
    assert len(pairs) == 2 and transfer_scores(pairs, source).overall.value == pytest.approx(0.75)
    data.loc[3, "error"] = "RuntimeError: backend failed"  # q2's source row: its pairs cannot be scored
    pairs, _ = pair_table(data, "recall")
    assert pairs["q_id"].tolist() == ["q1"]
