"""Issue 19 §3: runs written per language (``--parts language``) give the whole run's numbers, a
run stopped mid-way resumes from the parts it wrote (nothing recomputed), and per-language
memorization runs compose for ``graph`` (``graph merge``). A tiny Llama built here stands in for a
real checkpoint (the bundled Gemma is too slow for eight runs)."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from transformers import LlamaConfig, LlamaForCausalLM
from typer.testing import CliRunner

from babelprobe import store
from babelprobe.cli import app
from babelprobe.families.memorization.config import MemorizationConfig
from babelprobe.families.similarity.config import SimilarityConfig
from babelprobe.families.similarity.signals import read_memorization
from babelprobe.models import load_backend
from babelprobe.execute_run import run
from babelprobe.store import read_manifest
from edit_distance import levenshtein
from tiny_models import DECODER, WORDS, save_tiny, tiny_model

LANGS = ["de", "en", "zh"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(spec, backend, samples file, parallel file): a tiny Llama and texts in its vocabulary."""
    folder = tmp_path_factory.mktemp("scale")
    target = save_tiny(tiny_model(LlamaForCausalLM, LlamaConfig(**DECODER)), folder / "model")
    spec = f"hf:{target}"
    rng = random.Random(0)
    samples, parallel = folder / "samples.jsonl", folder / "parallel.jsonl"
    with samples.open("w") as handle:
        for lang in LANGS:
            for i in range(2):
                handle.write(json.dumps({"language": lang, "text": " ".join(rng.choice(WORDS) for _ in range(40))}) + "\n")
    with parallel.open("w") as handle:
        for i in range(3):
            for lang in ["en", "de", "ru", "ja"]:
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
                handle.write(json.dumps({"id": f"s{i}", "language": lang, "text": words}) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BABELPROBE_HOME", str(folder / "home"))
        return spec, load_backend(spec, device="cpu"), samples, parallel


def _memorization(tiny, out, **extra) -> MemorizationConfig:
    spec, _, samples, _ = tiny
    settings = dict(model=spec, data=samples, langs=LANGS, prefix_tokens=[10, 20], suffix_tokens=8, out=out,
                    cache=None, bootstrap_resamples=200, seed=1)
    return MemorizationConfig(**{**settings, **extra})


def test_memorization_in_parts_equals_the_whole_run_and_resumes(tiny, tmp_path, monkeypatch):
    backends = {tiny[0]: tiny[1]}
    whole = run(_memorization(tiny, tmp_path / "whole"), backends=backends)
    parts = run(_memorization(tiny, tmp_path / "parts", parts="language"), backends=backends)
    assert parts.manifest.parts == {"de": "computed", "en": "computed", "zh": "computed"}
    assert sorted(p.name for p in (tmp_path / "parts" / "parts").glob("*.parquet")) == \
        ["de.parquet", "en.parquet", "zh.parquet"]
    a, b = (pd.read_csv(tmp_path / d / "memorization.csv") for d in ("whole", "parts"))
    assert list(a["language"]) == list(b["language"]) == ["de", "en", "zh"]
    pd.testing.assert_frame_equal(a, b, rtol=1e-5)  # batches differ (one language each): float noise only
    assert whole.manifest.items == parts.manifest.items and whole.manifest.errors == parts.manifest.errors
    assert whole.manifest.requests.unique == parts.manifest.requests.unique

    # a run stopped after its first language: the next run resumes from parts/ and recomputes nothing of it
    written = []
    real_write = store.write_part

    def write_then_stop(out, key, stamp, records):
        real_write(out, key, stamp, records)
        written.append(key)
        raise KeyboardInterrupt  # killed right after the first part was written

    monkeypatch.setattr(store, "write_part", write_then_stop)
    with pytest.raises(KeyboardInterrupt):
        run(_memorization(tiny, tmp_path / "killed", parts="language"), backends=backends)
    monkeypatch.setattr(store, "write_part", real_write)
    assert written == ["de"] and not (tmp_path / "killed" / store.MANIFEST).exists()
    resumed = run(_memorization(tiny, tmp_path / "killed", parts="language"), backends=backends)
    assert resumed.manifest.parts == {"de": "resumed", "en": "computed", "zh": "computed"}
    assert resumed.manifest.requests.unique < parts.manifest.requests.unique  # de's requests not sent again
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "killed" / "items.parquet"),
                                  pd.read_parquet(tmp_path / "parts" / "items.parquet"))
    # another setting is another stamp: an unfinished run's parts are computed again, not reused
    (tmp_path / "killed" / store.MANIFEST).unlink()
    changed = run(_memorization(tiny, tmp_path / "killed", parts="language", suffix_tokens=6), backends=backends)
    assert set(changed.manifest.parts.values()) == {"computed"}

    # per-language runs compose: graph merge of a de run and an en,zh run = the whole run's table
    run(_memorization(tiny, tmp_path / "mem-de", langs=["de"]), backends=backends)
    run(_memorization(tiny, tmp_path / "mem-rest", langs=["en", "zh"]), backends=backends)
    merged = CliRunner().invoke(app, ["graph", "merge", str(tmp_path / "mem-de"), str(tmp_path / "mem-rest"),
                                      "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 0, merged.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "merged" / "memorization.csv"), a, rtol=1e-5)
    assert set(read_memorization(tmp_path / "merged").values["PM"]) == {"de", "en", "zh"}
    twice = CliRunner().invoke(app, ["graph", "merge", str(tmp_path / "mem-de"), str(tmp_path / "whole"),
                                     "--out", str(tmp_path / "bad")])
    assert twice.exit_code == 2 and "'de' is also in" in twice.output


def test_similarity_in_parts_equals_the_whole_run(tiny, tmp_path):
    backends = {tiny[0]: tiny[1]}
    common = dict(model=tiny[0], data=tiny[3], layers=[1, -1], typology="none", figures=False, cache=None)
    run(SimilarityConfig(out=tmp_path / "whole", **common), backends=backends)
    parts = run(SimilarityConfig(out=tmp_path / "parts", parts="language", **common), backends=backends)
    assert set(parts.manifest.parts) == {"en", "de", "ru", "ja"}
    for name in ("similarity.csv", "similarity_layer1.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "whole" / name), pd.read_csv(tmp_path / "parts" / name),
                                      rtol=1e-4)
    assert read_manifest(tmp_path / "parts").items == 12
    help_text = CliRunner().invoke(app, ["run", "similarity", "--help"]).output
    assert "--parts" in help_text


def test_merge_refuses_inputs_that_are_not_memorization_runs(tmp_path):
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["graph", "merge", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no memorization_p{N}.csv here" in result.output
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, rows in ((a, "language,EM,PM\nxx,0.5,-3\n"), (b, "language,EM\nyy,0.1\n")):
        folder.mkdir()
        (folder / "memorization_p20.csv").write_text(rows)
    result = CliRunner().invoke(app, ["graph", "merge", str(a), str(b), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "differ from" in result.output


# ---------------------------------------------------------------- issue 19 §5: graph grid

def _grid_runs(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    langs = ["en", "de", "fr", "ru", "ja", "zh", "ar", "hi"]
    sim, mem = tmp_path / "sim", tmp_path / "mem"
    sim.mkdir()
    mem.mkdir()
    for layer in (0, 3, 6):
        points = rng.normal(size=(len(langs), 3))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        matrix = points @ points.T
        frame = pd.DataFrame(matrix, index=pd.Index(langs, name="language"), columns=langs)
        frame.to_csv(sim / f"similarity_layer{layer}.csv")
    frame.to_csv(sim / "similarity.csv")
    for n in (10, 20):
        pd.DataFrame({"language": langs, "PM": rng.normal(size=len(langs)), "EM": [0.0] * len(langs)}) \
            .to_csv(mem / f"memorization_p{n}.csv", index=False)
    tokens = tmp_path / "tokens.csv"
    pd.DataFrame({"language": langs, "tokens": rng.uniform(1, 1000, size=len(langs))}).to_csv(tokens, index=False)
    return sim, mem, tokens


def test_graph_grid_sweeps_prompt_length_layer_and_theta(tmp_path):
    sim, mem, tokens = _grid_runs(tmp_path)
    args = ["graph", "grid", "--similarity", str(sim), "--memorization", str(mem), "--tokens", str(tokens),
            "--thetas", "0.0:0.6:0.3", "--out", str(tmp_path / "grid")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    grid = pd.read_csv(tmp_path / "grid" / "grid.csv")
    assert len(grid) == 2 * 3 * 3 * 2  # prompt lengths × layers × θ × metrics
    assert set(grid["prefix_tokens"]) == {10, 20} and set(grid["layer"]) == {0, 3, 6}
    assert (tmp_path / "grid" / "grid.png").stat().st_size > 1000
    # EM is constant: every statistic of it is undefined, with its reason, never a number
    em = grid[grid["metric"] == "EM"]
    assert em["pearson_r"].isna().all() and em["pearson_r_undefined_reason"].notna().all()
    # each cell equals `graph correlate` at that prompt length, layer and θ
    one = CliRunner().invoke(app, ["graph", "correlate", "--similarity", str(sim), "--memorization", str(mem),
                                   "--tokens", str(tokens), "--theta", "0.3", "--layer", "3", "--prefix-tokens", "20",
                                   "--out", str(tmp_path / "one"), "--no-figures"])
    assert one.exit_code == 0, one.output
    expected = json.loads((tmp_path / "one" / "graph.json").read_text())["metrics"]["PM"]
    cell = grid[(grid["prefix_tokens"] == 20) & (grid["layer"] == 3) & (grid["theta"] == 0.3) & (grid["metric"] == "PM")]
    for stat in ("pearson_r", "rho_g", "cross_r"):
        got = cell[stat].iloc[0]
        assert (pd.isna(got) and expected[stat] is None) or got == pytest.approx(expected[stat]), stat
    only = CliRunner().invoke(app, [*args[:-2], "--out", str(tmp_path / "g2"), "--layers", "6", "--prefix-tokens",
                                    "10", "--no-figures"])
    assert only.exit_code == 0 and len(pd.read_csv(tmp_path / "g2" / "grid.csv")) == 3 * 2
    missing = CliRunner().invoke(app, [*args[:-2], "--out", str(tmp_path / "g3"), "--layers", "9"])
    assert missing.exit_code == 2 and "has no 9" in missing.output


# ---------------------------------------------------------------- issue 19 §4: one code per language, FLORES+

def test_one_language_code_normaliser_for_every_shared_path_input(tmp_path):
    from babelprobe.data.validation import DatasetError
    from babelprobe.families.memorization.data import load_samples
    from babelprobe.families.similarity.signals import read_similarity_csv, read_tokens
    from babelprobe.languages import normalise_code

    pairs = {"iw": "he", "heb_Hebr": "he", "cmn_Hans": "zh", "zh-Hant": "zh", "nob_Latn": "no", "tgl_Latn": "fil",
             "fil": "fil", "arb_Arab": "ar", "pes_Arab": "fa", "zsm_Latn": "ms", "EN": "en", "ceb": "ceb",
             "kmr_Latn": "ku", "in": "id", "xx": "xx"}
    assert {code: normalise_code(code) for code in pairs} == pairs
    # the token counts write iw, the similarity matrix he: the same node
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("language,tokens\niw,17\nen,2733\nfil,2.1\n")
    assert read_tokens(tokens, "log") == {"he": 17.0, "en": 2733.0, "fil": 2.1}
    sim = tmp_path / "sim.csv"
    sim.write_text("language,he,en,tl\nhe,1,0.5,0.2\nen,0.5,1,0.3\ntl,0.2,0.3,1\n")
    assert read_similarity_csv(sim).languages == ("he", "en", "fil")
    # two codes of one language in one input: reported, never merged or dropped
    both = tmp_path / "both.csv"
    both.write_text("language,tokens\niw,17\nhe,16\n")
    with pytest.raises(DatasetError, match="'he' and 'iw' are one language"):
        read_tokens(both, "log")
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "iw.jsonl").write_text(json.dumps({"text": "שלום עולם"}) + "\n")
    (samples / "en.jsonl").write_text(json.dumps({"text": "hello world"}) + "\n")
    assert {s.language for s in load_samples(samples)} == {"he", "en"}
    assert [s.language for s in load_samples(samples, langs=["iw"])] == ["he"]
    (samples / "he.jsonl").write_text(json.dumps({"text": "עוד"}) + "\n")
    with pytest.raises(DatasetError, match="he and iw are one language"):
        load_samples(samples)


def _flores_fixture(root):
    """FLORES+ in its release layout: <split>/<iso639-3>_<Script>.parquet, its columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = {"heb_Hebr": "משפט", "eng_Latn": "sentence", "cmn_Hans": "句子简", "cmn_Hant": "句子繁",
             "nob_Latn": "setning", "arb_Arab": "جملة"}
    for split, ids in (("dev", [0, 1, 2]), ("devtest", [0, 1])):
        (root / split).mkdir(parents=True, exist_ok=True)
        for code, text in texts.items():
            lang, script = code.split("_")
            rows = [{"id": i, "iso_639_3": lang, "iso_15924": script, "glottocode": "abcd1234",
                     "text": f"{text} {split} {i}", "url": "https://example.org", "domain": "wikinews",
                     "topic": "x", "has_image": False, "has_hyperlink": False, "last_updated": "2.0"} for i in ids]
            pq.write_table(pa.Table.from_pylist(rows), root / split / f"{code}.parquet")
    return root


def test_flores_plus_fetch_from_a_local_copy(tmp_path):
    from babelprobe.families import fetch_dataset
    from babelprobe.families.similarity.data import load_parallel

    source = _flores_fixture(tmp_path / "flores-plus-release")
    result = fetch_dataset("flores-plus", tmp_path / "flores", source=str(source))
    data = tmp_path / "flores" / "flores_plus.parquet"
    frame = pd.read_parquet(data)
    assert sorted(frame["language"].unique()) == ["ar", "en", "he", "no", "zh"]
    assert len(frame) == 5 * 5 and set(frame["split"]) == {"dev", "devtest"}
    assert frame[frame["language"] == "zh"]["flores_code"].unique().tolist() == ["cmn_Hans"]  # the usual script
    codes = pd.read_csv(tmp_path / "flores" / "codes.csv").set_index("flores_code")
    assert codes.loc["cmn_Hant", "file"].startswith("flores_plus_other_varieties.parquet")  # reported, kept
    assert len(pd.read_parquet(tmp_path / "flores" / "flores_plus_other_varieties.parquet")) == 5
    sentences = load_parallel(data, ["iw", "en"])  # the memorization files' code finds FLORES+'s Hebrew
    assert {s.language for s in sentences} == {"he", "en"} and len(sentences) == 10
    assert result.record.rows == 30
    assert CliRunner().invoke(app, ["validate", str(data), "--probe", "similarity"]).exit_code == 0
    only = fetch_dataset("flores-plus", tmp_path / "only", source=str(source), langs=["iw", "eng_Latn"])
    assert sorted(pd.read_parquet(tmp_path / "only" / "flores_plus.parquet")["language"].unique()) == ["en", "he"]
    assert only.record.langs == ["iw", "eng_Latn"]


# ---------------------------------------------------------------- issue 19 §4: ASJP lexical similarity

def _asjp_cldf(root):
    """A few ASJP word lists in the CLDF release's layout (cldf/forms.csv, languages.csv, parameters.csv)."""
    folder = root / "cldf"
    folder.mkdir(parents=True)
    (folder / "languages.csv").write_text(
        "ID,Name,Glottocode,ISO639P3code\nENGLISH,ENGLISH,stan1293,eng\nSTANDARD_GERMAN,STANDARD_GERMAN,stan1295,deu\n"
        "RUSSIAN,RUSSIAN,russ1263,rus\nRUSSIAN_2,RUSSIAN_2,russ1263,rus\nPROTO_X,PROTO_X,,\n", encoding="utf-8")
    (folder / "parameters.csv").write_text("ID,Name,Concepticon_ID\n1,I,1209\n2,two,1498\n3,three,492\n4,one,1493\n",
                                           encoding="utf-8")
    words = {"ENGLISH": {"1": "Ei", "2": "tu", "3": "Tri", "4": "wan"},
             "STANDARD_GERMAN": {"1": "iX", "2": "cvai", "3": "drai", "4": "ains"},
             "RUSSIAN": {"1": "ya", "2": "dva", "3": "tri", "4": "adin"},
             "RUSSIAN_2": {"2": "dva"}, "PROTO_X": {"1": "xx", "2": "yy"}}
    rows = ["ID,Language_ID,Parameter_ID,Value,Form,Loan"]
    for lang, forms in words.items():
        rows += [f"{lang}-{p},{lang},{p},{f},{f},false" for p, f in forms.items()]
    rows.append("ENGLISH-2b,ENGLISH,2,tuu,tuu,true")  # a loanword: left out
    (folder / "forms.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_ldnd_is_the_published_definition():
    from babelprobe.analysis.typology import ldn, ldnd

    a = {"one": ["wan"], "two": ["tu"], "three": ["Tri"]}
    b = {"one": ["an"], "two": ["tu", "cvai"], "three": ["dri"]}
    assert ldn("wan", "an") == pytest.approx(levenshtein("wan", "an") / 3)
    same = (1 / 3 + 0 + 1 / 3) / 3  # synonyms: the closer form (tu) counts
    different = [min(levenshtein(x, y) / max(len(x), len(y)) for x in a[c] for y in b[d])
                 for c in a for d in b if c != d]
    assert ldnd(a, b) == pytest.approx(same / (sum(different) / len(different)))
    assert ldnd(a, a) == 0.0 and ldnd(a, {"four": ["fir"], "five": ["faiv"]}) is None


def test_asjp_cldf_converts_once_and_correlates_per_layer(tiny, tmp_path):
    from babelprobe.analysis.typology import asjp_similarity, ldnd

    source = _asjp_cldf(tmp_path / "asjp")
    result = CliRunner().invoke(app, ["graph", "asjp", "--source", str(source), "--out", str(tmp_path / "asjp.parquet")])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(tmp_path / "asjp.parquet")
    assert sorted(table["language"].unique()) == ["de", "en", "ru"]  # no ISO code: left out
    assert set(table[table["language"] == "ru"]["doculect"]) == {"RUSSIAN"}  # the fuller list of rus
    assert list(table[table["form"] == "tuu"]["loan"]) == [True]  # kept, flagged: out of the default LDND
    table = table[~table["loan"]]
    similarity = asjp_similarity(["en", "de", "ru", "ja"], tmp_path / "asjp.parquet")
    assert similarity.unknown_languages == ("ja",)
    lists = {lang: {c: list(g["form"]) for c, g in table[table["language"] == lang].groupby("concept")}
             for lang in ("en", "de")}
    assert similarity.values[0, 1] == pytest.approx(1 - ldnd(lists["en"], lists["de"]))
    # beside lang2vec's feature sets, one correlation per layer
    outcome = run(SimilarityConfig(model=tiny[0], data=tiny[3], layers="all", typology="none", figures=False,
                                   cache=None, out=tmp_path / "run", asjp=tmp_path / "asjp.parquet"),
                  backends={tiny[0]: tiny[1]})
    asjp = [t for t in outcome.summary.typology if t.features == "asjp"]
    assert [t.layer for t in asjp] == [0, 1, 2] and all(t.n_pairs == 3 for t in asjp)
    assert outcome.summary.typology_unknown_languages["asjp"] == ["ja"]
    bad = CliRunner().invoke(app, ["graph", "asjp", "--source", str(tmp_path), "--out", str(tmp_path / "x.parquet")])
    assert bad.exit_code == 2 and "forms.csv" in bad.output


def test_memorization_without_parts_runs_and_writes_in_chunks(tiny, tmp_path, monkeypatch):
    """``--parts none`` (issue 31): the samples are read, run and written CHUNK_SAMPLES at a time
    (appended to items.parquet chunk by chunk; no run-wide list of records, no parts/ left), in the
    order and with the values of the run of every sample at once. Input: the demo's 28 texts in 13
    languages and 8 scripts (the tiny model's word-level vocabulary leaves many windows unscored:
    decided records and scored ones mix in every chunk)."""
    from babelprobe.families.memorization import family as memorization

    from babelprobe.families.base import Family

    backends = {tiny[0]: tiny[1]}
    demo = dict(data=memorization.DEMO_MEMORIZATION, langs=None)
    with monkeypatch.context() as before:  # every sample at once, every record written at once: the run before chunks
        before.setattr(memorization.MemorizationFamily, "load_chunks", Family.load_chunks)
        whole = run(_memorization(tiny, tmp_path / "whole", **demo), backends=backends)
    # 28 samples: one chunk, the very same batches, so the very same items (every float too)
    run(_memorization(tiny, tmp_path / "one-chunk", **demo), backends=backends)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "whole" / "items.parquet"),
                                  pd.read_parquet(tmp_path / "one-chunk" / "items.parquet"), check_exact=True)
    seen: list[int] = []
    real_tokenize = memorization.tokenize_stage

    def counted(config, samples, context):
        seen.append(len(samples))
        return real_tokenize(config, samples, context)

    def no_run_wide_write(out, records):
        raise AssertionError("--parts none wrote every record at once")

    monkeypatch.setattr(memorization, "CHUNK_SAMPLES", 5)
    monkeypatch.setattr(memorization, "tokenize_stage", counted)
    monkeypatch.setattr(store, "write_items", no_run_wide_write)
    chunked = run(_memorization(tiny, tmp_path / "chunked", **demo), backends=backends)
    assert seen == [5, 5, 5, 5, 5, 3]  # 28 samples, at most 5 in memory at a time
    assert not (tmp_path / "chunked" / "parts").exists() and chunked.manifest.parts == {}
    assert (chunked.manifest.items, chunked.manifest.errors) == (whole.manifest.items, whole.manifest.errors)
    # the same requests (de-duplicated per chunk: two chunks' equal windows are both computed)
    assert chunked.manifest.requests.requested == whole.manifest.requests.requested
    a, b = (pd.read_parquet(tmp_path / d / "items.parquet") for d in ("whole", "chunked"))
    assert list(a.columns) == list(b.columns) and list(a.dtypes) == list(b.dtypes)
    assert b["language"].nunique() == a["language"].nunique() >= 12 and set(b["status"]) == set(a["status"]) and len(set(b["status"])) > 1
    _assert_items_equal(a, b)
    assert pq_row_groups(tmp_path / "chunked") == 6 and pq_row_groups(tmp_path / "whole") == 1
    # stopped in its first chunk: no folder (as any run before a result); in its third: the two
    # chunks written stay a readable items.parquet of an unfinished run (no manifest)
    for stop_at, left in [(1, None), (3, 10)]:
        calls: list[int] = []

        def stopping(config, samples, context, stop_at=stop_at):
            calls.append(1)
            if len(calls) == stop_at:
                raise KeyboardInterrupt
            return real_tokenize(config, samples, context)

        monkeypatch.setattr(memorization, "tokenize_stage", stopping)
        stopped = tmp_path / f"stopped-{stop_at}"
        with pytest.raises(KeyboardInterrupt):
            run(_memorization(tiny, stopped, **demo), backends=backends)
        assert not (stopped / store.MANIFEST).exists()
        if left is None:
            assert not stopped.exists()
        else:
            assert list(pd.read_parquet(stopped / store.ITEMS)["sample_id"].unique()) == \
                list(a["sample_id"].unique()[:left])
    # --parts language on the same input: the same items (its rows by language)
    monkeypatch.undo()
    run(_memorization(tiny, tmp_path / "language", parts="language", **demo), backends=backends)
    c = pd.read_parquet(tmp_path / "language" / "items.parquet")
    key = ["sample_id", "prefix_tokens"]
    _assert_items_equal(a.sort_values(key, ignore_index=True), c.sort_values(key, ignore_index=True))


def pq_row_groups(run_dir) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(run_dir / store.ITEMS).num_row_groups


def _assert_items_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal items: every column but the scores exactly; the scores (batches are cut per chunk or
    language: their padding differs) to float noise."""
    import numpy as np

    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    for column in a.columns:
        if a[column].dtype == float:
            np.testing.assert_allclose(a[column], b[column], rtol=1e-5, equal_nan=True, err_msg=column)
        elif column == "token_logprobs":
            for x, y in zip(a[column], b[column]):
                assert (x is None) == (y is None) and (x is None or np.allclose(x, y, rtol=1e-5)), column
        else:
            assert [repr(v) if not hasattr(v, "tolist") else v.tolist() for v in a[column]] == \
                   [repr(v) if not hasattr(v, "tolist") else v.tolist() for v in b[column]], column
