"""Inputs of ``babelprobe graph``: a language-similarity matrix and per-language signals.

File contract:
- SIM.csv: a square matrix, first column ``language``, then one column per language.
- MEM.csv: ``language`` plus one numeric column per memorization metric.
- TOKENS.csv: ``language,tokens`` (the data-volume signal).
A run directory can stand in for a file: a ``similarity`` run (its ``similarity.csv``, or
``similarity_layer{N}.csv`` for another layer) or a ``memorization`` run (its ``memorization.csv``,
or ``memorization_p{N}.csv`` for prompt length N).
Every problem is a ``DatasetError`` naming file, row and field.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it runs: `similarity` and `graph --help` build this family's commands
    import numpy as np

from babelprobe.data.validation import DatasetError, Problem
from babelprobe.languages import normalise_code, normalise_codes

SIMILARITY_CSV = "similarity.csv"
MEMORIZATION_CSV = "memorization.csv"
SYMMETRY_TOLERANCE = 1e-6
# A similarity (cosine, CKA) lies in [-1, 1]; full-precision files may hold 1.0000000000000002 on
# the diagonal (floating-point rounding), a value beyond this is a different quantity (a distance,
# a percentage) given by mistake.
RANGE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SimilarityMatrix:
    languages: tuple[str, ...]
    values: np.ndarray  # L × L, symmetric
    written: dict[str, str] = field(default_factory=dict)  # language -> the code as the file writes it

    def restricted(self, languages: list[str]) -> "SimilarityMatrix":
        import numpy as np

        index = [self.languages.index(lang) for lang in languages]
        return SimilarityMatrix(tuple(languages), self.values[np.ix_(index, index)])


@dataclass(frozen=True)
class LanguageSignals:
    """Per-language values of one or more named signals: ``values[signal][language]``."""

    source: str
    values: dict[str, dict[str, float]]
    written: dict[str, str] = field(default_factory=dict)  # language -> the code as the file writes it


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    if not path.is_file():
        raise DatasetError([Problem(str(path), None, None, "file not found")])
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise DatasetError([Problem(str(path), None, None, "the file is empty")])
        rows = [(number, row) for number, row in enumerate(reader, start=1) if any(cell.strip() for cell in row)]
    return [h.strip() for h in header], rows


def _number(cell: str, path: Path, row: int, field: str, problems: list[Problem]) -> float:
    try:
        value = float(cell)
    except ValueError:
        problems.append(Problem(str(path), row, field, f"not a number: {cell!r}"))
        return math.nan
    if not math.isfinite(value):
        problems.append(Problem(str(path), row, field, f"not a finite number: {cell!r}"))
    return value


@dataclass(frozen=True)
class _Table:
    columns: list[str]  # the value columns, in file order
    values: dict[str, dict[str, float]]  # column -> language -> value
    row_of: dict[str, int]  # language -> 1-based data row
    written: dict[str, str]  # language -> the code as the file writes it (iw where the language is he)


def _table(path: Path, required: tuple[str, ...]) -> _Table:
    """A ``language`` + numeric columns table."""
    header, rows = _read_csv(path)
    problems: list[Problem] = []
    if not header or header[0] != "language":
        raise DatasetError([Problem(str(path), None, header[0] if header else None,
                                    "the first column must be 'language'")])
    columns = header[1:]
    for name in required:
        if name not in columns:
            problems.append(Problem(str(path), None, name, "missing column"))
    seen_columns: set[str] = set()
    for name in columns:
        if not name:
            problems.append(Problem(str(path), None, None, "a column has no name"))
        elif name in seen_columns:
            problems.append(Problem(str(path), None, name, "duplicate column"))
        seen_columns.add(name)
    if not columns:
        problems.append(Problem(str(path), None, None, "no value columns after 'language'"))
    if problems:
        raise DatasetError(problems)
    values: dict[str, dict[str, float]] = {c: {} for c in columns}
    seen: dict[str, int] = {}
    written: dict[str, str] = {}  # normalised code -> the code as this file writes it
    for number, row in rows:
        raw = row[0].strip() if row else ""
        if not raw:
            problems.append(Problem(str(path), number, "language", "empty language"))
            continue
        language = normalise_code(raw)  # one code per language for every Shared Path input: iw = he
        if language in seen:
            same = "" if written[language] == raw else f": {raw!r} and {written[language]!r} are one language"
            problems.append(Problem(str(path), number, "language",
                                    f"duplicate language {language!r} (first on row {seen[language]}){same}"))
            continue
        written[language] = raw
        seen[language] = number
        if len(row) != len(header):
            problems.append(Problem(str(path), number, None, f"{len(row)} cells, the header has {len(header)}"))
            continue
        for name, cell in zip(columns, row[1:]):
            values[name][language] = _number(cell.strip(), path, number, name, problems)
    if not seen:
        problems.append(Problem(str(path), None, None, "no data rows"))
    if problems:
        raise DatasetError(problems)
    return _Table(columns, values, seen, written)


def read_similarity_csv(path: Path) -> SimilarityMatrix:
    """SIM.csv: square (same languages as rows and columns), numeric, symmetric."""
    table = _table(path, ())
    mapping, clashes = normalise_codes(table.columns)  # the columns name languages too
    if clashes:
        raise DatasetError([Problem(str(path), None, ", ".join(codes), f"columns {' and '.join(codes)} are one "
                                    f"language ({lang})") for lang, codes in clashes.items()])
    columns = [mapping[c] for c in table.columns]
    values = {mapping[c]: v for c, v in table.values.items()}
    row_of = table.row_of
    problems: list[Problem] = []
    row_languages = list(row_of)
    for lang in columns:
        if lang not in row_of:
            problems.append(Problem(str(path), None, lang, f"column {lang!r} has no row: the matrix must be square"))
    for lang in row_languages:
        if lang not in values:
            problems.append(Problem(str(path), row_of[lang], "language",
                                    f"row {lang!r} has no column: the matrix must be square"))
    if problems:
        raise DatasetError(problems)
    for a in columns:
        for b in columns:
            value = values[b][a]
            if not -1.0 - RANGE_TOLERANCE <= value <= 1.0 + RANGE_TOLERANCE:
                problems.append(Problem(str(path), row_of[a], b, f"similarity {value:g} is outside [-1, 1]"))
    if problems:
        raise DatasetError(problems)
    import numpy as np

    matrix = np.array([[values[b][a] for b in columns] for a in columns], dtype=np.float64)
    for i, a in enumerate(columns):
        for j in range(i + 1, len(columns)):
            if abs(matrix[i, j] - matrix[j, i]) > SYMMETRY_TOLERANCE:
                b = columns[j]
                problems.append(Problem(str(path), row_of[a], b, f"sim({a},{b}) = {matrix[i, j]:g} but "
                                        f"sim({b},{a}) = {matrix[j, i]:g}: the matrix must be symmetric"))
    if len(columns) < 2:
        problems.append(Problem(str(path), None, None, "at least 2 languages are needed"))
    if problems:
        raise DatasetError(problems)
    return SimilarityMatrix(tuple(columns), matrix, table.written)


def read_similarity(path: Path, layer: int | None = None) -> SimilarityMatrix:
    """SIM.csv, or a ``similarity`` run directory (its final-layer matrix unless ``layer``)."""
    if path.is_dir():
        name = SIMILARITY_CSV if layer is None else f"similarity_layer{layer}.csv"
        if not (path / name).is_file():
            raise DatasetError([Problem(str(path), None, None, f"no {name} here (not a similarity run directory?)")])
        return read_similarity_csv(path / name)
    if layer is not None:
        raise ValueError("--layer applies to a similarity run directory, not to a CSV file")
    return read_similarity_csv(path)


def read_memorization(path: Path, metrics: list[str] | None = None, prefix_tokens: int | None = None) -> LanguageSignals:
    """MEM.csv (``language`` + one column per metric) or a memorization run directory."""
    if path.is_dir():
        signals = read_memorization_run(path, prefix_tokens)
    elif prefix_tokens is not None:
        raise ValueError("--prefix-tokens applies to a memorization run directory, not to a CSV file")
    else:
        table = _table(path, ())
        signals = LanguageSignals(str(path), table.values, table.written)
    if metrics:
        missing = [m for m in metrics if m not in signals.values]
        if missing:
            raise DatasetError([Problem(signals.source, None, m, f"no such metric (have: {', '.join(signals.values)})")
                                for m in missing])
        signals = LanguageSignals(signals.source, {m: signals.values[m] for m in metrics}, signals.written)
    return signals


def read_tokens(path: Path, scale: str) -> dict[str, float]:
    """TOKENS.csv ``language,tokens``; a count is never negative, and with the log scale every
    count must be > 0."""
    table = _table(path, ("tokens",))
    tokens = table.values["tokens"]
    negative = [Problem(str(path), table.row_of[lang], "tokens", f"{value:g} tokens: a count cannot be negative")
                for lang, value in tokens.items() if value < 0]
    if negative:
        raise DatasetError(negative)
    if scale == "log":
        bad = [Problem(str(path), table.row_of[lang], "tokens",
                       f"{value:g} tokens: --tokens-scale log needs counts > 0 (or use --tokens-scale raw)")
               for lang, value in tokens.items() if value <= 0]
        if bad:
            raise DatasetError(bad)
    return tokens


def read_memorization_run(run_dir: Path, prefix_tokens: int | None = None) -> LanguageSignals:
    """A memorization run's per-language table: ``memorization.csv`` (its longest prompt length)
    or ``memorization_p{N}.csv`` (prompt length N), both in the MEM.csv layout (written by
    ``babelprobe run memorization``: means over scored samples, EM as a rate)."""
    name = MEMORIZATION_CSV if prefix_tokens is None else f"memorization_p{prefix_tokens}.csv"
    path = run_dir / name
    if not path.is_file():
        have = sorted(p.name for p in run_dir.glob("memorization*.csv"))
        raise DatasetError([Problem(str(run_dir), None, None, f"no {name} here (not a memorization run directory?"
                                    f"{' have: ' + ', '.join(have) if have else ''})")])
    table = _table(path, ())
    return LanguageSignals(str(path), table.values, table.written)


# Config fields that cannot change a memorization number (where results go, how fast, which
# languages this part holds; prompt lengths: a length's window does not depend on the others, and
# the merge keeps the lengths all runs share); every other field, and the model's weights, must
# agree to merge.
MERGE_NEUTRAL_FIELDS = frozenset({"out", "data", "langs", "batch_size", "cache", "allow_errors", "overwrite",
                                  "concurrency", "request_timeout", "api_key_env", "base_url", "parts", "device",
                                  "model_args", "prefix_tokens"})


def run_setup(run_dir: Path) -> dict[str, str]:
    """What a memorization run's numbers depend on, from its manifest: the model (spec, weights
    = hub commit or file hash, backend, dtype, quantization) and every config field outside
    ``MERGE_NEUTRAL_FIELDS`` (preset, prompt lengths, offset, repetition penalty, ...)."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise DatasetError([Problem(str(run_dir), None, None, "no manifest.json (not a finished run directory?)")])
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        model, config = manifest["model"], manifest["config"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DatasetError([Problem(str(path), None, None, f"not a run manifest ({type(exc).__name__}: {exc})")])
    setup = {f"model.{key}": json.dumps(model.get(key), sort_keys=True)
             for key in ("spec", "weights", "support_files", "backend", "backend_revision", "dtype", "quantization")}
    setup.update({key: json.dumps(value, sort_keys=True) for key, value in sorted(config.items())
                  if key not in MERGE_NEUTRAL_FIELDS})
    return setup


def setup_differences(run_dirs: list[Path]) -> dict[str, dict[str, str]]:
    """field -> {run directory: value} for every field on which the runs disagree."""
    setups = {str(d): run_setup(d) for d in run_dirs}
    fields = sorted(set().union(*setups.values()))
    return {field: {d: s.get(field, "(absent)") for d, s in setups.items()} for field in fields
            if len({s.get(field, "(absent)") for s in setups.values()}) > 1}


def merge_memorization_runs(run_dirs: list[Path], out: Path, force: bool = False) -> dict[str, list[str]]:
    """Per-language memorization runs (``run memorization --langs X``, one per language or group)
    as one run directory for ``graph``: every ``memorization_p{N}.csv`` all runs share, rows
    concatenated, and ``memorization.csv`` (the longest shared N). Runs must agree on the model
    (spec and weights) and every option that changes numbers (``run_setup``); otherwise the merge
    is refused with the fields that differ, or with ``force`` done and the mix recorded in
    ``merge.json`` (``mixed``). A language in two runs, or runs whose metric columns differ, is an
    error naming both files; a prompt length only some runs have is left out and returned under
    "left_out". Writes ``merge.json`` (the sources)."""
    if not run_dirs:
        raise ValueError("graph merge needs at least one memorization run directory")
    lengths: list[set[int]] = []
    for run_dir in run_dirs:
        found = {int(m.group(1)) for p in Path(run_dir).glob("memorization_p*.csv")
                 if (m := re.fullmatch(r"memorization_p(\d+)\.csv", p.name))}
        if not found:
            raise DatasetError([Problem(str(run_dir), None, None, "no memorization_p{N}.csv here "
                                        "(not a memorization run directory?)")])
        lengths.append(found)
    shared = sorted(set.intersection(*lengths))
    if not shared:
        raise DatasetError([Problem(str(run_dirs[0]), None, None, "the runs share no prompt length")])
    tables: dict[int, tuple[list[str], dict[str, tuple[str, list[str]]]]] = {}
    for n in shared:
        rows: dict[str, tuple[str, list[str]]] = {}  # language -> (file, cells)
        header: list[str] | None = None
        first: Path | None = None
        problems: list[Problem] = []
        for run_dir in run_dirs:
            path = Path(run_dir) / f"memorization_p{n}.csv"
            columns, data = _read_csv(path)
            if header is None:
                header, first = columns, path
            elif columns != header:
                problems.append(Problem(str(path), None, None, f"columns {columns} differ from {first}'s {header}"))
                continue
            for number, cells in data:
                language = normalise_code(cells[0])  # iw in one run, he in another: one language
                cells = [language, *cells[1:]]
                if language in rows:
                    problems.append(Problem(str(path), number, "language",
                                            f"{language!r} is also in {rows[language][0]}"))
                rows[language] = (str(path), cells)
        if problems:
            raise DatasetError(problems)
        tables[n] = (header or [], rows)
    differences = setup_differences(run_dirs)  # the tables fit together; are they one experiment?
    if differences and not force:
        raise DatasetError([Problem(str(run_dirs[0]), None, field, "differs across the runs: " + "; ".join(
            f"{value} in {run}" for run, value in values.items())) for field, values in differences.items()]
            + [Problem(str(out), None, None, "runs of different models or settings are not one experiment: "
                       "rerun them alike, or pass --force to merge anyway (recorded in merge.json)")])
    out.mkdir(parents=True, exist_ok=True)
    for n, (header, rows) in tables.items():
        with (out / f"memorization_p{n}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(cells for _, (_, cells) in sorted(rows.items()))
    (out / MEMORIZATION_CSV).write_text((out / f"memorization_p{max(shared)}.csv").read_text(encoding="utf-8"),
                                        encoding="utf-8")
    left_out = sorted(set.union(*lengths) - set(shared))
    report = {"sources": [str(d) for d in run_dirs], "prefix_tokens": shared, "left_out_prefix_tokens": left_out,
              "mixed": differences}  # forced: field -> {run: value} where the runs disagree
    (out / "merge.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return {"prefix_tokens": [str(n) for n in shared], "left_out": [str(n) for n in left_out],
            "mixed": sorted(differences)}


def tokens_codes(path: Path) -> dict[str, str]:
    """language -> the code as TOKENS.csv writes it."""
    return _table(path, ("tokens",)).written


def joined_codes(inputs: dict[str, dict[str, str]]) -> list[str]:
    """One line per language that the inputs write with different codes (iw in the memorization
    run, he in the similarity matrix): they are joined as one language, and the user is told."""
    languages = sorted(set().union(*(codes.keys() for codes in inputs.values())))
    lines = []
    for language in languages:
        spellings = {name: codes[language] for name, codes in inputs.items() if language in codes}
        if len(set(spellings.values())) > 1:
            lines.append(f"{language}: " + ", ".join(f"{code} in {name}" for name, code in spellings.items())
                         + f" (joined as {language})")
    return lines


STANDIN_TOKENS_CSV = "STAND-IN_speaker_population_as_tokens.csv"
STANDIN_LABEL = "tokens (STAND-IN: speaker population, not training data)"


def tokens_label(path: Path) -> str:
    """What the tokens column is, for figure axes, titles and tables: "tokens", or for the demo's
    speaker-population file (its name starts with STAND-IN) a label that says it is a stand-in."""
    return STANDIN_LABEL if Path(path).name.startswith("STAND-IN") else "tokens"


def write_speaker_population_standin(languages: list[str], path: Path) -> dict[str, float]:
    """A STAND-IN for data volume when the real training-token counts are unknown: each
    language's speaking population from the ``language_data`` package (via langcodes), in the
    TOKENS.csv layout. It is not training data; the demo labels it as such. Languages without
    a population are left out."""
    import langcodes

    population = {}
    for lang in languages:
        try:
            count = langcodes.Language.get(lang).speaking_population()
        except (LookupError, ValueError):
            continue
        if count and count > 0:
            population[lang] = float(count)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["language", "tokens"])
        writer.writerows(population.items())
    return population
