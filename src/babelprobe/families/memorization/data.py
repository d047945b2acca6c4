"""Memorization samples (Shared Path §5.2): texts believed to be in a model's training data.

Accepted layouts: the output directory of ``babelprobe corpus sample`` (one ``<lang>.parquet``
per language, columns ``text``, ``language``, ``source``), any directory of ``<lang>.jsonl`` /
``<lang>.parquet`` / ``<lang>.csv`` files with a ``text`` column, or one JSONL/CSV/Parquet file
with ``text`` and ``language`` columns. Optional columns: ``id`` (else language + row number) and
``source`` (where the text came from: the sampler's file:row or dataset/split/index, or a
citation; kept as ``origin``). ``Sample.source`` is always this file's path and row.
"""

from __future__ import annotations

import hashlib
import random
import tempfile
from array import array
from pathlib import Path
from typing import IO, Iterator

from pydantic import BaseModel, ConfigDict

from babelprobe.data.tables import TABLE_SUFFIXES, iter_rows
from babelprobe.data.validation import DatasetError, Problem, language_code_problem
from babelprobe.languages import normalise_code


class Sample(BaseModel):
    model_config = ConfigDict(frozen=True)

    sample_id: str
    language: str
    text: str
    source: str  # file:row of the sample file (manifest data_files)
    origin: str = ""  # the row's own `source` column: where the text came from


def _files(path: Path) -> list[tuple[Path, str | None]]:
    """(file, language implied by its name or None) for a file or a per-language directory."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in TABLE_SUFFIXES)
        if not files:
            raise DatasetError([Problem(str(path), None, None, f"no {', '.join(TABLE_SUFFIXES)} files")])
        return [(f, f.stem) for f in files]
    if not path.exists():
        raise DatasetError([Problem(str(path), None, None, "no such file or directory")])
    return [(path, None)]


def load_samples(path: str | Path, langs: list[str] | None = None, limit: int | None = None,
                 seed: int = 0) -> list[Sample]:
    """Load and validate every sample; ``limit`` keeps a seeded sample of that many per language.
    One DatasetError lists every problem (file, row, field)."""
    problems: list[Problem] = []
    samples = list(_checked(Path(path), problems))
    if problems:
        raise DatasetError(problems)
    if langs:
        wanted = {normalise_code(lang) for lang in langs}
        samples = [s for s in samples if s.language in wanted]
    if limit is not None:
        kept = []
        for language in sorted({s.language for s in samples}):
            kept += _limited([s for s in samples if s.language == language], language, limit, seed)
        samples = kept
    return samples


def _limited(mine: list[Sample], language: str, limit: int | None, seed: int) -> list[Sample]:
    """One language's samples, or a seeded ``limit`` of them (--limit)."""
    return mine if limit is None or len(mine) <= limit else random.Random(f"{seed}/{language}").sample(mine, limit)


def _sample_id(row: dict, language: object, file: Path, row_number: int) -> str:
    return str(row.get("id") or f"{language}-{file.stem}-{row_number}")


class _Ids:
    """Every sample id seen, as a fixed-width 64-bit digest with its file and row (20 bytes a row
    in flat arrays, not a dict of strings: 200k ids cost 4 MB, not 40). Duplicates are found after
    the pass by sorting the digests; the rows whose digests meet are read again to compare their
    ids as written, so a digest collision is never reported as a duplicate."""

    def __init__(self) -> None:
        self.files: list[tuple[Path, str | None]] = []
        self.digests, self.file_index, self.rows = array("Q"), array("I"), array("Q")

    def add(self, sample_id: str, file_number: int, row_number: int) -> None:
        self.digests.append(int.from_bytes(hashlib.blake2b(sample_id.encode(), digest_size=8).digest(), "little"))
        self.file_index.append(file_number)
        self.rows.append(row_number)

    def duplicates(self) -> list[Problem]:
        """A problem (file, row, "id") for every row whose id an earlier row has, in read order."""
        import numpy as np

        digests = np.frombuffer(self.digests, dtype=np.uint64) if self.digests else np.zeros(0, np.uint64)
        order = np.argsort(digests, kind="stable")
        meets = np.flatnonzero(digests[order][1:] == digests[order][:-1])
        suspects = sorted({int(i) for k in meets for i in order[k:k + 2]})  # read order: first place first
        if not suspects:
            return []
        wanted: dict[int, set[int]] = {}
        for i in suspects:
            wanted.setdefault(self.file_index[i], set()).add(self.rows[i])
        ids: dict[tuple[int, int], str] = {}
        for file_number, rows in wanted.items():
            file, file_language = self.files[file_number]
            for row_number, row in iter_rows(file):
                if row_number in rows:
                    ids[(file_number, row_number)] = _sample_id(row, row.get("language") or file_language, file,
                                                                row_number)
        first: dict[str, str] = {}
        problems = []
        for i in suspects:
            place = (self.file_index[i], self.rows[i])
            where = str(self.files[place[0]][0])
            sample_id = ids[place]
            if sample_id in first:
                problems.append(Problem(where, place[1], "id", f"duplicate id {sample_id!r} (first at {first[sample_id]})"))
            else:
                first[sample_id] = f"{where}:{place[1]}"
        return problems


def _checked(path: Path, problems: list[Problem]) -> Iterator[Sample]:
    """Every valid sample, one row in memory at a time; each invalid row's problem appended to
    ``problems`` (file, row, field), and after the last row the duplicate ids and two codes of
    one language."""
    ids = _Ids()
    written: dict[str, dict[str, str]] = {}  # normalised code -> code as written -> first place
    for file_number, (file, file_language) in enumerate(_files(path)):
        ids.files.append((file, file_language))
        for row_number, row in iter_rows(file):
            where = str(file)
            text = row.get("text")
            language = row.get("language") or file_language
            if not isinstance(text, str) or not text.strip():
                problems.append(Problem(where, row_number, "text", "missing or empty text"))
                continue
            if not language or not str(language).strip():
                problems.append(Problem(where, row_number, "language",
                                        "missing language (add a 'language' column or name the file <lang>.jsonl)"))
                continue
            if bad := language_code_problem(where, row_number, "language", str(language).strip(),
                                            "" if row.get("language") else " (from the file name)"):
                problems.append(bad)
                continue
            sample_id = _sample_id(row, language, file, row_number)
            ids.add(sample_id, file_number, row_number)
            # one code per language for every Shared Path input: iw -> he, nob_Latn -> no
            code = normalise_code(str(language))
            written.setdefault(code, {}).setdefault(str(language).strip(), f"{where}:{row_number}")
            yield Sample(sample_id=sample_id, language=code, text=text,
                         source=f"{where}:{row_number}", origin=str(row.get("source") or ""))
    problems += ids.duplicates()
    for code, spellings in written.items():
        if len(spellings) > 1:  # two codes of one language are reported, never merged
            problems.append(Problem(str(path), None, "language", f"{' and '.join(sorted(spellings))} are one language "
                                    f"({code}; first at {', '.join(spellings.values())}): keep one"))


class SampleParts:
    """Validated samples one language at a time (``--parts language``): one pass over the
    input checks every row and spills each language's samples to its own JSONL file in a temporary
    folder; ``samples(language)`` reads one back. What it gives per language, and in what order,
    is what ``load_samples`` gives: the same parts, stamps and items, without every text in memory.
    ``in_order()`` gives every sample in load_samples' order (``--parts none``, in chunks)."""

    def __init__(self, path: str | Path, langs: list[str] | None = None, limit: int | None = None,
                 seed: int = 0, by_language: bool = True):
        self.limit, self.seed = limit, seed
        # without --limit, load_samples keeps the input's order (languages interleaved as written):
        # ``by_language=False`` spills every sample to one file, read back in that order (``in_order``)
        self._one_file = not by_language and limit is None
        self._counts: dict[str, int] = {}  # language -> its samples in the input (after --langs)
        self._folder = tempfile.TemporaryDirectory(prefix="babelprobe-samples-")
        # input file -> its first sample's source (file:row, as manifest data_files reads sources)
        self.files: dict[str, str] = {}
        wanted = {normalise_code(lang) for lang in langs} if langs else None
        problems: list[Problem] = []
        handles: dict[str, IO[str]] = {}
        try:
            for sample in _checked(Path(path), problems):
                if problems or (wanted is not None and sample.language not in wanted):
                    continue  # after a problem only the checks go on: the run will not start
                spill = "" if self._one_file else sample.language
                if spill not in handles:
                    handles[spill] = self._file(spill).open("w", encoding="utf-8")
                handles[spill].write(sample.model_dump_json() + "\n")
                self._counts[sample.language] = self._counts.get(sample.language, 0) + 1
                self.files.setdefault(sample.source.rsplit(":", 1)[0], sample.source)
        finally:
            for handle in handles.values():
                handle.close()
        if problems:
            self._folder.cleanup()
            raise DatasetError(problems)
        # load_samples' order: file order of first appearance, or by language with --limit
        self.languages: list[str] = sorted(self._counts) if limit is not None else list(self._counts)
        # how many samples ``in_order`` gives (--limit keeps at most ``limit`` a language)
        self.total = sum(n if limit is None else min(n, limit) for n in self._counts.values())

    def _file(self, language: str) -> Path:
        return Path(self._folder.name) / f"{len(language)}-{language.encode().hex()}.jsonl"

    def samples(self, language: str) -> list[Sample]:
        with self._file(language).open(encoding="utf-8") as handle:
            mine = [Sample.model_validate_json(line) for line in handle]
        return _limited(mine, language, self.limit, self.seed)

    def in_order(self) -> Iterator[Sample]:
        """Every sample in ``load_samples``' order (``--parts none`` in chunks): read back one line
        at a time from the one spill file, or, with --limit, one language's kept samples at a time
        (load_samples' order there is by language)."""
        if not self._one_file:
            for language in self.languages:
                yield from self.samples(language)
            return
        if not self._counts:
            return
        with self._file("").open(encoding="utf-8") as handle:
            for line in handle:
                yield Sample.model_validate_json(line)

    def close(self) -> None:
        self._folder.cleanup()
