"""ECLeKTiC fidelity: the judge's text is the translated context (§3, Fig. 9), a base model answers
one line (stop "\\n", raw text kept, --chat/--no-chat), and 95% CIs resample whole questions."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from babelprobe.families.eclektic.analysis import pair_table, summarise_eclektic, transfer_scores
from babelprobe.cli import app
from babelprobe.families.eclektic.config import DEMO_ECLEKTIC
from babelprobe.families.eclektic.config import EclekticConfig
from babelprobe.families.eclektic.data import load_eclektic
from babelprobe.data.validation import DatasetError
from babelprobe.models.base import GenerateResult
from babelprobe.families.eclektic.probe import EclekticProbe, judge_request
from babelprobe.families.eclektic.report import print_eclektic_summary

SMOLLM2 = "bundled:smollm2-135m-instruct"
cli = CliRunner()


def demo_row(q_id: str, target: str):
    return next(r for r in load_eclektic(DEMO_ECLEKTIC) if r.q_id == q_id and r.target_language == target)


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


# --- 1. the judge reads the question and the translated context, in the target language ---

def test_judge_prompt_has_the_target_language_context_not_the_source_one():
    row = demo_row("ru-onegin", "de")
    assert row.target_context.startswith("„Eugen Onegin“ ist ein Versroman")
    prompt = judge_request(row, "Puschkin", chat=False).prompt
    assert "Input (in German):" in prompt
    assert f"Text:\n{row.target_context}\n\nQuestion:\n{row.question}\n" in prompt
    assert row.source_context not in prompt  # the Russian paragraph is not what the judge reads
    # on the source row the translated context is the source context itself
    source = demo_row("ru-onegin", "ru")
    assert source.target_context == source.source_context
    # cross-lingual open-book keeps the SOURCE context (Fig. 10: SOURCE_LANG_CONTEXT, §4.4)
    assert EclekticProbe("open-book", chat=True).requests(row)[0].messages[0].content.startswith(
        f"Context: {row.source_context}")


def test_missing_target_context_while_judging_is_a_dataset_error(tmp_path):
    path = write(tmp_path / "q.jsonl", [
        {"q_id": "a", "original_language": "de", "target_language": "de", "question": "Wo?", "answer": "Main",
         "context": "Der Main fließt durch Würzburg."},
        {"q_id": "a", "original_language": "de", "target_language": "en", "question": "Where?", "answer": "Main",
         "context": ""},
    ])
    assert len(load_eclektic(path)) == 2  # without a judge the translated context is not needed
    with pytest.raises(DatasetError) as info:
        load_eclektic(path, need_target_context=True)
    assert f"{path}, row 2, field 'context': no 'en' context for question 'a'" in str(info.value)
    # the run refuses before loading any model or creating the run directory
    from babelprobe.execute_run import run

    config = EclekticConfig(data=path, judges=[SMOLLM2], out=tmp_path / "run", cache=None)
    with pytest.raises(DatasetError, match="row 2, field 'context'"):
        run(config)
    assert not (tmp_path / "run").exists()


# --- 2. a base model answers one line; the raw text is kept; --chat/--no-chat override ---

def test_base_model_requests_stop_at_the_first_line_break_chat_requests_do_not():
    row = demo_row("de-wuerzburg", "en")
    base = EclekticProbe("closed-book", chat=False).requests(row)[0]
    assert base.stop == ("\n",) and base.prompt == row.question + "\n\n"  # the answer starts on its own line
    chat = EclekticProbe("closed-book", chat=True).requests(row)[0]
    assert chat.stop == () and chat.messages[0].content == row.question
    assert EclekticConfig(data=DEMO_ECLEKTIC, out=Path("x")).chat is None  # automatic by default
    assert EclekticConfig(data=DEMO_ECLEKTIC, out=Path("x"), chat=False).chat is False


def test_raw_and_stripped_prediction_are_both_stored():
    row = demo_row("ru-onegin", "de")
    record = EclekticProbe("closed-book").score(row, [GenerateResult(text="\u3000 Alexander Puschkin ")])
    assert record.raw_prediction == "\u3000 Alexander Puschkin " and record.prediction == "Alexander Puschkin"
    assert record.prompt == row.question + "\n\n"  # the stored prompt is the text the model was sent


# --- 3. 95% intervals from a bootstrap over questions ---

def pair_items(targets: dict[str, list[float]], source_score: dict[str, float]) -> pd.DataFrame:
    """One source row per question (score source_score[q]) and one row per target score."""
    rows = []
    for q, scores in targets.items():
        rows.append(dict(q_id=q, source_language="en", target_language="en", is_source=True, recall=source_score[q]))
        rows += [dict(q_id=q, source_language="en", target_language=f"t{i}", is_source=False, recall=s)
                 for i, s in enumerate(scores)]
    frame = pd.DataFrame(rows)
    frame["error"], frame["setting"], frame["script"] = None, "closed-book", "Latin"
    frame["recall_compat"] = frame["recall"]
    return frame


def test_cluster_bootstrap_is_wide_when_a_question_s_rows_move_together():
    # 4 questions x 11 targets: two known everywhere, two nowhere. As 44 independent pairs the
    # notebook margin is +-14.8 points; as 4 questions, resamples range over 0..1.
    items = pair_items({q: [v] * 11 for q, v in (("a", 1.0), ("b", 1.0), ("c", 0.0), ("d", 0.0))},
                       {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0})
    scores = transfer_scores(*pair_table(items, "recall"))
    overall = scores.overall
    assert overall.value == 0.5 and overall.margin == pytest.approx(1.959964 * math.sqrt(0.25 / 44), rel=1e-5)
    # P(all four draws are c or d) = 1/16 > 2.5%, so the interval is the whole range
    assert (overall.ci_low, overall.ci_high, overall.ci_degenerate) == (0.0, 1.0, False)
    assert (overall.ci_high - overall.ci_low) / 2 > 3 * overall.margin
    again = transfer_scores(*pair_table(items, "recall"))
    assert again.overall == overall  # seeded


def test_cluster_bootstrap_transfer_is_a_ratio_over_resampled_questions():
    # a: known at source, all targets right; b: unknown at source (weight 0); c: known, targets wrong
    items = pair_items({"a": [1.0] * 3, "b": [1.0] * 3, "c": [0.0] * 3}, {"a": 1.0, "b": 0.0, "c": 1.0})
    transfer = transfer_scores(*pair_table(items, "recall")).transfer
    assert transfer.value == 0.5  # 3 / (3 + 0 + 3)
    # resamples of b alone have no denominator and are left out, not NaN
    assert (transfer.ci_low, transfer.ci_high, transfer.ci_degenerate) == (0.0, 1.0, False)


def test_all_equal_results_and_a_single_question_are_degenerate():
    same = pair_items({q: [1.0] * 11 for q in "abcd"}, dict.fromkeys("abcd", 1.0))
    overall = transfer_scores(*pair_table(same, "recall")).overall
    assert (overall.ci_low, overall.ci_high, overall.ci_degenerate) == (1.0, 1.0, True)
    one = pair_items({"a": [1.0, 0.0] * 5}, {"a": 1.0})
    single = transfer_scores(*pair_table(one, "recall")).overall
    assert single.ci_degenerate and single.ci_low == single.ci_high == 0.5
    assert single.margin > 0.2  # the notebook margin of 10 "independent" pairs looks informative


def test_summary_and_terminal_table_show_the_bootstrap_intervals():
    items = pair_items({q: [v] * 11 for q, v in (("a", 1.0), ("b", 1.0), ("c", 0.0), ("d", 0.0))},
                       dict.fromkeys("abcd", 1.0))
    summary = summarise_eclektic(items)
    fields = summary.model_dump()["settings"][0]["string"]["overall"]
    assert set(fields) >= {"value", "margin", "n", "ci_low", "ci_high", "ci_degenerate"}
    console = Console(record=True, width=200)
    print_eclektic_summary(summary, None, console)
    text = console.export_text()
    # one row per score: value, 95% CI (bootstrap over questions), the notebook's ± margin, n
    assert re.search(r"string overall\s*│\s*50\.0 │\s*0\.0-100\.0 │\s*14\.8 │\s*44 │", text), text
    assert "bootstrap over questions" in " ".join(text.split())  # the title wraps to the table's width


# --- end to end on the bundled models ---

@pytest.mark.slow
def test_two_questions_end_to_end_store_raw_and_cut_answers(tmp_path, gemma, smollm2):
    from babelprobe.execute_run import run

    config = EclekticConfig(data=DEMO_ECLEKTIC, judges=[SMOLLM2], limit=2, max_tokens=24, out=tmp_path / "run",
                            cache=tmp_path / "c.sqlite", figures=False)
    run(config, backends={config.model: gemma, SMOLLM2: smollm2})
    items = pd.read_parquet(tmp_path / "run" / "items.parquet")
    # the 135M judge's answers that say neither yes nor no are no vote, never a NO: the verdict is
    # undecided (judge_error), the row itself is no error
    undecided = items["judge_error"].notna()
    assert len(items) == 10 and items["error"].isna().all()
    assert items.loc[undecided, "judge_error"].str.contains("neither yes nor no").all()
    assert items.loc[undecided, "judge_correct"].isna().all() and items.loc[~undecided, "judge_correct"].notna().all()
    assert {"raw_prediction", "prediction"} <= set(items.columns)
    # Gemma has no chat template: one line per answer, cut by the backend at the stop string
    assert items["prompt"].str.endswith("\n\n").all()
    assert not items["raw_prediction"].str.contains("\n").any()
    assert (items["prediction"] == items["raw_prediction"].str.strip()).all()
    assert items.loc[~undecided, "judge_correct"].notna().all()
    overall = json.loads((tmp_path / "run" / "summary.json").read_text())["settings"][0]["judge"]["overall"]
    assert {"margin", "ci_low", "ci_high", "ci_degenerate"} <= set(overall)


@pytest.mark.slow
def test_chat_flag_overrides_the_automatic_choice(tmp_path, gemma):
    from babelprobe.execute_run import run

    # --no-chat on an instruct model: plain prompt, first line only
    out = tmp_path / "nochat"
    result = cli.invoke(app, ["run", "eclektic", "--model", SMOLLM2, "--no-chat", "--limit", "1", "--max-tokens", "4",
                              "--langs", "de,en", "--no-figures", "--no-cache", "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 0, result.output
    items = pd.read_parquet(out / "items.parquet")
    assert items["prompt"].str.endswith("\n\n").all()
    assert json.loads((out / "manifest.json").read_text())["config"]["chat"] is False
    # --chat on a model without a chat template is refused, not recorded as errors item by item
    config = EclekticConfig(data=DEMO_ECLEKTIC, chat=True, limit=1, out=tmp_path / "chat", cache=None)
    with pytest.raises(ValueError, match="no chat template"):
        run(config, backends={config.model: gemma})
