"""``run_build``: the eight stages in order, each written to ``<out>/build/<n>-<stage>.json`` and
recorded in ``<out>/build/state.json`` with the hash of the options it depends on. A build that
was killed (or re-run) reuses every recorded stage whose options are unchanged and runs the
rest; the translation requests of an interrupted stage come back from the response cache."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, TypeAdapter

from babelprobe.families.owl.builder import stages
from babelprobe.families.owl.builder.books import BuildError, check_language, read_books
from babelprobe.families.owl.builder.names import NerRecall, ner_recall
from babelprobe.families.owl.builder.options import STAGES, BuildOptions
from babelprobe.families.owl.builder.records import (
    AlignedPair, Book, Count, Deletion, Passage, SplitBook, TranslatedBook,
)
from babelprobe.families.owl.data import Group, OwlItem, load_owl
from babelprobe.models.base import Backend

DATA_TYPES: dict[str, Any] = {
    "split": list[SplitBook], "translate": list[TranslatedBook], "align": list[AlignedPair],
    "filter": list[Passage], "posthoc": list[Passage], "sample": list[Passage], "mt": list[Passage], "write": list[OwlItem],
}
DATASET = "owl.jsonl"
REPORT = "build_report.json"


class StageRecord(BaseModel):
    stage: str
    key: str
    seconds: float
    resumed: bool = False
    counts: list[Count]
    deletions: list[Deletion]


class BuildReport(BaseModel):
    dataset: Path
    stages: list[StageRecord]
    passages: int
    items: int
    ner_recall: NerRecall | None = None  # both name methods on the bundled hand-checked sample (names.py)

    def counts(self) -> list[Count]:
        return [c for s in self.stages for c in s.counts]

    def deletions(self) -> list[Deletion]:
        return [d for s in self.stages for d in s.deletions]


class Interrupted(RuntimeError):
    """Raised by ``stop_after`` (tests: a build killed between two stages)."""


def _write_json(path: Path, payload: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(payload, encoding="utf-8")
    os.replace(tmp, path)  # a kill leaves the old file or the new one, never half of one


def _digest(books: list[Book]) -> str:
    h = hashlib.sha256()
    for b in books:
        h.update(f"{b.model_dump_json()}\n".encode())
        h.update(hashlib.sha256(b.file.read_bytes()).digest())
    return h.hexdigest()[:16]


def check_options(options: BuildOptions, books: list[Book]) -> None:
    official = {b.language for b in books}
    for code in options.unseen:
        check_language(code, "--unseen")
        if code in official:
            raise BuildError(f"--unseen {code}: {options.books} already has books in {code!r} (an official translation)")


def items_of(passages: list[Passage], books: list[Book]) -> list[OwlItem]:
    """The ``run owl`` rows: English original, official translations, unseen translations."""
    meta = {(b.book_id, b.language): b for b in books}
    out = []
    for p in passages:
        en = meta[(p.book_id, "en")]
        aliases = tuple(dict.fromkeys(a for b in books if b.book_id == p.book_id for a in (*b.aliases, b.title) if a))
        texts: list[tuple[str, Group, str]] = [("en", "original", p.english)]
        texts += [(lang, "official", t) for lang, t in sorted(p.versions.items())]
        texts += [(lang, "unseen", t) for lang, t in sorted(p.unseen.items())]
        for lang, group, text in texts:
            book = meta.get((p.book_id, lang))
            out.append(OwlItem(book_id=p.book_id, author=en.author, title_en=en.title_en,
                               title=book.title if book else "", aliases=aliases, language=lang, language_group=group,
                               passage_id=p.passage_id, passage=text, names=tuple(n for n in p.names if n in text),
                               year=en.year))
    return out


def _write_stage(passages: list[Passage], books: list[Book]) -> tuple[list[OwlItem], list[Count], list[Deletion]]:
    items = items_of(passages, books)
    counts = [Count(stage="write", book_id=book, language=lang, unit="rows (with-name / all)",
                    n_in=sum(1 for i in items if i.book_id == book and i.language == lang and i.names),
                    n_out=sum(1 for i in items if i.book_id == book and i.language == lang))
              for book, lang in sorted({(i.book_id, i.language) for i in items})]
    return items, counts, []


def run_build(options: BuildOptions, progress: bool = False, stop_after: str | None = None,
              on_stage: Callable[[StageRecord], None] | None = None,
              backends: dict[str, Backend] | None = None) -> BuildReport:
    """Run (or resume) the build; ``backends``: translators already loaded, by spec."""
    books = read_books(options.books)
    check_options(options, books)
    work = options.work
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"--out {options.out}: cannot write there ({exc.strerror or exc})") from None
    state_file = work / "state.json"
    state: dict[str, str] = json.loads(state_file.read_text()) if state_file.is_file() else {}
    books_key = _digest(books)
    data: dict[str, Any] = {}
    records: list[StageRecord] = []
    run = {
        "split": lambda: stages.split(books, options),
        "translate": lambda: stages.translate(data["split"], options, progress, backends),
        "align": lambda: stages.align(data["split"], data["translate"], options),
        "filter": lambda: stages.filter_pairs(data["split"], data["align"], options),
        "posthoc": lambda: stages.posthoc(data["filter"], options, data["split"]),
        "sample": lambda: stages.sample(data["posthoc"], options),
        "mt": lambda: stages.machine_translate(data["sample"], options, progress, backends),
        "write": lambda: _write_stage(data["mt"], books),
    }
    reuse = True
    for number, stage in enumerate(STAGES, 1):
        key = f"{books_key}-{options.stage_key(stage)}"
        path = work / f"{number}-{stage}.json"
        adapter = TypeAdapter(DATA_TYPES[stage])
        if reuse and state.get(stage) == key and path.is_file():
            saved = json.loads(path.read_text(encoding="utf-8"))
            data[stage] = adapter.validate_python(saved["data"])
            record = StageRecord.model_validate({**saved["record"], "resumed": True})
        else:
            reuse = False  # every later stage depends on this one's output
            start = time.perf_counter()
            output, counts, deletions = run[stage]()
            data[stage] = output
            record = StageRecord(stage=stage, key=key, seconds=round(time.perf_counter() - start, 3),
                                 counts=counts, deletions=deletions)
            _write_json(path, json.dumps({"record": record.model_dump(mode="json", exclude={"resumed"}),
                                          "data": adapter.dump_python(output, mode="json")}, ensure_ascii=False))
            state[stage] = key
            _write_json(state_file, json.dumps(state, indent=1))
        records.append(record)
        if on_stage is not None:
            on_stage(record)
        if stop_after == stage:
            raise Interrupted(f"stopped after stage {stage}")
    items: list[OwlItem] = data["write"]
    dataset = options.out / DATASET
    _write_json(dataset, "".join(i.model_dump_json(exclude={"source"}) + "\n" for i in items))
    load_owl(dataset)  # what `run owl` reads: a build never hands over rows its loader refuses
    report = BuildReport(dataset=dataset, stages=records, passages=len(data["mt"]), items=len(items),
                         ner_recall=ner_recall())
    _write_json(options.out / REPORT, report.model_dump_json(indent=1))
    return report
