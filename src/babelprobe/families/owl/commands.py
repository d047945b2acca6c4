"""OWL's own commands: ``babelprobe convert owl-release``, ``babelprobe rescore owl`` and the
App. B.4 presence commands ``babelprobe corpus index`` / ``corpus presence`` (in the shared
``corpus`` group, beside memorization's ``corpus sample``; all three read a corpus with
data/corpus.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from babelprobe.commands import console, fail, out_dir, unwritable
from babelprobe.config import comma_list, default_response_cache
from babelprobe.data.validation import DatasetError
from babelprobe.families.base import CommandRoot, Family
from babelprobe.families.owl.data import convert_owl_release
from babelprobe.report.terminal import plain


def register(root: CommandRoot, family: Family) -> None:
    from babelprobe.families.owl.audio_commands import register as register_audio
    from babelprobe.families.owl.builder.command import register as register_build

    owl_app = root.group("owl", "OWL's own tools: speech for the audio ablation, building a dataset from books, "
                                "analyses across runs (App. E).")
    register_audio(owl_app)  # `owl audio`
    register_build(owl_app)  # `owl build` (builder/command.py)
    rescore_app = root.group("rescore")
    register_presence(root)
    register_quantization(owl_app, family)
    register_membership(owl_app)

    @rescore_app.command("owl")
    def rescore_owl(
        file: Path = typer.Argument(..., help="an OWL release prediction CSV (one book)"),
        task: str = typer.Option(..., help="direct, name-cloze or prefix"),
        title: list[str] = typer.Option([], "--title", help="gold title(s) when the file has no title columns"),
        author: Optional[str] = typer.Option(None, help="gold author when the file has no author_name column"),
        out: Optional[Path] = typer.Option(None, help="also write the scored rows as items.parquet here"),
    ) -> None:
        """Re-evaluate released OWL predictions with babelprobe's parsers and metrics."""
        from babelprobe import store  # pandas: imported when the command runs, not for --help
        from babelprobe.families.owl.analysis import rescore_release

        if task not in ("direct", "name-cloze", "prefix"):
            fail(f"unknown owl task {task!r}: direct, name-cloze, prefix")
        try:
            items, columns = rescore_release(file, task, title, author)
        except (DatasetError, ValueError) as exc:
            fail(str(exc))
        table = Table(title=f"OWL {task}: {plain(file.name)}")
        for col in ("column", "language", "variant", "n", "accuracy %" if task != "prefix" else "chrF++ / chrF"):
            table.add_column(col)
        for c in columns:
            score = f"{100 * c.accuracy:.1f}" if c.accuracy is not None else f"{c.chrf_pp:.1f} / {c.chrf:.1f}"
            table.add_row(plain(c.column), plain(c.language), plain(c.variant), str(c.n), score)
        console.print(table)
        if out is not None:
            out_dir(out)
            items.to_parquet(out / store.ITEMS)
            console.print(f"results: {out}")

    @root.app.command("convert")
    def convert_command(
        kind: str = typer.Argument(..., help="owl-release"),
        file: Path = typer.Argument(..., help="one book's CSV in the OWL release layout"),
        out: Path = typer.Option(..., help="JSONL to write (babelprobe's owl layout)"),
        book_id: str = typer.Option(..., help="short id of the book"),
        title: str = typer.Option(..., help="English title"),
        author: str = typer.Option(...),
        original: str = typer.Option(..., help="language code of the original"),
        official: str = typer.Option("", help="comma-separated codes of languages with an official translation"),
        year: Optional[int] = typer.Option(None, help="publication year"),
    ) -> None:
        """Convert an OWL release CSV (one column per language, Single_ent) into babelprobe's owl rows."""
        if kind != "owl-release":
            fail(f"unknown conversion {kind!r} (available: owl-release)")
        try:
            items = convert_owl_release(file, book_id, title, author, original, comma_list(official) or [], year)
        except DatasetError as exc:
            fail(str(exc))
        try:
            with out.open("w", encoding="utf-8") as handle:
                for item in items:
                    handle.write(item.model_dump_json(exclude={"source"}) + "\n")
        except OSError as exc:
            unwritable(out, exc)
        console.print(f"[green]ok[/green]: {len(items)} passage versions -> {out}")


def register_presence(root: CommandRoot) -> None:
    corpus_app = root.group("corpus")

    @corpus_app.command("index")
    def corpus_index(
        inputs: list[Path] = typer.Argument(..., help="text files (one document each), JSONL/CSV/Parquet files (one "
                                                      "document per row), or directories of them (`corpus --help`)"),
        out: Path = typer.Option(..., "--out", help="new folder for the index (its path must not hold the words "
                                                    "tokenized, table, offset, metadata, metaoff, unigram)"),
        text_field: str = typer.Option("text", help="the document column of JSONL/CSV/Parquet inputs"),
        cpus: Optional[int] = typer.Option(None, help="indexing processes (default: every CPU; small corpora use fewer)"),
        mem: int = typer.Option(4, help="GiB of memory infini-gram's indexer may plan for"),
    ) -> None:
        """Index a local corpus with infini-gram (byte-level, exact counts) for `corpus presence` (OWL App. B.4)."""
        from babelprobe.families.owl.presence import PresenceError, build_index

        try:
            manifest = build_index(inputs, out, text_field, cpus, mem, log=lambda m: console.print(plain(m)))
        except (DatasetError, PresenceError) as exc:
            fail(str(exc))
        mb = manifest.corpus_bytes / 1e6
        console.print(f"[green]ok[/green]: {manifest.documents} documents, {mb:.2f} MB -> {plain(str(out))} "
                      f"({manifest.index_bytes / 1e6:.2f} MB on disk, {manifest.index_bytes / max(1, manifest.corpus_bytes):.1f}x; "
                      f"{manifest.build_seconds:.1f} s; self-check: {len(manifest.self_check)} checks passed)")

    @corpus_app.command("presence")
    def corpus_presence(
        passages: Path = typer.Option(..., "--passages", help="JSONL/CSV/Parquet with passage_id and text (optional "
                                                              "language, book_id), or an OWL dataset"),
        out: Path = typer.Option(..., "--out", help="folder for presence.jsonl"),
        index: Optional[Path] = typer.Option(None, "--index", help="a local index from `corpus index`"),
        api: Optional[str] = typer.Option(None, "--api", help="the infini-gram API instead (e.g. https://api.infini-gram.io/)"),
        api_index: Optional[str] = typer.Option(None, "--api-index", help="its index (OWL: v4_olmo-2-1124-13b-instruct_llama)"),
        langs: Optional[str] = typer.Option(None, help="only passages in these languages (comma-separated codes)"),
        concurrency: int = typer.Option(4, help="API requests in flight at most", min=1),
        cache: Optional[Path] = typer.Option(None, help="the response cache the API's answers are kept in (default "
                                                        "~/.cache/babelprobe/responses.sqlite, as `run --cache`): a "
                                                        "re-run sends nothing twice"),
    ) -> None:
        """Search each passage in a pretraining corpus (OWL App. B.4): exact, then 40/30/20-word windows."""
        from babelprobe.families.owl.presence import (LEGACY_API_CACHE, ApiCounter, LocalIndex, PresenceError,
                                                      load_passages, match_counts, run_presence, write_presence,
                                                      write_samples)

        if (index is None) == (api is None):
            fail("give --index IDX (a local index) or --api URL --api-index NAME")
        if api is not None and not api_index:
            fail("--api needs --api-index (e.g. v4_olmo-2-1124-13b-instruct_llama)")
        if cache is not None and cache.suffix.lower() == ".jsonl":
            fail(f"--cache {cache}: the API's answers are kept in the response cache (SQLite, as `run --cache`); "
                 f"the JSONL cache of older versions is not read")
        try:
            items = load_passages(passages, comma_list(langs) if langs else None)
            if not items:
                fail(f"{passages}: no passages" + (f" in {langs}" if langs else ""))
            out_dir(out)
            counter: LocalIndex | ApiCounter
            if index is not None:
                counter = LocalIndex(index)
            else:
                assert api is not None and api_index is not None  # one of --index and --api, refused above
                counter = ApiCounter(api, api_index, cache or default_response_cache(), concurrency=concurrency)
        except (DatasetError, PresenceError) as exc:
            fail(str(exc))
        try:
            done = run_presence(items, counter)
        finally:
            if isinstance(counter, ApiCounter):
                counter.close()
        path = write_presence(done.rows, out)
        samples = write_samples(items, out)
        counts = match_counts(done.rows)
        table = Table(title=f"presence of {len(done.rows)} passages (OWL Fig. 9)")
        for col in ("match", "passages", "%"):
            table.add_column(col, justify="left" if col == "match" else "right")
        for match, n in counts.items():
            if n or match != "error":
                table.add_row(match, str(n), f"{100 * n / len(done.rows):.1f}")
        console.print(table)
        extra = f"; API: {counter.sent} sent, {counter.cached} from cache" if isinstance(counter, ApiCounter) else ""
        console.print(f"{done.queries} counts in {done.seconds:.2f} s ({1000 * done.seconds / len(done.rows):.1f} ms "
                      f"per passage){extra}")
        console.print(f"presence: {plain(str(path))}")
        if samples is not None:
            console.print(f"as memorization samples (for `owl membership`): {plain(str(samples))}")
        if isinstance(counter, ApiCounter) and (out / LEGACY_API_CACHE).is_file():
            console.print(f"{plain(str(out / LEGACY_API_CACHE))} (the API cache of older versions) was not read: "
                          f"answers are now kept in the response cache {plain(str(counter.cache_path))}")
        if counts.get("error"):
            console.print(f"[yellow]{counts['error']} passages could not be counted (rows with an error)[/yellow]")


def register_quantization(owl_app: typer.Typer, family: Family) -> None:
    @owl_app.command("quantization")
    def owl_quantization(
        baseline: Path = typer.Argument(..., help="the full-precision run (an owl run directory)"),
        runs: list[Path] = typer.Argument(..., help="quantized runs of the same model on the same passages"),
        resamples: int = typer.Option(10_000, help="paired bootstrap resamples per cell", min=100),
        seed: int = typer.Option(0),
        out: Optional[Path] = typer.Option(None, help="also write the tables as JSON here"),
    ) -> None:
        """OWL Tables 10-12: each run's change from the baseline in points, paired bootstrap CI per cell (App. E)."""
        from babelprobe import store
        from babelprobe.families.owl.quantization import GROUPS, format_delta, quantization_tables
        from babelprobe.stored_runs import RunError, read_runs

        frames, labels = {}, []
        try:
            stored_runs = read_runs([baseline, *runs], family)
        except RunError as exc:
            fail(str(exc))
        for run_dir, stored in zip([baseline, *runs], stored_runs):
            label = stored.manifest.model.spec
            if label in labels:
                label = f"{label} ({run_dir.name})"
            labels.append(label)
            frames[label] = store.read_items(run_dir)
        base_label = labels[0]
        report = quantization_tables(frames.pop(base_label), frames, base_label, resamples, seed)
        for t in report.tables:
            table = Table(title=f"{t.name}: {t.title}; runs as change from {plain(base_label)} "
                                f"(points, paired 95% CI; * the CI excludes 0)")
            table.add_column("model", no_wrap=True)
            table.add_column("setting")
            for group in GROUPS:
                table.add_column(group, justify="right")
            for row in t.rows:
                cells = {c.group: c for c in row.cells}
                table.add_row(plain(base_label), row.setting,
                              *(f"{cells[g].baseline:.1f} (n={cells[g].n})" if g in cells else "-" for g in GROUPS))
            for label in report.runs:
                for row in t.rows:
                    cells = {c.group: c for c in row.cells}
                    table.add_row(f"+ {plain(label)}", row.setting,
                                  *(format_delta(cells[g].deltas[label]) if g in cells and label in cells[g].deltas
                                    else "-" for g in GROUPS))
            console.print(table)
        if out is not None:
            try:
                out.write_text(report.model_dump_json(indent=2))
            except OSError as exc:
                unwritable(out, exc)
            console.print(f"tables: {plain(str(out))}")


def register_membership(owl_app: typer.Typer) -> None:
    @owl_app.command("membership")
    def owl_membership(
        run_dir: Path = typer.Argument(..., help="a memorization run over OUT/samples.jsonl of `corpus presence`"),
        presence: Path = typer.Option(..., "--presence", help="presence.jsonl (members: seen; non-members: none)"),
        data: Optional[Path] = typer.Option(None, help="the OWL dataset: group by language group (default: by language)"),
        resamples: int = typer.Option(1000, help="bootstrap resamples per cell", min=100),
        out: Optional[Path] = typer.Option(None, help="also write the cells as JSON here"),
    ) -> None:
        """Membership scores vs presence labels: AUROC, TPR at 1%/5% FPR per group, bootstrap CIs."""
        import json

        from babelprobe import store
        from babelprobe.families.owl.data import load_owl
        from babelprobe.families.owl.membership import membership_cells, membership_frame
        from babelprobe.families.owl.presence import read_presence, sample_id

        try:
            manifest = store.read_manifest(run_dir)
            items = store.read_items(run_dir)
            rows = read_presence(presence)
            groups: dict[str, str] | None = {sample_id(i.book_id, i.passage_id, i.language): i.language_group
                                             for i in load_owl(data)} if data else None
        except (FileNotFoundError, ValueError) as exc:
            fail(str(exc))
        if manifest.probe != "memorization":
            fail(f"{run_dir}: not a memorization run ({manifest.probe}); run `babelprobe run memorization --data "
                 "OUT/samples.jsonl` on the passages first")
        frame = membership_frame(items, rows, groups)
        if frame.empty or frame["member"].nunique() < 2:
            fail("membership needs scored passages labelled both seen and unseen")
        cells = membership_cells(frame, resamples)
        table = Table(title=f"membership scores vs presence ({int(frame['member'].sum())} members, "
                            f"{int((1 - frame['member']).sum())} non-members; 95% bootstrap CIs)")
        for col in ("score", "group", "members", "non-members", "AUROC", "TPR@1%FPR", "TPR@5%FPR"):
            table.add_column(col, justify="left" if col in ("score", "group") else "right")
        for c in cells:
            table.add_row(c.score, plain(c.group), str(c.members), str(c.non_members),
                          f"{c.auroc:.2f} ({c.auroc_low:.2f}-{c.auroc_high:.2f})",
                          f"{c.tpr_at_1:.2f} ({c.tpr_at_1_low:.2f}-{c.tpr_at_1_high:.2f})",
                          f"{c.tpr_at_5:.2f} ({c.tpr_at_5_low:.2f}-{c.tpr_at_5_high:.2f})")
        console.print(table)
        if "Min-K%++" not in {c.score for c in cells}:
            console.print("Min-K%++ is not computed: run memorization with --min-k-plus (transformers backend).")
        console.print("Presence labels are noisy: an edition or spacing the corpus does not hold counts as unseen.")
        if out is not None:
            try:
                out.write_text(json.dumps([c.model_dump() for c in cells], indent=2))
            except OSError as exc:
                unwritable(out, exc)
