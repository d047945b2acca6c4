"""A converted directory's tokenizer, with tokenizer.json read once by the Rust library
(models/tokenizer_load.py, issue 31), is transformers' own: the same class, backend, attributes,
token ids and decodes as ``AutoTokenizer.from_pretrained`` on both bundled models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from babelprobe.models.tokenizer_load import load_tokenizer
from babelprobe.models.weights import BUNDLED, bundled_present, resolve

BUNDLED_DATA = Path(__file__).resolve().parents[1] / "src" / "babelprobe" / "data" / "bundled"
# the Python copies of the vocabulary and merges GemmaTokenizer.__init__ builds its backend from
CLASS_BUILD_INPUTS = {"_vocab", "_merges"}


def _bundled_texts() -> list[str]:
    """Every string of the bundled data sets (passages, questions, answers, names in their
    languages and scripts), plus text around the special tokens."""
    texts: set[str] = set()
    for path in sorted(BUNDLED_DATA.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for value in json.loads(line).values():
                values = value if isinstance(value, list) else [value]
                texts.update(v for v in values if isinstance(v, str) and v)
    return sorted(texts)


def _canonical(value: object) -> str:
    """repr, with dicts in key order (from_pretrained fills init_kwargs in another order)."""
    if isinstance(value, dict):
        return repr([(repr(k), _canonical(v)) for k, v in sorted(value.items(), key=lambda item: repr(item[0]))])
    return repr(value)


def _attributes(tokenizer) -> dict[str, str]:
    return {name: _canonical(value) for name, value in sorted(vars(tokenizer).items())
            if name != "_tokenizer" and name not in CLASS_BUILD_INPUTS}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gemma-3-270m", "smollm2-135m-instruct"])
def test_read_once_tokenizer_is_transformers_own(name):
    if not bundled_present(BUNDLED[name]):
        pytest.skip(f"{BUNDLED[name].package} is not installed")
    directory = resolve(f"bundled:{name}").path
    plain = AutoTokenizer.from_pretrained(directory)
    fast = load_tokenizer(directory)
    assert type(fast) is type(plain)
    assert fast._tokenizer.to_str() == plain._tokenizer.to_str()
    assert _attributes(fast) == _attributes(plain)
    assert fast.padding_side == plain.padding_side and fast.chat_template == plain.chat_template
    specials = [str(t) for t in plain.all_special_tokens]
    texts = _bundled_texts()
    texts += [f"{specials[0]}{texts[0]}{specials[-1]}", " ".join(specials), "  leading\tand\ntrailing  "]
    assert len(texts) > 1000
    plain_ids = plain(texts)["input_ids"]
    assert fast(texts)["input_ids"] == plain_ids
    assert fast(texts, add_special_tokens=False)["input_ids"] == plain(texts, add_special_tokens=False)["input_ids"]
    assert fast.batch_decode(plain_ids) == plain.batch_decode(plain_ids)
    assert fast.convert_ids_to_tokens(plain_ids[0]) == plain.convert_ids_to_tokens(plain_ids[0])
    if plain.chat_template:
        chat = [{"role": "user", "content": texts[1]}]
        assert fast.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == \
            plain.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)


def test_a_directory_without_tokenizer_json_goes_through_auto_tokenizer(tmp_path):
    """Nothing for the Rust library to read: AutoTokenizer's own path, its result unchanged."""
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GemmaTokenizer"}))
    loaded, plain = load_tokenizer(str(tmp_path)), AutoTokenizer.from_pretrained(str(tmp_path))
    assert type(loaded) is type(plain)
    assert loaded._tokenizer.to_str() == plain._tokenizer.to_str()
    assert loaded.get_vocab() == plain.get_vocab()
