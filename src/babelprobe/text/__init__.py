"""The language layer: every rule about text in a language (normalize/fold, segment, match).

Families call it; it imports no family. Per-language knowledge lives in ``text/data/`` as tables
with a source per row (docs/ARCHITECTURE.md, "The language layer"). The names below are loaded
lazily: importing ``babelprobe.text`` loads no table and no segmenter.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "fold": "normalize", "owl_direct_probe": "normalize", "policy": "normalize", "POLICIES": "normalize",
    "script_tokens": "tokenize", "rouge_l": "tokenize", "rouge_l_text": "tokenize", "lcs_length": "tokenize",
    "segmentation_flag": "segment",
    "Token": "segment", "tokens": "segment", "words": "segment", "word_count": "segment",
    "LanguageProfile": "languages", "profile": "languages",
    "Evidence": "evidence", "Unsure": "evidence", "evidence_json": "evidence", "evidence_from_json": "evidence",
}
__all__ = [
    "Evidence", "LanguageProfile", "POLICIES", "Token", "Unsure", "evidence_from_json", "evidence_json", "fold",
    "lcs_length", "owl_direct_probe", "policy", "profile", "rouge_l", "rouge_l_text", "script_tokens",
    "segmentation_flag", "tokens", "word_count", "words",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"babelprobe.text.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'babelprobe.text' has no attribute {name!r}")
