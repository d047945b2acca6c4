"""Language codes: names, validity, one normalised code per language (langcodes, offline).

The text rules (scripts, units) are the language layer's: babelprobe.text.scripts and
babelprobe.text.units."""

from __future__ import annotations

from functools import lru_cache


def language_name(code: str) -> str:
    """English name of a language code ('he' -> 'Hebrew'), as the papers' prompts use them
    (langcodes' CLDR data, offline)."""
    import langcodes

    try:
        name = langcodes.Language.get(code).display_name("en")
    except (ValueError, LookupError) as exc:
        raise ValueError(f"unknown language code {code!r}") from exc
    if name.startswith("Unknown language"):
        raise ValueError(f"unknown language code {code!r}")
    return name


@lru_cache(maxsize=4096)
def is_language_code(code: str) -> bool:
    """A BCP-47 language tag whose subtags are registered (IANA registry through langcodes,
    offline): 'en', 'zh-Hans', 'pt-BR', 'fil', 'yue', 'iw' (mC4's Hebrew), 'x-private'. A
    FLORES-style code ('heb_Hebr', 'zho_Hans': ISO 639-3 + ISO 15924 joined by '_') is accepted
    when its standard form ('he-Hebr') is valid. Markup, paths and unregistered subtags ('xx',
    '<b>en</b>', 'english') are not codes: they reach file names, prompts and figure labels."""
    import langcodes

    if not code or code != code.strip() or not code.isascii():
        return False
    if langcodes.tag_is_valid(code):
        return True
    if not all(ch.isalnum() or ch in "-_" for ch in code):
        return False
    try:
        return langcodes.tag_is_valid(langcodes.standardize_tag(code))
    except (ValueError, LookupError):
        return False


# Individual languages the Shared Path inputs name by their macrolanguage (mC4, the token counts,
# lang2vec): after langcodes' own macrolanguage folding (cmn -> zh, arb -> ar, pes -> fa, zsm ->
# ms, ...), these remain. FLORES+ writes nob_Latn (Bokmål), tgl_Latn (Tagalog); mC4 writes no, fil.
_SHARED_PATH_CODES = {"nb": "no", "tl": "fil", "kmr": "ku", "ckb": "ku", "ydd": "yi", "khk": "mn", "plt": "mg",
                      "als": "sq", "swh": "sw", "npi": "ne", "ekk": "et", "lvs": "lv", "azj": "az", "uzn": "uz",
                      "pbt": "ps", "gaz": "om"}


@lru_cache(maxsize=4096)
def normalise_code(code: str) -> str:
    """One code per language for every Shared Path input (memorization samples, parallel
    sentences, SIM/MEM/TOKENS files, token counts): the base language subtag in its standard
    form, macrolanguages folded. 'iw' and 'heb_Hebr' -> 'he', 'cmn_Hans' and 'zh-Hant' -> 'zh',
    'nob_Latn' -> 'no', 'tgl_Latn' and 'fil' -> 'fil', 'arb_Arab' -> 'ar', 'EN' -> 'en'. A code
    langcodes cannot read is kept as written (lower case, '_' as '-'), never dropped."""
    import langcodes

    text = code.strip()
    if not text:
        raise ValueError("empty language code")
    tag = text.replace("_", "-")
    try:
        base = langcodes.Language.get(langcodes.standardize_tag(tag, macro=True)).language
    except (ValueError, LookupError):
        base = None
    if not base:
        return tag.lower()
    return _SHARED_PATH_CODES.get(base, base)


def normalise_codes(codes: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``codes`` -> their normalised codes, and the normalised codes two or more of them share
    (e.g. {'he': ['he', 'iw']}: one input naming a language twice, which the caller reports)."""
    mapping = {code: normalise_code(code) for code in codes}
    by_code: dict[str, list[str]] = {}
    for original, normal in mapping.items():
        by_code.setdefault(normal, []).append(original)
    return mapping, {normal: originals for normal, originals in by_code.items() if len(originals) > 1}
