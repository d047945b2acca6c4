"""`run similarity` options (Shared Path §4.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator

from babelprobe.config import BUNDLED_DATA, FiguresOption, PartsOption, RunOptions, option



DEMO_PARALLEL = BUNDLED_DATA / "polyglot_or_not_parallel.jsonl"


def parse_layers(value: Any) -> Any:
    """'last', 'all' or comma-separated indices ('0,6,-1') as the command line gives them."""
    if isinstance(value, str) and value not in ("last", "all"):
        try:
            return [int(x) for x in value.split(",") if x.strip()]
        except ValueError:
            raise ValueError("last, all, or comma-separated layer indices (0 = embeddings, -1 = last)") from None
    return value


class SimilarityConfig(RunOptions, FiguresOption, PartsOption):
    """Language similarity from the model's hidden states (Shared Path §4.1, App. A and B.4)."""

    probe: Literal["similarity"] = "similarity"
    data: Path = option(DEMO_PARALLEL, "parallel sentences: a file with id, language, text, or a Polyglot-or-Not "
                                       "<lang>.parquet directory (first stems)")
    limit: int | None = option(None, "parallel ids (seeded sample; the same ids in every language)", ge=1)
    layers: Literal["last", "all"] | list[int] = option(
        "last", "last, all, or indices e.g. 0,6,-1 (0 = embeddings; every layer's vectors are stored)")
    pooling: Literal["mean-text", "mean"] = option(
        "mean-text", "mean-text (the sentence's own tokens) or mean (BOS included)")
    rank: int | None = option(None, "rank r of the language-specific subspace (default: languages - 1)", ge=1)
    typology: Literal["lang2vec", "urielplus", "none"] = option(
        "lang2vec", "typological similarity to correlate with: lang2vec, urielplus, none")

    asjp: Path | None = option(None, "a converted ASJP table (`babelprobe graph asjp`): adds ASJP lexical similarity "
                                     "(1 − LDND, Figs. 7-8) to the typology correlations")
    ldnd: Literal["babelprobe", "asjp-software", "asjp-software-no-loans"] = option(
        "babelprobe", "LDND of --asjp: babelprobe (the published definition: every concept, synonyms by their "
        "closest pair), asjp-software (the ASJP program asjp62: the 40-item list, lists with >= 28 items, the first "
        "two synonyms averaged, ASJPcode modifiers * \" ~ $ joining symbols, loanwords kept) or "
        "asjp-software-no-loans (the same with its loanword switch on: loanwords among the two synonyms dropped)")

    _layers = field_validator("layers", mode="before")(parse_layers)
