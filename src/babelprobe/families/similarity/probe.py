"""Sentence embeddings for language similarity (Shared Path §4.1): one HiddenStates request per
parallel sentence, mean-pooled over the sentence's own tokens at the requested layers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from babelprobe.families.similarity.data import ParallelSentence
from babelprobe.models.base import HiddenStates, HiddenStatesResult, Request, Response


class SentenceEmbedding(BaseModel):
    """One row of items.parquet: the sentence and its pooled vector at each requested layer."""

    id: str
    language: str
    text: str
    source: str
    layers: list[int]
    vectors: list[list[float]] | None = None  # one per layer, in ``layers`` order
    error: str | None = None


class SimilarityProbe:
    name = "similarity"
    request_kinds = frozenset({"hidden_states"})

    def __init__(self, layers: tuple[int, ...], pooling: Literal["mean-text", "mean"] = "mean-text"):
        self.layers = layers
        self.pooling = pooling

    def requests(self, sentence: ParallelSentence) -> list[Request]:
        return [HiddenStates(text=sentence.text, layers=self.layers, pooling=self.pooling)]

    def score(self, sentence: ParallelSentence, responses: list[Response]) -> SentenceEmbedding:
        (result,) = responses
        assert isinstance(result, HiddenStatesResult)
        if len(result.vectors) != len(self.layers):
            raise ValueError(f"{len(result.vectors)} vectors for {len(self.layers)} layers")
        return SentenceEmbedding(id=sentence.id, language=sentence.language, text=sentence.text,
                                 source=sentence.source, layers=list(self.layers), vectors=result.vectors)

    def failed(self, sentence: ParallelSentence, error: str) -> SentenceEmbedding:
        return SentenceEmbedding(id=sentence.id, language=sentence.language, text=sentence.text,
                                 source=sentence.source, layers=list(self.layers), error=error)
