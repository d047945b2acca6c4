"""OWL data, prompts (Figs. 12-14), analysis, rescoring of release files, and a run on the bundled model."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from babelprobe.families.owl.analysis import compare_owl, error_category, length_bucket, summarise_owl
from babelprobe.cli import app
from babelprobe.families.owl.config import DEMO_OWL
from babelprobe.families.owl.config import OwlConfig
from babelprobe.families.owl.data import convert_owl_release, load_owl
from babelprobe.data.validation import DatasetError
from babelprobe.models.base import GenerateResult
from babelprobe.families.owl.probe import OwlProbe

cli = CliRunner()


def demo_item(book: str, lang: str):
    return next(i for i in load_owl(DEMO_OWL) if i.book_id == book and i.language == lang)


def test_demo_passages_load_and_align():
    items = load_owl(DEMO_OWL)
    assert len(items) == 12 and {i.language_group for i in items} == {"original", "official", "unseen"}
    assert {i.passage_type for i in items} == {"with-name", "no-name"}
    assert demo_item("anna-karenina", "ru").names == ("Облонских",)


def test_validation_names_file_row_field(tmp_path):
    path = tmp_path / "owl.jsonl"
    good = json.loads(DEMO_OWL.read_text(encoding="utf-8").splitlines()[0])
    rows = [good, {**good, "passage_id": "2", "names": ["Sancho"]}, {**good, "passage_id": "3", "language_group": "x"}]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    with pytest.raises(DatasetError) as info:
        load_owl(path)
    text = str(info.value)
    assert f"{path}, row 2, field 'names': not in the passage: Sancho" in text
    assert f"{path}, row 3, field 'language_group'" in text


def test_convert_release_layout(tmp_path):
    path = tmp_path / "book.csv"
    pd.DataFrame({
        "en": ["Call me Ishmael. Some years ago.", "It was a dark night."],
        "es": ["Llamadme Ishmael. Hace unos años.", "Era una noche oscura."],
        "es_shuffled": ["años. Ishmael. Llamadme Hace unos", "oscura. noche Era una"],
        "Single_ent": ["['Ishmael']", "[]"],
    }).to_csv(path, index=False)
    masked = tmp_path / "masked.csv"
    pd.DataFrame({"en": ["Call me [MASK]. Some years ago."], "Single_ent": ["['Ishmael']"]}).to_csv(masked, index=False)
    (restored,) = convert_owl_release(masked, "moby", "Moby-Dick", "Herman Melville", "en", [])
    assert restored.passage == "Call me Ishmael. Some years ago." and restored.names == ("Ishmael",)
    items = convert_owl_release(path, "moby", "Moby-Dick", "Herman Melville", "en", ["es"], 1851)
    assert [(i.language, i.language_group, i.names) for i in items] == [
        ("en", "original", ("Ishmael",)), ("es", "official", ("Ishmael",)), ("en", "original", ()), ("es", "official", ())]
    result = cli.invoke(app, ["convert", "owl-release", str(path), "--out", str(tmp_path / "o.jsonl"), "--book-id", "moby",
                              "--title", "Moby-Dick", "--author", "Herman Melville", "--original", "en"])
    assert result.exit_code == 0 and len(load_owl(tmp_path / "o.jsonl")) == 4


def test_prompts_follow_figures_12_to_14():
    item = demo_item("les-miserables", "fr")
    direct = OwlProbe("direct", "none").prompt(item)
    assert direct.startswith("You are provided with a passage in French. Your task is to carefully read the passage")
    assert direct.endswith('<output>"title": "Book name", "author": "Author name"</output>')
    assert "Moby-Dick" in direct and "Moby-Dick" not in OwlProbe("direct", "none", shots=0).prompt(item)
    cloze = OwlProbe("name-cloze", "masked").prompt(item)
    assert "<passage>En 1815, M. Charles-François-Bienvenu [MASK] était" in cloze and "Myriel" not in cloze.split("Here is")[1]
    prefix = OwlProbe("prefix").prompt(item)
    words = item.passage.split()
    first = " ".join(words[: len(words) // 2])
    assert f"<passage>{first}</passage>" in prefix and f"more than {len(words) - len(words) // 2} words long" in prefix
    plain = OwlProbe("name-cloze", "masked").requests(item)[0]
    assert plain.prompt.endswith("\n\n<name>") and plain.stop == ("</name>", "\n")  # one-line answers: base models stop at a break
    assert OwlProbe("direct", "none").requests(item)[0].stop == ("</output>", "\n")
    assert OwlProbe("prefix").requests(item)[0].stop == ("</output>",)  # free text continues past line breaks
    chat = OwlProbe("direct", "none", chat=True).requests(item)[0]
    assert chat.messages[0].content == direct and chat.prompt is None and chat.stop == ("</output>",)
    with pytest.raises(ValueError, match="does not apply"):
        OwlProbe("name-cloze", "none")


def test_scoring_each_task():
    item = demo_item("les-miserables", "en")
    direct = OwlProbe("direct", "none").score(item, [GenerateResult(text='"title": "Les Miserables", "author": "Victor Hugo"')])
    assert direct.correct and direct.author_correct and direct.passage_tokens > 10
    wrong = OwlProbe("direct", "none").score(item, [GenerateResult(text='"title": "Notre-Dame", "author": "Victor Hugo"')])
    assert not wrong.correct and wrong.author_correct
    cloze = OwlProbe("name-cloze", "masked").score(item, [GenerateResult(text="Myriel")])
    assert cloze.correct and cloze.name == "Myriel"
    chat = OwlProbe("name-cloze", "masked", chat=True)  # chat answers may come without any tag
    assert chat.score(item, [GenerateResult(text="Myriel")]).name == "Myriel"
    assert chat.score(item, [GenerateResult(text="The name is <name>Myriel")]).name == "Myriel"
    words = item.passage.split()
    first, second = " ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2:])
    prefix = OwlProbe("prefix").score(item, [GenerateResult(text=f"{first.split()[-1]} {second}")])
    assert prefix.continuation == second and prefix.chrf_pp == pytest.approx(100.0)


def frame(rows):
    base = {"book_id": "b", "passage_id": "1", "language_group": "original", "passage_type": "with-name",
            "perturbation": "masked", "passage_tokens": 30, "title": None, "author": None, "author_correct": None,
            "output": None, "error": None, "chrf_pp": None, "chrf": None, "bleu": None, "rouge_l": None}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_error_taxonomy_and_summary():
    rows = [{"task": "name-cloze", "language": lang, "name": name, "correct": ok}
            for lang, name, ok in [("en", "Myriel", True), ("en", "", False), ("en", "he", False), ("en", "Mr.", False),
                                   ("es", "[MASK]", False), ("es", "Jean, Marius", False), ("es", "Valjean", False)]]
    summary = summarise_owl(frame(rows), n_resamples=500).tasks[0]
    assert summary.errors_taxonomy == {"abstention": 1, "pronoun": 1, "honorific": 1, "[MASK] echoed": 1,
                                       "multiple guesses": 1, "wrong name": 1}
    assert [(c.group, round(c.value, 3)) for c in summary.by_language] == [("en", 0.25), ("es", 0.0)]
    assert summary.frequent_wrong["es"][0][1] == 1
    direct = frame([{"task": "direct", "perturbation": "none", "language": "en", "title": "Animal Farm",
                     "author": "George Orwell", "author_correct": True, "correct": False}]).iloc[0]
    assert error_category(direct) == "correct author, wrong title"
    assert [length_bucket(n) for n in (0, 49, 50, 100, 900)] == ["0-50", "0-50", "50-100", "100+", "100+"]


def test_compare_gives_percentage_point_deltas():
    a = summarise_owl(frame([{"task": "name-cloze", "language": "en", "name": "x", "correct": c} for c in (True, False)]), 500)
    b = summarise_owl(frame([{"task": "name-cloze", "language": "en", "name": "x", "correct": c} for c in (True, True)]), 500)
    deltas = {d.group: d.delta_pp for d in compare_owl(a, b)}
    assert deltas == {"all": pytest.approx(50.0), "en": pytest.approx(50.0)}


def test_rescore_release_files(tmp_path):
    direct = tmp_path / "dp.csv"
    pd.DataFrame({"en": ["p1", "p2"], "en_results": ['"title": "Moby-Dick","author": "Herman Melville"', "unknown"],
                  "en_book_title": ["Moby-Dick", "Moby-Dick"], "author_name": ["Herman Melville"] * 2}).to_csv(direct, index=False)
    out = cli.invoke(app, ["rescore", "owl", str(direct), "--task", "direct", "--out", str(tmp_path / "r")])
    assert out.exit_code == 0 and "50.0" in out.output
    cloze = tmp_path / "nc.csv"
    pd.DataFrame({"Single_ent": ["['Ishmael']"], "en_results": ["<output>Ishmael</output>"],
                  "es_shuffled_results": ["Ahab"]}).to_csv(cloze, index=False)
    out = cli.invoke(app, ["rescore", "owl", str(cloze), "--task", "name-cloze"])
    assert out.exit_code == 0 and "100.0" in out.output and "0.0" in out.output
    prefix = tmp_path / "pp.csv"
    pd.DataFrame({"en_first_half": ["Call me"], "en_second_half": ["Ishmael. Some years ago"],
                  "en_results_raw": ["<continuation>x</continuation> Ishmael. Some years ago"]}).to_csv(prefix, index=False)
    out = cli.invoke(app, ["rescore", "owl", str(prefix), "--task", "prefix"])
    assert out.exit_code == 0, out.output
    missing = cli.invoke(app, ["rescore", "owl", str(direct), "--task", "prefix"])
    assert missing.exit_code == 2 and "second_half" in missing.output


@pytest.mark.slow
def test_run_report_and_compare_on_bundled_model(tmp_path, gemma):
    from babelprobe.execute_run import run

    config = OwlConfig(data=DEMO_OWL, limit=2, seed=1, out=tmp_path / "run", cache=tmp_path / "c.sqlite",
                       max_tokens=12, prefix_max_tokens=16, bootstrap_resamples=500)
    outcome = run(config, backends={"bundled:gemma-3-270m": gemma})
    items = pd.read_parquet(tmp_path / "run" / "items.parquet")
    assert outcome.manifest.errors == 0 and items["output"].notna().all()
    assert outcome.manifest.length_tokenizer == "o200k_base (bpe-openai)"
    assert set(items["task"]) == {"direct", "name-cloze", "prefix"}
    assert items.loc[items["task"] == "prefix", "chrf_pp"].notna().all()
    assert (tmp_path / "run" / "owl_by_group.png").exists() and (tmp_path / "run" / "owl_direct_none_books.png").exists()
    same = cli.invoke(app, ["compare", str(tmp_path / "run"), str(tmp_path / "run")])
    assert same.exit_code == 0 and "+0.0" in same.output
