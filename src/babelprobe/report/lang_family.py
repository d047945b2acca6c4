"""A language's family and genus from lang2vec's Glottolog family-membership features ("fam"),
read offline from the installed package; '' where lang2vec or the language is missing."""

from __future__ import annotations

import importlib.util
from typing import Sequence

import langcodes

from babelprobe.analysis.typology import lang2vec_features


def families_of(codes: Sequence[str]) -> dict[str, str]:
    """code -> 'Indo-European (Germanic)': the first two family features set for the language
    (lang2vec lists a lineage's features from the top family down); '' where lang2vec or the
    language is missing. One lang2vec read for all codes (each read costs seconds)."""
    alpha3 = {}
    for code in codes:
        try:
            alpha3[code] = langcodes.Language.get(code).to_alpha3()
        except (LookupError, ValueError):
            pass
    try:
        features = lang2vec_features(tuple(sorted(set(alpha3.values()))), "fam")
    except Exception:  # noqa: BLE001 - lang2vec not installed or unreadable: no family shown
        features = {}
    out = {}
    for code in codes:
        values = features.get(alpha3.get(code, ""))
        names = [str(n).removeprefix("F_").replace("_", " ") for n, v in zip(features.get("CODE", ()), values or ())
                 if v == 1]
        out[code] = (names[0] + (f" ({names[1]})" if len(names) > 1 else "")) if names else ""
    return out


def family_note() -> str:
    """Where the family column comes from, or why it is empty."""
    if importlib.util.find_spec("lang2vec") is None:
        return "Language family: omitted (pip install 'babelprobe[reports]' for lang2vec's Glottolog families)"
    return "Language family (genus): lang2vec's Glottolog family-membership features"
