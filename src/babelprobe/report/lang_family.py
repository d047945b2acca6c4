"""A language's family and genus from lang2vec's Glottolog family-membership features ("fam"),
read offline from the installed package; '' where lang2vec or the language is missing."""

from __future__ import annotations

import importlib.util
from functools import lru_cache

import langcodes

from babelprobe.analysis.typology import import_lang2vec


@lru_cache(maxsize=None)
def family_of(code: str) -> str:
    """'Indo-European (Germanic)': the first two family features set for the language (lang2vec
    lists a lineage's features from the top family down)."""
    try:
        alpha3 = langcodes.Language.get(code).to_alpha3()
        features = import_lang2vec().get_features([alpha3], "fam", header=True)
    except Exception:  # noqa: BLE001 - not installed, or a code lang2vec does not know: no family shown
        return ""
    names = [str(n).removeprefix("F_").replace("_", " ") for n, v in zip(features["CODE"], features[alpha3]) if v == 1]
    if not names:
        return ""
    return names[0] + (f" ({names[1]})" if len(names) > 1 else "")


def family_note() -> str:
    """Where the family column comes from, or why it is empty."""
    if importlib.util.find_spec("lang2vec") is None:
        return "Language family: omitted (pip install 'babelprobe[reports]' for lang2vec's Glottolog families)"
    return "Language family (genus): lang2vec's Glottolog family-membership features"
