"""Polyglot-or-Not's public release (Hugging Face dataset ``Polyglot-or-Not/Fact-Completion``) for
``babelprobe datasets fetch polyglot-or-not``: one Parquet file per language split,
``data/<Language>-00000-of-00001-<hash>.parquet``, string columns dataset_id, stem, true, false,
relation, subject, object -> ``<iso>.parquet`` with the same columns (the layout of ``data.py``).
Every bad row is a ``Problem`` naming the release file, row and field."""

from __future__ import annotations

import re
from pathlib import Path

from babelprobe.data.releases import Converted, Downloaded, FetchError, Release, missing_columns, unknown_langs
from babelprobe.data.tables import read_rows
from babelprobe.data.validation import DatasetError, Problem
from babelprobe.data.polyglot_or_not import parse_fact

POLYGLOT_COLUMNS = ("dataset_id", "stem", "true", "false", "relation", "subject", "object")
# the release's split names (its dataset card) -> ISO 639-1 codes
POLYGLOT_LANGUAGES = {
    "Bulgarian": "bg", "Catalan": "ca", "Czech": "cs", "Danish": "da", "German": "de", "English": "en",
    "Spanish": "es", "French": "fr", "Croatian": "hr", "Hungarian": "hu", "Italian": "it", "Dutch": "nl",
    "Polish": "pl", "Portuguese": "pt", "Romanian": "ro", "Russian": "ru", "Slovenian": "sl", "Serbian": "sr",
    "Swedish": "sv", "Ukrainian": "uk",
}
# push_to_hub's shard names: <split>-<shard>-of-<shards>[-<fingerprint>].parquet
_POLYGLOT_SHARD = re.compile(r"^(?P<split>[A-Za-z]+)-(?P<shard>\d{5})-of-\d{5}(-[0-9a-f]+)?\.parquet$")


def polyglot_files(source: Path) -> dict[str, list[Path]]:
    """ISO code -> that language's shards (in shard order), found anywhere under ``source``."""
    found: dict[str, list[tuple[str, Path]]] = {}
    for path in sorted(source.rglob("*.parquet")):
        match = _POLYGLOT_SHARD.match(path.name)
        if match and match["split"] in POLYGLOT_LANGUAGES:
            found.setdefault(POLYGLOT_LANGUAGES[match["split"]], []).append((match["shard"], path))
    return {lang: [p for _, p in sorted(shards)] for lang, shards in sorted(found.items())}


def convert_polyglot_or_not(files: dict[str, list[Path]], out: Path) -> dict[str, int]:
    """Write ``<iso>.parquet`` per language; return facts per language. Every row is checked as
    the CKA loader will read it (``parse_fact``), but reported against the release file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    problems: list[Problem] = []
    tables: dict[str, list[dict[str, str]]] = {}
    for lang, shards in files.items():
        for shard in shards:
            rows = read_rows(shard)
            missing = missing_columns(str(shard), rows, POLYGLOT_COLUMNS)
            problems += missing
            if missing:
                continue
            for number, row in rows:
                _, found = parse_fact(row, lang, str(shard), number)
                problems += found
                tables.setdefault(lang, []).append(
                    {c: "" if row[c] is None else str(row[c]) for c in POLYGLOT_COLUMNS})
    if problems:
        raise DatasetError(problems)
    out.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(c, pa.string()) for c in POLYGLOT_COLUMNS])
    for lang, table in tables.items():
        pq.write_table(pa.Table.from_pylist(table, schema=schema), out / f"{lang}.parquet")
    return {lang: len(table) for lang, table in tables.items()}


# --- the release ---------------------------------------------------------------------------------

POLYGLOT_REPO = "Polyglot-or-Not/Fact-Completion"


def _download_polyglot(dest: Path) -> Downloaded:
    from huggingface_hub import HfApi, snapshot_download

    info = HfApi().dataset_info(POLYGLOT_REPO, files_metadata=True)
    published = {s.rfilename: s.lfs.sha256 for s in info.siblings or []
                 if s.lfs is not None and s.rfilename.startswith("data/")}
    snapshot_download(POLYGLOT_REPO, repo_type="dataset", revision=info.sha, local_dir=dest,
                      allow_patterns=["data/*.parquet", "README.md"])
    return Downloaded(dest, f"{POLYGLOT_REPO}@{info.sha}", published)


def _convert_polyglot(source: Path, workdir: Path, out: Path, langs: list[str] | None) -> Converted:
    files = polyglot_files(source)
    if not files:
        raise FetchError(f"no Polyglot-or-Not release files in {source}: expected data/<Language>-00000-of-00001-"
                         "<hash>.parquet, e.g. data/English-00000-of-00001-0dd1923f09abeaf8.parquet")
    unknown_langs(langs, list(files), str(source))
    if langs:
        files = {lang: files[lang] for lang in langs}
    counts = convert_polyglot_or_not(files, out)
    return Converted([p for shards in files.values() for p in shards], sum(counts.values()))


RELEASE = Release(
    name="polyglot-or-not", title="Polyglot or Not? Fact-Completion Benchmark", probe="cka",
    home=f"https://huggingface.co/datasets/{POLYGLOT_REPO}",
    files="the Parquet files data/<Language>-00000-of-00001-<hash>.parquet (20 languages) of the "
          f"Hugging Face dataset {POLYGLOT_REPO} (Files and versions -> data/)",
    licence="Apache-2.0",
    citation="Tim Schott, Daniel Furman, Shreshta Bhat. Polyglot or Not? Measuring Multilingual Encyclopedic "
             "Knowledge in Foundation Models. EMNLP 2023. arXiv:2305.13675",
    data="", download=_download_polyglot, convert=_convert_polyglot,
)
