"""Polyglot-or-Not loading: the ` <br> ` conventions and validation errors (file, row, field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from babelprobe.data.polyglot_or_not import load_cka_facts
from babelprobe.data.validation import DatasetError


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def row(**over) -> dict:
    base = {"dataset_id": "x1", "stem": "Paris is the capital of", "true": "France",
            "false": "Italy <br> Spain", "relation": "P1376", "subject": "Paris", "object": "France"}
    base.update(over)
    return base


def test_shared_stem_and_several_false_objects(tmp_path):
    (fact,) = load_cka_facts(write_jsonl(tmp_path / "en.jsonl", [row()]), ["en"])
    assert fact.language == "en"  # from the file name, asked for with --langs
    assert fact.false == ("Italy", "Spain")
    assert [fact.stem_of(i) for i in range(3)] == ["Paris is the capital of"] * 3


def test_one_stem_per_object(tmp_path):
    (fact,) = load_cka_facts(write_jsonl(tmp_path / "de.jsonl", [row(
        stem="How I Met Your Mother ist eine <br> How I Met Your Mother ist ein", true="Sitcom", false="Thriller")]), ["de"])
    assert fact.stem_of(0) == "How I Met Your Mother ist eine"  # stem 0 with the true object
    assert fact.stem_of(1) == "How I Met Your Mother ist ein"  # stem i with false i


def test_false_as_a_json_list(tmp_path):
    (fact,) = load_cka_facts(write_jsonl(tmp_path / "fr.jsonl", [row(false=["Italie", "Espagne"])]), ["fr"])
    assert fact.false == ("Italie", "Espagne")


def test_stem_count_mismatch_names_file_row_field(tmp_path):
    path = write_jsonl(tmp_path / "de.jsonl", [row(), row(dataset_id="x2", stem="a <br> b", false="c <br> d <br> e")])
    with pytest.raises(DatasetError) as info:
        load_cka_facts(path, ["de"])
    message = str(info.value)
    assert f"{path}, row 2, field 'stem'" in message
    assert "2 stems for 3 false objects" in message


@pytest.mark.parametrize("bad,field", [
    ({"true": ""}, "true"),
    ({"false": None}, "false"),
    ({"false": "Italy <br>  <br> Spain"}, "false"),
    ({"dataset_id": "  "}, "dataset_id"),
])
def test_missing_or_empty_fields(tmp_path, bad, field):
    path = write_jsonl(tmp_path / "en.jsonl", [row(dataset_id="ok"), row(**bad)])
    with pytest.raises(DatasetError, match=rf"row 2, field '{field}'"):
        load_cka_facts(path, ["en"])


def test_duplicate_id_and_broken_json(tmp_path):
    path = write_jsonl(tmp_path / "en.jsonl", [row(), row()])
    with pytest.raises(DatasetError, match=r"row 2, field 'dataset_id': duplicate id 'x1' \(first at row 1\)"):
        load_cka_facts(path, ["en"])
    broken = tmp_path / "es.jsonl"
    broken.write_text(json.dumps(row()) + "\n{not json\n")
    with pytest.raises(DatasetError, match=r"es.jsonl, row 2: not valid JSON"):
        load_cka_facts(broken, ["es"])


def test_language_column_needed_without_a_language_file_name(tmp_path):
    path = write_jsonl(tmp_path / "facts.jsonl", [row()])
    with pytest.raises(DatasetError, match="row 1, field 'language'"):
        load_cka_facts(path)
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [row(language="en"), row(language="ru", dataset_id="y")])
    assert [f.language for f in load_cka_facts(mixed, langs=["ru"])] == ["ru"]


def test_csv_rows(tmp_path):
    path = tmp_path / "it.csv"
    path.write_text("dataset_id,stem,true,false\na,Roma è la capitale dell',Italia,Francia <br> Spagna\nb,X,,Y\n")
    with pytest.raises(DatasetError, match=r"it.csv, row 2, field 'true'"):
        load_cka_facts(path, ["it"])


def test_limit_is_a_seeded_sample_per_language(release_dir):
    a = load_cka_facts(release_dir, langs=["en", "ru"], limit=25, seed=1)
    b = load_cka_facts(release_dir, langs=["en", "ru"], limit=25, seed=1)
    c = load_cka_facts(release_dir, langs=["en", "ru"], limit=25, seed=2)
    assert [f.fact_id for f in a] == [f.fact_id for f in b] != [f.fact_id for f in c]
    assert sum(f.language == "ru" for f in a) == 25


def test_release_files_load_with_their_conventions(release_dir):
    facts = load_cka_facts(release_dir, langs=["uk"])
    assert len(facts) == 50 and {f.language for f in facts} == {"uk"}  # the language from the file name
    multi = [f for f in facts if len(f.stems) > 1]
    assert len(multi) == 23 and all(len(f.stems) == len(f.false) + 1 for f in multi)
    assert sum(len(f.false) > 1 for f in facts) > 0 and not any(" <br> " in o for f in facts for o in f.objects)


def test_missing_language_file(release_dir):
    with pytest.raises(DatasetError, match="no file for language"):
        load_cka_facts(release_dir, langs=["en", "xx"])


@pytest.mark.parametrize("name", ["new", "all", "tab", "en"])
def test_a_file_name_is_a_language_only_when_asked_for(tmp_path, name):
    """new.csv is not Newari, all.csv not 'all', tab.csv not Tabassaran (issue 30): without a language
    column and without --langs naming the file, the loader refuses with a hint."""
    path = write_jsonl(tmp_path / f"{name}.jsonl", [row()])
    with pytest.raises(DatasetError, match=rf"row 1, field 'language': missing: add a 'language' column, or pass "
                                           rf"--langs {name} if the file name '{name}' is the facts' language"):
        load_cka_facts(path)
    facts = load_cka_facts(path, [name])
    assert [f.language for f in facts] == [name]
    from babelprobe.families.cka.family import family

    assert f"(language {name} taken from the file name, as --langs asked)" in family.describe(facts)


def test_language_codes_are_canonical_before_grouping(tmp_path):
    """EN and en are one language: one group, and an id written under both is a duplicate."""
    path = write_jsonl(tmp_path / "facts.jsonl", [row(language="en"), row(language="EN", dataset_id="x2"),
                                                  row(language="pt-br", dataset_id="p1")])
    assert sorted({f.language for f in load_cka_facts(path)}) == ["en", "pt-BR"]
    assert len(load_cka_facts(path, ["EN"])) == 2
    duplicate = write_jsonl(tmp_path / "dup.jsonl", [row(language="en"), row(language="EN")])
    with pytest.raises(DatasetError, match=r"row 2, field 'dataset_id': duplicate id 'x1'"):
        load_cka_facts(duplicate)


def test_a_tab_separated_file_named_csv_gets_a_separator_hint(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text("dataset_id\tstem\ttrue\tfalse\tlanguage\nx1\tParis is in\tFrance\tItaly\ten\n")
    with pytest.raises(DatasetError, match="looks like a tab-separated file"):
        load_cka_facts(path)


def test_run_says_when_a_language_is_taken_from_the_file_name(tmp_path):
    """`run` says when it took a language from the file name, as `validate` does,
    before any model is loaded (here the model spec is bad, so nothing more happens)."""
    from typer.testing import CliRunner

    from babelprobe.cli import app

    path = write_jsonl(tmp_path / "new.jsonl", [row()])
    result = CliRunner().invoke(app, ["run", "cka", "--data", str(path), "--langs", "new", "--model",
                                      "gguf:" + str(tmp_path / "absent.gguf"), "--out", str(tmp_path / "run")])
    assert result.exit_code != 0
    assert "data: language new taken from the file name, as --langs asked" in " ".join(result.output.split())
    assert not (tmp_path / "run").exists()


def test_validate_flags_a_stem_no_bundled_model_can_hold(tmp_path):
    """A stem longer than the bundled models' context even at 16 characters a token is flagged by
    `validate` with file, row and field (it loads; `run` makes it an error row)."""
    from typer.testing import CliRunner

    from babelprobe.cli import app

    path = write_jsonl(tmp_path / "facts.jsonl", [row(language="en"), row(language="en", dataset_id="x2", stem="word " * 120_000 + "is in")])
    result = CliRunner().invoke(app, ["validate", str(path), "--probe", "cka"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "facts.jsonl, row 2, field 'stem': 600,005 characters: longer than 32,768 tokens" in text
    assert "1 flagged facts will be left out of the scores" in text
