"""Loading a directory's tokenizer with its tokenizer.json read once, by the Rust library.

``AutoTokenizer.from_pretrained`` on a directory whose tokenizer_config.json names a class with
its own ``__init__`` (Gemma's ``GemmaTokenizer``) parses the whole tokenizer.json in Python twice
(``json.load``: once for its added tokens, once for the vocabulary and merges it hands to the
class) and the class then rebuilds the backend from those Python objects; on Gemma 3 270M's 33 MB
file that was ~44% of the tokenizer's samples and ~60% of them with the class's rebuild
(docs/profiles/README.md). The backend the class builds is the one the directory's tokenizer.json
serialises (``save_pretrained`` wrote it from that backend), so here ``tokenizers.Tokenizer.from_file``
reads it once and transformers' own ``from_pretrained`` finishes the object (special tokens, chat
template, padding side, init kwargs) around it. The result is the same class with the same backend
(``to_str()`` equal) and the same attributes, except the Python copies of vocabulary and merges a
class like ``GemmaTokenizer`` keeps only to build its backend (tests/test_tokenizer_load.py).

Anything else (a hub id or revision, no tokenizer.json, a class not backed by ``tokenizers``)
goes through ``AutoTokenizer.from_pretrained`` unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _class_for(directory: Path) -> Any | None:
    """The ``tokenizers``-backed class tokenizer_config.json names, or None (another kind)."""
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    config_file, tokenizer_file = directory / "tokenizer_config.json", directory / "tokenizer.json"
    if not (config_file.is_file() and tokenizer_file.is_file()):
        return None
    name = json.loads(config_file.read_text(encoding="utf-8")).get("tokenizer_class")
    if not isinstance(name, str):
        return None
    tokenizer_class = tokenizer_class_from_name(name) or tokenizer_class_from_name(name.removesuffix("Fast"))
    if not (isinstance(tokenizer_class, type) and issubclass(tokenizer_class, TokenizersBackend)):
        return None
    return tokenizer_class


def load_tokenizer(path: str, revision: str | None = None) -> Any:
    """The tokenizer ``AutoTokenizer.from_pretrained(path)`` loads, with a local directory's
    tokenizer.json parsed once in Rust instead of twice in Python plus a rebuild."""
    from transformers import AutoTokenizer

    directory = Path(path)
    tokenizer_class = _class_for(directory) if revision is None and directory.is_dir() else None
    if tokenizer_class is None:
        return AutoTokenizer.from_pretrained(path, **({"revision": revision} if revision else {}))
    from tokenizers import Tokenizer
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    backend = Tokenizer.from_file(str(directory / "tokenizer.json"))

    class ReadOnce(tokenizer_class):  # type: ignore[misc, valid-type]  # a class chosen at run time
        """The class, finished by ``from_pretrained`` around the backend already read."""

        @classmethod
        def convert_to_native_format(cls, trust_remote_code: bool = False, **kwargs: Any) -> dict[str, Any]:
            return kwargs  # the vocabulary and merges are in the backend: nothing to extract

        def __init__(self, *args: Any, **kwargs: Any):
            kwargs.pop("tokenizer_file", None)
            self._tokenizer = backend  # TokenizersBackend.__init__ keeps a backend already set
            TokenizersBackend.__init__(self, *args, **kwargs)

    # the added tokens as the Rust library read them: from_pretrained otherwise json.loads the
    # whole file again to read them (its "legacy" branch for a config without them)
    tokenizer = ReadOnce.from_pretrained(str(directory), added_tokens_decoder=backend.get_added_tokens_decoder())
    tokenizer.__class__ = tokenizer_class
    return tokenizer
