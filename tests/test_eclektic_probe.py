"""ECLeKTiC data validation, prompts (Fig. 10), judge prompt (Fig. 9), and runs on the bundled models."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.eclektic.config import DEMO_ECLEKTIC
from babelprobe.families.eclektic.config import EclekticConfig
from babelprobe.families.eclektic.data import ColumnMap, load_eclektic
from babelprobe.data.validation import DatasetError
from babelprobe.models.base import ChatMessage, GenerateResult
from babelprobe.families.eclektic.probe import EclekticProbe, judge_request, prompt_text, with_judgements

cli = CliRunner()


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def test_demo_set_loads_with_cjk_and_cyrillic():
    rows = load_eclektic(DEMO_ECLEKTIC, need_context=True)
    assert len(rows) == 30 and len({r.q_id for r in rows}) == 6
    assert {r.target_language for r in rows} >= {"ja", "zh", "ru"}
    assert all(r.source_context for r in rows)  # every row carries its question's source context


def test_validation_missing_source_row_and_empty_answer(tmp_path):
    path = write(tmp_path / "q.jsonl", [
        {"q_id": "a", "original_language": "de", "target_language": "en", "question": "Q?", "answer": "A"},
        {"q_id": "b", "original_language": "en", "target_language": "en", "question": "Q?", "answer": " "},
    ])
    with pytest.raises(DatasetError) as info:
        load_eclektic(path)
    text = str(info.value)
    assert f"{path}, row 1, field 'q_id': question 'a' has no source-language row" in text
    assert f"{path}, row 2, field 'answer': missing or empty" in text


def test_column_mapping_for_other_layouts(tmp_path):
    path = write(tmp_path / "q.jsonl", [
        {"id": "a", "original_lang": "de", "lang": "de", "question": "Wo?", "answer": "Hier", "content": "Text"},
        {"id": "a", "original_lang": "de", "lang": "en", "question": "Where?", "answer": "Here", "content": ""},
    ])
    with pytest.raises(DatasetError, match="no column"):
        load_eclektic(path)
    rows = load_eclektic(path, ColumnMap.parse("q_id=id,source_language=original_lang,target_language=lang,context=content"),
                         need_context=True)
    assert [r.source_context for r in rows] == ["Text", "Text"]
    with pytest.raises(ValueError, match="FIELD=COLUMN"):
        ColumnMap.parse("nonsense=x")


def test_prompts_follow_figure_10():
    row = next(r for r in load_eclektic(DEMO_ECLEKTIC) if r.q_id == "ja-kinkakuji" and r.target_language == "en")
    text = lambda setting: prompt_text(row, setting)  # noqa: E731
    assert text("closed-book") == row.question  # the question alone, no instruction
    assert text("general-hint") == f"Answer the following question based on your knowledge in another language.\n\n{row.question}"
    assert text("source-language-name").startswith("Answer the following question based on your knowledge in Japanese.")
    assert "in Japanese about 鹿苑寺." in text("source-language-title")
    assert text("open-book") == f"Context: {row.source_context}\n\n{row.question}"
    chat = EclekticProbe("closed-book", chat=True).requests(row)[0]
    assert chat.messages == (ChatMessage(role="user", content=row.question),) and chat.prompt is None


def test_judge_prompt_and_majority():
    row = next(r for r in load_eclektic(DEMO_ECLEKTIC) if r.q_id == "ru-onegin" and r.target_language == "de")
    request = judge_request(row, "Alexander Puschkin", chat=False)
    assert "Input (in German):" in request.prompt and row.target_context in request.prompt
    assert request.prompt.endswith("Answer:\nAlexander Puschkin\n\nOutput:")
    record = EclekticProbe().score(row, [GenerateResult(text=" Alexander Puschkin ")])
    assert record.prediction == "Alexander Puschkin" and record.recall == 1.0
    assert with_judgements(record, ["YES", "no", "Yes."]).judge_correct is True
    # an unread answer is no vote: the majority stands where the others settle it, else the verdict
    # is undecided and says why (the judge's failure; the row's own answer is no error)
    undecided = with_judgements(record, ["YES", "no", "hmm"])
    assert undecided.judge_votes == [True, False, None] and undecided.judge_correct is None
    assert "neither yes nor no" in undecided.judge_error and "'hmm'" in undecided.judge_error
    assert undecided.error is None
    assert with_judgements(record, ["no", "nein", "hmm"]).judge_correct is False
    assert with_judgements(record, ["YES", "Ja.", "hmm"]).judge_correct is True and \
        with_judgements(record, ["YES", "Ja.", "hmm"]).judge_error is None
    assert with_judgements(record, ["YES", "no"]).judge_correct is False  # a tie is no majority


def test_rescore_official_format(tmp_path):
    path = write(tmp_path / "preds.jsonl", [
        {"q_id": "q1", "original_language": "en", "target_language": "en", "answer": "Northern Ireland", "prediction": "Northern Ireland"},
        {"q_id": "q1", "original_language": "en", "target_language": "zh", "answer": "北爱尔兰", "prediction": "爱尔兰"},
        {"q_id": "q1", "original_language": "en", "target_language": "de", "answer": "Nordirland", "prediction": "nordirland"},
    ])
    result = cli.invoke(app, ["rescore", "eclektic", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["settings"][0]
    assert summary["string"]["overall"]["value"] == pytest.approx((0.75 + 1.0) / 2)
    assert summary["string_compat"]["overall"]["value"] == pytest.approx((0.75 + 0.0) / 2)
    assert summary["string"]["transfer"]["value"] == pytest.approx(1.75 / 2)


@pytest.mark.slow
def test_run_with_judge_on_bundled_models(tmp_path, gemma, smollm2):
    from babelprobe.execute_run import run

    # the judge's known-wrong controls have their own test on the bundled judge (test_judge_check.py)
    config = EclekticConfig(data=DEMO_ECLEKTIC, settings=["closed-book", "open-book"], judges=[
        "bundled:smollm2-135m-instruct"], limit=3, max_tokens=12, out=tmp_path / "run", cache=tmp_path / "c.sqlite",
                            judge_controls=False)
    outcome = run(config, backends={"bundled:gemma-3-270m": gemma, "bundled:smollm2-135m-instruct": smollm2})
    items = pd.read_parquet(tmp_path / "run" / "items.parquet")
    assert len(items) == 2 * 15 and set(items["setting"]) == {"closed-book", "open-book"}
    # undecided only where the 135M judge answered neither yes nor no: no vote, never a NO
    assert items["error"].isna().all()
    undecided = items["judge_error"].notna()
    assert items.loc[undecided, "judge_error"].str.contains("neither yes nor no").all()
    assert items["prediction"].notna().all()
    assert all(len(a) == 1 for a in items["judge_answers"])  # one raw answer per judge, stored
    assert items.loc[~undecided, "judge_correct"].notna().all()
    assert [s.setting for s in outcome.summary.settings] == ["closed-book", "open-book"]
    assert outcome.manifest.judges[0].spec == "bundled:smollm2-135m-instruct"
    assert (tmp_path / "run" / "eclektic_scores.png").stat().st_size > 1000
    assert (tmp_path / "run" / "eclektic_open-book_transfer.png").exists()
    report = cli.invoke(app, ["report", str(tmp_path / "run")])
    assert report.exit_code == 0 and "judges: bundled:smollm2" in report.output and "cross-script" in report.output
    # the size curve reads stored runs: the same run twice is a degenerate but valid curve
    curve = cli.invoke(app, ["size-curve", str(tmp_path / "run"), "--out", str(tmp_path / "curve.png")])
    assert curve.exit_code == 0, curve.output
    assert (tmp_path / "curve.png").exists()


def test_cli_validate_and_bad_columns(tmp_path):
    ok = cli.invoke(app, ["validate", str(DEMO_ECLEKTIC), "--probe", "eclektic"])
    assert ok.exit_code == 0 and "6 questions, 30 rows" in ok.output
    bad = cli.invoke(app, ["run", "eclektic", "--columns", "question", "--out", str(tmp_path / "r"), "--no-cache"])
    assert bad.exit_code == 2 and "FIELD=COLUMN" in bad.output
    unknown = cli.invoke(app, ["run", "eclektic", "--settings", "closed-book,oracle", "--out", str(tmp_path / "r"),
                               "--no-cache"])
    assert unknown.exit_code == 2 and "--settings" in unknown.output and not (tmp_path / "r").exists()


def test_an_undecided_judge_verdict_leaves_the_judge_metric_only():
    """A row whose judges said neither yes nor no keeps its string verdict; the judge metric
    leaves it out (never a NO) and the summary counts it."""
    import numpy as np

    from babelprobe.families.eclektic.analysis import summarise_setting

    rows = []
    for q, (judged, recall) in enumerate([(True, 1.0), (None, 1.0), (True, 1.0), (False, 0.0)]):
        for target, is_source in (("en", True), ("de", False)):
            rows.append({"q_id": f"q{q}", "source_language": "en", "target_language": target, "is_source": is_source,
                         "setting": "closed-book", "script": "Latin", "recall": recall, "recall_compat": recall,
                         "judge_correct": judged if not is_source else True, "error": None, "text_flag": None,
                         "judge_error": "judge answer neither yes nor no" if judged is None and not is_source
                         else None})
    items = pd.DataFrame(rows)
    summary = summarise_setting(items, resamples=50)
    assert summary.judge_undecided == 1
    assert summary.string.overall.n == 4  # the undecided row keeps its string verdict
    assert summary.judge.overall.n == 3 and np.isclose(summary.judge.overall.value, 2 / 3)
