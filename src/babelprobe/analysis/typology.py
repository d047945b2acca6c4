"""Typological similarity between languages, to check a model's similarity against (Shared Path
App. B.4, Figs. 5-8: per-layer correlation with Lang2Vec syntax and phonology).

Sources, both offline (their data ships in the wheel):
- ``lang2vec`` (default; the paper's): URIEL feature vectors — ``syntax_knn`` and
  ``phonology_knn`` (kNN-imputed, so every language has a vector) and ``fam`` (genetic: Glottolog
  family membership). Similarity = cosine of the two vectors. lang2vec imports ``pkg_resources``,
  hence ``setuptools<81``.
- ``urielplus`` (optional extra): URIEL+ ``new_distance`` (angular distance over the features
  both languages have); similarity = 1 − distance; pairs without shared features are missing.
  Its import calls ``logging.basicConfig`` and its first use copies its databases inside its
  own package directory.
Languages are ISO 639-1 or 639-3 codes; they are mapped to ISO 639-3 with ``langcodes``.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import warnings
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Literal, Sequence

import numpy as np

from babelprobe.analysis.statistics import Statistic, pearson

TypologySource = Literal["lang2vec", "urielplus", "none"]
FEATURE_SETS = ("syntax", "phonology", "genetic")
_LANG2VEC_SETS = {"syntax": "syntax_knn", "phonology": "phonology_knn", "genetic": "fam"}
_URIELPLUS_SETS = {"syntax": "syntactic", "phonology": "phonological", "genetic": "genetic"}


@dataclass(frozen=True)
class TypologicalSimilarity:
    features: str
    languages: tuple[str, ...]
    values: np.ndarray  # L × L, NaN where unknown
    unknown_languages: tuple[str, ...]


def iso639_3(code: str) -> str:
    import langcodes

    try:
        return langcodes.Language.get(code).to_alpha3()
    except (LookupError, ValueError):
        return code


def _cosine(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = np.divide(vectors, norms, out=np.full_like(vectors, np.nan), where=norms > 0)
    return unit @ unit.T


def import_lang2vec() -> ModuleType:
    """``lang2vec.lang2vec``, imported past the ``bin/lang2vec.py`` script that lang2vec's wheel also
    installs: run from a console script (``babelprobe ...``), ``sys.path[0]`` is that ``bin`` folder
    and the script shadows the package, which then reads its data from ``bin/data``."""
    if "lang2vec.lang2vec" in sys.modules:
        return sys.modules["lang2vec.lang2vec"]
    if not hasattr(sys.modules.get("lang2vec"), "__path__"):
        sys.modules.pop("lang2vec", None)  # the script, imported as a module earlier
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if not os.path.isfile(os.path.join(p or ".", "lang2vec.py"))]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pkg_resources deprecation, inside lang2vec
            import lang2vec.lang2vec as l2v
    finally:
        sys.path[:] = saved
    return l2v


@lru_cache(maxsize=8)
def _lang2vec_table(filename: str) -> dict[str, np.ndarray]:
    """One of lang2vec's ``.npz`` tables read into memory once per process. lang2vec's own
    ``get_named_set`` indexes the lazily loaded archive, which decompresses the ``feats`` array again
    for every feature name (3,700 times for ``fam``: most of a report's seconds, docs/profiles)."""
    l2v = import_lang2vec()
    path = l2v.pkg_resources.resource_filename(l2v.__name__, os.path.join("data", filename))
    with np.load(path) as archive:
        return {key: archive[key] for key in archive.files}


@lru_cache(maxsize=16)
def lang2vec_features(codes: tuple[str, ...], feature_set: str) -> dict[str, list]:
    """``lang2vec.get_features(codes, feature_set, header=True)`` for codes it knows, kept for the
    process. One named set (``syntax_knn``, ``fam`` ...): lang2vec's own steps (``get_named_set``
    then ``get_features``' formatting, its helper functions) on the table read once
    (``_lang2vec_table``); anything else, or a code lang2vec knows only as a "learned" vector, goes
    through ``get_features`` itself (tests/test_typology_speed.py pins the two equal)."""
    l2v = import_lang2vec()
    known = l2v.LANGUAGES  # available_languages(), computed once at lang2vec's import
    present = [c for c in codes if c in known]
    if not present:
        return {}
    if feature_set not in l2v.FEATURE_SETS_DICT or feature_set in ("id", "learned"):
        return l2v.get_features(present, feature_set, header=True)
    filename, source, prefix = l2v.FEATURE_SETS_DICT[feature_set]
    table = _lang2vec_table(filename)
    lang_codes = [l2v.get_language_code(c, table) for c in present]
    if "not_found" in lang_codes:
        return l2v.get_features(present, feature_set, header=True)
    lang_indices = [l2v.get_language_index(c, table) for c in lang_codes]
    names = l2v.get_feature_names(prefix, table)
    position: dict[str, int] = {}  # get_feature_index's np.where(feats == name)[0][0]: a name's first position
    for i, name in enumerate(table["feats"]):
        position.setdefault(name, i)
    feature_indices = [position[name] for name in names]
    source_index = l2v.get_source_index(source, table)
    values = table["data"][lang_indices, :, :][:, feature_indices, :][:, :, source_index].squeeze(axis=2)
    feature_names = np.array([f.replace(" ", "_") for f in names])
    output: dict[str, list] = {"CODE": list(feature_names)}
    for i, code in enumerate(present):
        output[code] = ["--" if f == -1 else f for f in values[i].ravel()]
    return output


def _lang2vec(languages: Sequence[str]) -> list[TypologicalSimilarity]:
    codes = {lang: iso639_3(lang) for lang in languages}
    out = []
    for name in FEATURE_SETS:
        features = lang2vec_features(tuple(codes[lang] for lang in languages), _LANG2VEC_SETS[name])
        present = [lang for lang in languages if codes[lang] in features]
        values = np.full((len(languages), len(languages)), np.nan)
        if present:
            vectors = np.array([[np.nan if v == "--" else float(v) for v in features[codes[lang]]] for lang in present])
            index = [languages.index(lang) for lang in present]
            values[np.ix_(index, index)] = _cosine(np.nan_to_num(vectors, nan=0.0))
        out.append(TypologicalSimilarity(name, tuple(languages), values,
                                         tuple(lang for lang in languages if lang not in present)))
    return out


def _urielplus(languages: Sequence[str]) -> list[TypologicalSimilarity]:
    level = logging.getLogger().level
    from urielplus import urielplus  # calls logging.basicConfig(level=INFO)

    logging.getLogger().setLevel(level)
    logging.getLogger("urielplus").setLevel(logging.WARNING)
    uriel = urielplus.URIELPlus()
    codes = {lang: iso639_3(lang) for lang in languages}
    present = [lang for lang in languages if codes[lang] in set(uriel.langs[0])]
    out = []
    for name in FEATURE_SETS:
        values = np.full((len(languages), len(languages)), np.nan)
        if len(present) >= 2:
            distance = np.asarray(uriel.new_distance(_URIELPLUS_SETS[name], [codes[lang] for lang in present]), dtype=float)
            similarity = np.where(distance < 0, np.nan, 1.0 - distance)  # -1 marks "no shared features"
            index = [languages.index(lang) for lang in present]
            values[np.ix_(index, index)] = similarity
        out.append(TypologicalSimilarity(name, tuple(languages), values,
                                         tuple(lang for lang in languages if lang not in present)))
    return out


def typological_similarities(languages: Sequence[str], source: TypologySource) -> list[TypologicalSimilarity]:
    languages = list(languages)
    if source == "none":
        return []
    if source == "lang2vec":
        return _lang2vec(languages)
    if source == "urielplus":
        return _urielplus(languages)
    raise ValueError(f"unknown typology source {source!r}: lang2vec, urielplus or none")


def pair_correlation(model: np.ndarray, typology: TypologicalSimilarity) -> tuple[Statistic, int]:
    """Pearson r between the model's and the typological similarity over language pairs i < j
    where both are known; and the number of pairs."""
    n = model.shape[0]
    pairs = [(model[i, j], typology.values[i, j]) for i in range(n) for j in range(i + 1, n)
             if math.isfinite(typology.values[i, j])]
    statistic = pearson([p[0] for p in pairs], [p[1] for p in pairs], "model similarity",
                        f"{typology.features} similarity")
    return statistic, len(pairs)


# ------------------------------------------------------------------ ASJP lexical similarity (Figs. 7-8)

ASJP_COLUMNS = ("language", "doculect", "concept", "form")


def ldn(a: str | Sequence[str], b: str | Sequence[str]) -> float:
    """Levenshtein distance normalised by the longer word (LDN; Wichmann et al. 2010); words as
    strings or as sequences of units (``asjp_segments``)."""
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.normalized_distance(a, b)  # LD(a, b) / max(|a|, |b|); 0 for two empty strings


def ldnd(words_a: dict[str, list[str]], words_b: dict[str, list[str]]) -> float | None:
    """LDND of two word lists (concept -> forms), the ASJP distance of Wichmann, Holman, Bakker and
    Brown (2010), "Evaluating linguistic distance measures", Physica A 389: 3632-3639 (after
    Bakker et al. 2009): the mean LDN of same-concept pairs divided by the mean LDN of
    different-concept pairs, which corrects for chance similarity from shared phoneme inventories
    and word lengths. A concept with several forms (synonyms) counts once, with the smallest LDN
    over its form pairs (our reading; documented in the README). None when the lists share no
    concept or fewer than two concepts each."""
    shared = [c for c in words_a if c in words_b]
    if not shared or len(words_a) < 2 or len(words_b) < 2:
        return None

    def concept_ldn(forms_a: list[str], forms_b: list[str]) -> float:
        return min(ldn(x, y) for x in forms_a for y in forms_b)

    same = float(np.mean([concept_ldn(words_a[c], words_b[c]) for c in shared]))
    different = [concept_ldn(words_a[c], words_b[d]) for c in words_a for d in words_b if c != d]
    mean_different = float(np.mean(different))
    return same / mean_different if mean_different > 0 else None


# The ASJP 40-item list (Holman et al. 2008, "Explorations in automated language classification",
# Folia Linguistica 42: 331-354), as the ASJP software reads it (Swadesh-100 items 1 2 3 11 12 18
# 19 21 22 23 25 28 30 31 34 39 40 41 43 44 47 48 51 53 54 57 58 61 66 72 74 75 77 82 85 86 92 95
# 96 100), named as in the ASJP CLDF release's parameters.csv.
ASJP_40 = ("I", "you", "we", "one", "two", "person", "fish", "dog", "louse", "tree", "leaf", "skin", "blood", "bone",
           "horn", "ear", "eye", "nose", "tooth", "tongue", "knee", "hand", "breast", "liver", "drink", "see", "hear",
           "die", "come", "sun", "star", "water", "stone", "fire", "path", "mountain", "night", "full", "new", "name")
ASJP_MIN_ITEMS = 28  # lists with fewer attested items of the 40 are not compared (the ASJP software's default)
ASJP_MAX_SYNONYMS = 2  # synonyms read per item (the database's first line, col. 6)
# ASJPcode's 41 sound symbols (Brown et al. 2008, STUF 61: 285-308), as the symbol list in the ASJP
# database's listss files gives them to the program; it skips any other character of a word.
ASJPCODE_SYMBOLS = frozenset("pbfvmw8tdszcnrlSZCjT5ykgxNqXh7L4G!ieE3auo")
ASJP_LOAN_MARK = "%"
LDND_METHODS = ("babelprobe", "asjp-software", "asjp-software-no-loans")
AsjpLoans = Literal["kept", "excluded"]


def asjp_segments(form: str) -> tuple[str, ...]:
    """An ASJPcode word as the units Levenshtein distance counts (Brown et al. 2008, STUF 61:
    285-308, appendix; the ASJP software's reading, ``asjp62.f``): a symbol followed by ``"``
    (glottalized) or ``*`` (nasalized) is one unit with it; ``~`` makes the two units before it one,
    ``$`` the three before it; any character that is not an ASJPcode symbol (``%``, the loanword
    mark; spaces; a stray ``/`` or ``-``) is skipped, as the program skips it."""
    units: list[str] = []
    for ch in form:
        if ch in "\"*" and units:
            units[-1] += ch
        elif ch == "~" and len(units) >= 2:
            units[-2:] = [units[-2] + units[-1]]
        elif ch == "$" and len(units) >= 3:
            units[-3:] = ["".join(units[-3:])]
        elif ch in ASJPCODE_SYMBOLS:
            units.append(ch)
    return tuple(units)


def _asjp_item_forms(forms: Sequence[str], loans: AsjpLoans) -> list[tuple[str, ...]]:
    """An item's words as the ASJP program reads them: the first ``ASJP_MAX_SYNONYMS`` synonyms,
    then (``loans="excluded"``, its loanword switch) those marked ``%`` dropped (``asjp62.f``,
    subroutine LOANS: it cuts the list at the second comma before looking for ``%``)."""
    first = [f for f in forms if f.strip()][:ASJP_MAX_SYNONYMS]
    if loans == "excluded":
        first = [f for f in first if ASJP_LOAN_MARK not in f]
    return [units for units in map(asjp_segments, first) if units]


def ldnd_asjp(words_a: dict[str, list[str]], words_b: dict[str, list[str]],
              min_items: int = ASJP_MIN_ITEMS, loans: AsjpLoans = "kept") -> float | None:
    """LDND as the ASJP software computes it (the ASJP project's program ``asjp62.f``,
    ASJPSoftware003, asjp.clld.org/software; its R version: S. Wichmann, InteractiveASJP02,
    ``ASJP_LDND.R``), where :func:`ldnd` follows the published definition: only the 40 items of
    ``ASJP_40``; a list attesting fewer than ``min_items`` of them is not compared (None); at most
    the first two synonyms of an item (in the release's order), loanwords (marked ``%``) dropped
    from them when ``loans="excluded"`` (the program's loanword switch); an item's LDN is the *mean*
    over its synonym pairs (not the minimum); words cut into ASJPcode units (:func:`asjp_segments`);
    LDND = mean LDN of the shared items / mean LDN of every pair of different items the two lists
    attest (``100 * PMJ * QNJ / (PNJ * QMJ)`` in ``asjp62.f``, printed in percent). Tested against
    the program's published output (tests/data/asjp/)."""
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cdist

    items = {concept.casefold() for concept in ASJP_40}

    def reduce(words: dict[str, list[str]]) -> dict[str, list[tuple[str, ...]]]:
        out = {}
        for concept, forms in words.items():
            kept = _asjp_item_forms(forms, loans) if concept.casefold() in items else []
            if kept:
                out[concept.casefold()] = kept
        return out

    a, b = reduce(words_a), reduce(words_b)
    if len(a) < min_items or len(b) < min_items:
        return None
    if not any(c in b for c in a):
        return None
    # every word pair at once: each unit becomes one character, so rapidfuzz compares plain strings
    code: dict[str, str] = {}

    def encode(units: tuple[str, ...]) -> str:
        return "".join(code.setdefault(u, chr(0xE000 + len(code))) for u in units)

    flat_a = [encode(w) for forms in a.values() for w in forms]
    flat_b = [encode(w) for forms in b.values() for w in forms]
    distance = cdist(flat_a, flat_b, scorer=Levenshtein.normalized_distance, dtype=np.float64, workers=1)
    count_a = np.array([len(forms) for forms in a.values()])
    count_b = np.array([len(forms) for forms in b.values()])
    sums = np.add.reduceat(np.add.reduceat(distance, np.cumsum(count_a) - count_a, axis=0),
                           np.cumsum(count_b) - count_b, axis=1)
    item = sums / np.outer(count_a, count_b)  # an item pair's LDN: the mean over its synonym pairs
    same_pair = np.array([[c == d for d in b] for c in a])
    if same_pair.all():
        return None
    same = float(item[same_pair].mean())
    different = float(item[~same_pair].mean())
    return same / different if different > 0 else None


def convert_asjp_cldf(source: "os.PathLike[str] | str", out: "os.PathLike[str] | str") -> dict[str, int]:
    """The ASJP database's CLDF release (``cldf/forms.csv``, ``languages.csv``, ``parameters.csv``;
    https://github.com/lexibank/asjp) -> one Parquet table ``language, doculect, concept, form``,
    once: ``language`` is the doculect's ISO 639-3 code normalised (``languages.normalise_code``),
    one doculect per language (the one with the most concepts; ties: the first ID), ``concept`` the
    parameter's name, ``loan`` the release's ``Loan`` flag (loanwords are left out of the default
    LDND, kept by ``--ldnd asjp-software`` and dropped from an item's first two synonyms by
    ``--ldnd asjp-software-no-loans``, the ASJP program's two loanword settings). Returns forms
    per language."""
    from pathlib import Path

    import pandas as pd

    from babelprobe.data.validation import DatasetError, Problem
    from babelprobe.languages import normalise_code

    root = Path(source)
    folder = root / "cldf" if (root / "cldf" / "forms.csv").is_file() else root
    needed = {"forms.csv": ("Language_ID", "Parameter_ID", "Form"), "languages.csv": ("ID", "ISO639P3code"),
              "parameters.csv": ("ID", "Name")}
    tables, problems = {}, []
    for name, columns in needed.items():
        path = folder / name
        if not path.is_file():
            problems.append(Problem(str(path), None, None, "missing (expected the ASJP CLDF release: cldf/" + name + ")"))
            continue
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
        problems += [Problem(str(path), None, c, "missing column") for c in columns if c not in frame.columns]
        tables[name] = frame
    if problems:
        raise DatasetError(problems)
    forms, languages, parameters = tables["forms.csv"], tables["languages.csv"], tables["parameters.csv"]
    iso = {row.ID: row.ISO639P3code.strip() for row in languages.itertuples() if row.ISO639P3code.strip()}
    concept = dict(zip(parameters["ID"], parameters["Name"]))
    forms = forms[forms["Language_ID"].isin(iso) & (forms["Form"].str.strip() != "")]
    loan = (forms["Loan"].str.lower().isin(("true", "1", "yes")) if "Loan" in forms.columns
            else pd.Series(False, index=forms.index))
    unknown = sorted(set(forms["Parameter_ID"]) - set(concept))
    if unknown:
        raise DatasetError([Problem(str(folder / "forms.csv"), None, "Parameter_ID",
                                    f"{len(unknown)} parameter(s) not in parameters.csv, e.g. {unknown[0]!r}")])
    table = pd.DataFrame({"language": [normalise_code(iso[d]) for d in forms["Language_ID"]],
                          "doculect": forms["Language_ID"].to_numpy(),
                          "concept": [concept[p] for p in forms["Parameter_ID"]],
                          "form": forms["Form"].str.strip().to_numpy(), "loan": loan.to_numpy(dtype=bool)})
    coverage = table.groupby(["language", "doculect"])["concept"].nunique().reset_index()
    coverage = coverage.sort_values(["language", "concept", "doculect"], ascending=[True, False, True])
    keep = set(coverage.drop_duplicates("language")["doculect"])
    # synonyms stay in the release's order: the ASJP software reads an item's first two
    table = table[table["doculect"].isin(keep)]
    table = table.sort_values(["language", "concept"], kind="stable").reset_index(drop=True)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(out, index=False)
    return table[~table["loan"]].groupby("language").size().to_dict()


def asjp_similarity(languages: Sequence[str], table: "os.PathLike[str] | str",
                    method: str = "babelprobe") -> TypologicalSimilarity:
    """1 − LDND between the languages' ASJP word lists (a converted table, ``convert_asjp_cldf``);
    NaN where a language has no list or a pair shares no concept. ``method``: ``babelprobe``
    (:func:`ldnd`, the published definition), ``asjp-software`` (:func:`ldnd_asjp`, loanwords
    kept) or ``asjp-software-no-loans`` (:func:`ldnd_asjp`, its loanword switch on)."""
    if method not in LDND_METHODS:
        raise ValueError(f"LDND method {method!r}: use {', '.join(LDND_METHODS)}")
    import pandas as pd

    from babelprobe.languages import normalise_code

    frame = pd.read_parquet(table)
    missing = [c for c in ASJP_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{table}: not a converted ASJP table (missing {', '.join(missing)}; convert the CLDF "
                         "release with `babelprobe graph asjp`)")
    if method == "babelprobe" and "loan" in frame.columns:  # a table converted before `loan`: loans already out
        frame = frame[~frame["loan"].astype(bool)]
    if method != "babelprobe" and "loan" in frame.columns:  # the release's Loan flag as ASJPcode's mark
        marked = frame["loan"].astype(bool) & ~frame["form"].str.contains(ASJP_LOAN_MARK, regex=False)
        frame = frame.assign(form=frame["form"].where(~marked, ASJP_LOAN_MARK + frame["form"]))
    lists: dict[str, dict[str, list[str]]] = {}
    for language, concept, form in zip(frame["language"], frame["concept"], frame["form"]):
        lists.setdefault(language, {}).setdefault(concept, []).append(form)

    def distance_of(words_a: dict[str, list[str]], words_b: dict[str, list[str]]) -> float | None:
        if method == "babelprobe":
            return ldnd(words_a, words_b)
        return ldnd_asjp(words_a, words_b, loans="excluded" if method == "asjp-software-no-loans" else "kept")

    languages = list(languages)
    values = np.full((len(languages), len(languages)), np.nan)
    for i, a in enumerate(languages):
        words_a = lists.get(normalise_code(a))
        if words_a is None:
            continue
        values[i, i] = 1.0
        for j in range(i + 1, len(languages)):
            words_b = lists.get(normalise_code(languages[j]))
            distance = distance_of(words_a, words_b) if words_b is not None else None
            if distance is not None:
                values[i, j] = values[j, i] = 1.0 - distance
    unknown = tuple(lang for lang in languages if normalise_code(lang) not in lists)
    name = {"babelprobe": "asjp", "asjp-software": "asjp (ASJP software LDND)",
            "asjp-software-no-loans": "asjp (ASJP software LDND, loanwords excluded)"}[method]
    return TypologicalSimilarity(name, tuple(languages), values, unknown)
