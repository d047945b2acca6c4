"""The context/continuation boundary rule (models/tokenization.py), on the real tokenizers."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_latin_boundary_matches_joint_encoding(gemma):
    bt = gemma.boundary
    split = bt.split("Paris is the capital of", " France")
    assert split.context_ids[0] == gemma.tokenizer.bos_token_id  # Gemma wants BOS
    assert gemma.tokenizer.convert_ids_to_tokens(list(split.continuation_ids)) == ["▁France"]
    # the context part is exactly what the model sees for the stem alone
    assert split.context_ids == bt.encode_text("Paris is the capital of")


def test_script_without_spaces(gemma):
    bt = gemma.boundary
    context, cont = "日本の首都は", "東京"
    split = bt.split(context, cont)
    assert split.continuation_ids, "continuation must never be empty"
    whole = bt.encode_text(context + cont)
    assert split.context_ids + split.continuation_ids == whole
    assert gemma.tokenizer.decode(list(split.continuation_ids)) == "東京"


def test_straddling_token_goes_to_the_continuation(gemma):
    bt = gemma.boundary
    # "Tokyo" is one Gemma token: cut inside it, the straddling token is scored, never dropped
    split = bt.split("Tok", "yo")
    assert gemma.tokenizer.decode(list(split.continuation_ids)) == "Tokyo"
    assert split.context_ids == (gemma.tokenizer.bos_token_id,)
    assert split.context_ids + split.continuation_ids == bt.encode_text("Tokyo")


def test_cyrillic_boundary(gemma):
    split = gemma.boundary.split("Руанда со столицей", " Кигали")
    assert gemma.tokenizer.decode(list(split.continuation_ids)) == " Кигали"


def test_empty_continuation_is_refused(gemma):
    with pytest.raises(ValueError, match="empty continuation"):
        gemma.boundary.split("Paris is", "")


def test_bos_per_tokenizer(gemma, smollm2):
    assert gemma.boundary.prefix_ids == (gemma.tokenizer.bos_token_id,)
    # SmolLM2's GPT-2 style tokenizer adds no BOS: nothing is invented for a non-empty context...
    assert smollm2.boundary.prefix_ids == ()
    assert smollm2.boundary.split("The capital of France is", " Paris").context_ids == tuple(
        smollm2.tokenizer("The capital of France is", add_special_tokens=False).input_ids
    )
    # ...but an empty context is conditioned on a special token rather than on nothing
    empty = smollm2.boundary.split("", "Paris")
    assert len(empty.context_ids) == 1 and empty.continuation_ids


def test_an_overlong_text_is_refused_without_tokenizing_it_in_full():
    """Issue 30: a 30 MB single-line stem was tokenized in full (300 s, 5.6 GB) before the length
    check. The work is bounded by characters: only a prefix of max_tokens x 16 characters is read."""
    from tiny_models import WORDS, tiny_tokenizer

    from babelprobe.models.tokenization import PREFIX_CHARS_PER_TOKEN, BoundaryTokenizer

    seen: list[int] = []

    class Recording(BoundaryTokenizer):
        def encode(self, text, add_special):
            seen.append(len(text))
            return super().encode(text, add_special)

        def encode_with_ends(self, text):
            seen.append(len(text))
            return super().encode_with_ends(text)

    rule = Recording(tiny_tokenizer())
    rule.max_tokens = 32
    stem = " ".join(WORDS[i % len(WORDS)] for i in range(300_000))  # ~2 MB on one line
    with pytest.raises(ValueError, match="exceeds the model's maximum length 32 tokens .* the rest was not tokenized"):
        rule.split(stem, " " + WORDS[0])
    with pytest.raises(ValueError, match="the rest was not tokenized"):
        rule.encode_text(stem)
    assert seen and max(seen) <= 32 * PREFIX_CHARS_PER_TOKEN < len(stem) // 1000
    short = " ".join(WORDS[:5])
    assert rule.split(short, " " + WORDS[6]).continuation_ids  # a text that fits is split as before
