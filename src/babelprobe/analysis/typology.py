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


@lru_cache(maxsize=16)
def lang2vec_features(codes: tuple[str, ...], feature_set: str) -> dict[str, list]:
    """``lang2vec.get_features(codes, feature_set, header=True)`` for codes it knows, kept for the
    process: each call re-reads its compressed tables once per feature name (~3 s on 2 cores,
    whatever the number of languages), so callers ask for all their languages at once."""
    l2v = import_lang2vec()
    known = set(l2v.available_languages())
    present = [c for c in codes if c in known]
    return l2v.get_features(present, feature_set, header=True) if present else {}


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
