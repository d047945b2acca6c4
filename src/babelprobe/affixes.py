"""Old home of the glued-form rules, kept for its importers (data/perturbations.py, downstream
scripts): the rules and their data now live in the language layer, ``babelprobe.text.affixes``
(per-language tables text/data/affixes/<code>.tsv, ending lengths from the language profile)."""

from __future__ import annotations

from typing import Any

from babelprobe.text.affixes import affix_table, ending_match, is_roman as _is_roman, proclitic_match  # noqa: F401


def ending_ok(ending: str, gold: str, language: str) -> bool:
    """``ending`` (folded) may follow the folded word ``gold`` in ``language`` (text.affixes)."""
    return ending_match(ending, gold, language) is not None


def proclitic_ok(prefix: str, gold: str, language: str = "") -> bool:
    """``prefix`` (folded) may stand joined before ``gold``: the language's proclitics, or with no
    language the Hebrew/Arabic ones by the prefix's script (text.affixes)."""
    return proclitic_match(prefix, gold, language or None) is not None


def _forms(language: str, kind: str) -> frozenset[str]:
    table = affix_table(language)
    return frozenset(row.form for row in table.forms(kind)) if table else frozenset()


def __getattr__(name: str) -> Any:
    """The old constants, now read from the tables and profiles."""
    if name == "KOREAN_PARTICLES":
        return _forms("ko", "ending")
    if name == "KOREAN_COUNTERS":
        return _forms("ko", "counter")
    if name == "LONG_ENDING_LANGUAGES":
        from babelprobe.text.languages import profiles

        return frozenset(code for code, p in profiles().items() if p.suffixing == "agglutinative")
    raise AttributeError(f"module 'babelprobe.affixes' has no attribute {name!r}")
