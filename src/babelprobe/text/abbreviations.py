"""Abbreviations written with full stops: one word however they are spaced.

- Letters with full stops (U.S., D.C., Ph.D.) are the letters (US, DC, PhD).
- A plural abbreviation that doubles each letter and writes each pair with its own full stop and
  a space (Spanish EE. UU. 'Estados Unidos', FF. AA. 'Fuerzas Armadas', CC. OO.; RAE, Ortografía
  de la lengua española (2010) §4.2.4.1.2; Catalan and Galician write them alike) is one word:
  EE. UU. = EE.UU. = EEUU. Only pairs of one doubled letter join, so initials (J. R. R.) stay
  apart.
"""

from __future__ import annotations

import regex

ABBREVIATION = regex.compile(r"\p{L}{1,2}(?:\.\p{L}{1,2})+")
_DOUBLED_PAIR = regex.compile(r"(\p{Lu})\1\.")


def letters_of(token: str) -> str:
    """U.S. -> US (a folded or written token of letters with inner full stops); others unchanged."""
    return token.replace(".", "") if ABBREVIATION.fullmatch(token) else token


def join_doubled(tokens: list[str]) -> list[str]:
    """Whitespace tokens with consecutive doubled-letter abbreviations (EE. UU.) joined into one
    token (EE.UU.); every other token unchanged."""
    out: list[str] = []
    run: list[str] = []
    for token in tokens + [""]:
        if _DOUBLED_PAIR.fullmatch(token):
            run.append(token)
            continue
        if len(run) > 1:
            out.append("".join(run))
        else:
            out += run
        run = []
        if token:
            out.append(token)
    return out
