"""OWL App. E Tables 10-12 (owl quantization): baseline values and paired changes equal a hand
computation on a small run pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from babelprobe.families.owl.quantization import format_delta, quantization_tables


def _items(correct: dict, chrf: dict, errors: set = frozenset(), passage_type: str = "no-name") -> pd.DataFrame:
    rows = []
    for (book, group, lang, task, perturbation), value in {**correct, **chrf}.items():
        rows.append({"book_id": book, "passage_id": "1", "language": lang, "language_group": group, "task": task,
                     "perturbation": perturbation, "passage_type": passage_type,
                     "correct": value if task != "prefix" else None, "chrf_pp": value if task == "prefix" else None,
                     "error": "boom" if (book, lang, task, perturbation) in errors else None})
    return pd.DataFrame(rows)


BOOKS = [f"b{i}" for i in range(6)]


def test_tables_equal_a_hand_computation():
    base_dp = {(b, "original", "en", "direct", "none"): i % 2 == 0 for i, b in enumerate(BOOKS)}
    base_dp |= {(b, "unseen", "tr", "direct", "none"): i < 2 for i, b in enumerate(BOOKS)}
    quant_dp = {(b, "original", "en", "direct", "none"): i % 3 == 0 for i, b in enumerate(BOOKS)}
    quant_dp |= {(b, "unseen", "tr", "direct", "none"): i < 2 for i, b in enumerate(BOOKS)}
    base_pp = {(b, "official", "es", "prefix", "none"): 20.0 + i for i, b in enumerate(BOOKS)}
    quant_pp = {(b, "official", "es", "prefix", "none"): 18.0 + i * 1.5 for i, b in enumerate(BOOKS)}
    baseline = _items(base_dp, base_pp)
    quant = _items(quant_dp, quant_pp, errors={("b5", "en", "direct", "none")})  # one item errored: unpaired
    report = quantization_tables(baseline, {"q4": quant}, "f32", n_resamples=2000)
    tables = {t.name: t for t in report.tables}
    assert set(tables) == {"Table 10", "Table 12"}  # no name-cloze items: no Table 11
    dp = {c.group: c for c in tables["Table 10"].rows[0].cells}
    # baseline: all six en items, 3 correct -> 50 %
    assert dp["original"].baseline == pytest.approx(50.0) and dp["original"].n == 6
    # paired over b0..b4 (b5 errored in the quantized run): base 1,0,1,0,1 ; quant 1,0,0,1,0
    hand = np.mean(np.array([1, 0, 0, 1, 0]) - np.array([1, 0, 1, 0, 1])) * 100
    d = dp["original"].deltas["q4"]
    assert d.n == 5 and d.difference == pytest.approx(hand)
    assert d.low <= d.difference <= d.high
    # identical answers: a zero change with a degenerate interval, never marked
    same = dp["unseen"].deltas["q4"]
    assert same.difference == 0 and same.degenerate and not same.excludes_zero
    assert format_delta(same).endswith("]")
    # prefix: chrF++ points, quant - base = -2 + 0.5 i, i = 0..5 -> mean -0.75
    pp = tables["Table 12"].rows[0].cells[0]
    assert pp.group == "official" and pp.baseline == pytest.approx(22.5)
    assert pp.deltas["q4"].difference == pytest.approx(-0.75)
    # a uniform shift of every item is a change whose interval excludes 0
    shifted = _items(base_dp, {k: v - 3.0 for k, v in base_pp.items()})
    moved = quantization_tables(baseline, {"q8": shifted}, n_resamples=500).tables[1].rows[0].cells[0].deltas["q8"]
    assert moved.difference == pytest.approx(-3.0) and moved.degenerate  # every difference equal: no spread
    noisy = _items(base_dp, {k: v - 3.0 - 0.1 * i for i, (k, v) in enumerate(base_pp.items())})
    marked = quantization_tables(baseline, {"q8": noisy}, n_resamples=500).tables[1].rows[0].cells[0].deltas["q8"]
    assert marked.excludes_zero and format_delta(marked).endswith("*")


def test_rows_are_the_papers_settings_never_pooled_across_passage_types():
    """Table 10 prints Original (with names), Masked and No NE as separate rows (App. E): 8 with-name
    passages at 37.5% and 8 no-name passages at 62.5% must not come out as one pooled 45.8-or-50%
    row; each row's change is paired within its own passages."""
    def frame(with_name: list[int], no_name: list[int], masked: list[int]) -> pd.DataFrame:
        rows = []
        for kind, perturbation, values in (("with-name", "none", with_name), ("no-name", "none", no_name),
                                           ("with-name", "masked", masked)):
            for i, v in enumerate(values):
                rows.append({"book_id": f"{kind}-{i}", "passage_id": "1", "language": "de", "language_group": "official",
                             "task": "direct", "perturbation": perturbation, "passage_type": kind,
                             "correct": bool(v), "chrf_pp": None, "error": None})
        return pd.DataFrame(rows)

    base = frame([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0])
    quant = frame([1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0])
    (table,) = quantization_tables(base, {"q4": quant}, n_resamples=500).tables
    rows = {r.setting: r for r in table.rows}
    assert [r.setting for r in table.rows] == ["Original (with names)", "Masked", "No named entities"]
    original, no_ne = rows["Original (with names)"].cells[0], rows["No named entities"].cells[0]
    assert original.baseline == pytest.approx(37.5) and original.n == 8
    assert no_ne.baseline == pytest.approx(62.5) and no_ne.n == 8
    assert original.deltas["q4"].difference == pytest.approx(-12.5) and original.deltas["q4"].n == 8
    assert no_ne.deltas["q4"].difference == 0 and no_ne.deltas["q4"].n == 8
    assert rows["Masked"].passage_type == "with-name" and rows["Masked"].cells[0].baseline == pytest.approx(12.5)


def test_the_command_reads_stored_runs(tmp_path):
    """`owl quantization BASE RUN` on two stored owl runs (items.parquet + manifest.json as a run
    writes them), printing the change and writing the JSON tables."""
    import json

    from typer.testing import CliRunner

    from babelprobe import store
    from babelprobe.cli import app
    from babelprobe.families.owl.config import OwlConfig
    from babelprobe.families.owl.probe import OwlRecord
    from babelprobe.models.base import Fingerprint

    def stored(name: str, spec: str, correct: list[bool]) -> str:
        out = tmp_path / name
        out.mkdir()
        records = [OwlRecord(book_id=f"b{i}", passage_id="1", language="en", language_group="original",
                             passage_type="no-name", task="direct", perturbation="none", shots=1, passage_tokens=30,
                             prompt="p", output="o", title="t", author="a", correct=c, author_correct=c,
                             gold_titles=["T"], gold_author="A", gold_names=[]) for i, c in enumerate(correct)]
        store.write_items(out, records)
        config = OwlConfig(model=spec, out=out)
        manifest = store.new_manifest(
            probe="owl", config=config.model_dump(mode="json"), data_files={}, seed=0, timings={}, items=len(records),
            errors=0, requests=store.RequestCounts(requested=0, unique=0, cached=0, computed=0, failed=0, batches=0),
            model=Fingerprint(spec=spec, backend="test", weights="sha256:0", dtype="float32", device="cpu",
                              versions={}))
        store.write_json(out / store.MANIFEST, manifest)
        return str(out)

    base = stored("f32", "bundled:gemma-3-270m", [True, True, False, True, False, True])
    quant = stored("q4", "llamacpp:bundled:gemma-3-270m", [False, True, False, False, False, True])
    done = CliRunner().invoke(app, ["owl", "quantization", base, quant, "--resamples", "200",
                                    "--out", str(tmp_path / "q.json")])
    assert done.exit_code == 0, done.output
    assert "Table 10" in done.output and "66.7" in done.output and "-33.3" in done.output
    report = json.loads((tmp_path / "q.json").read_text())
    assert report["tables"][0]["rows"][0]["setting"] == "No named entities"  # the stored runs' passages have none
    delta = report["tables"][0]["rows"][0]["cells"][0]["deltas"]["llamacpp:bundled:gemma-3-270m"]
    assert delta["difference"] == pytest.approx(-100 / 3) and delta["n"] == 6
    wrong = CliRunner().invoke(app, ["owl", "quantization", base, str(tmp_path)])
    assert wrong.exit_code == 2
