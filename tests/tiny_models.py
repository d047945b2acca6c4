"""Tiny random-weight models built from a config, with a word-level tokenizer: no download.

Used where a test needs a checkpoint property the bundled models lack (a generation_config.json
with a repetition penalty, a soft-capped or scaled LM head)."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedModel, PreTrainedTokenizerFast

WORDS = (
    "the a of and to in is was he she it they capital city river paris berlin rome france germany "
    "italy red green blue one two three four five six seven eight nine ten"
).split()
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
VOCAB = len(SPECIALS) + len(WORDS)
# the decoder sizes every tiny model shares (pad 0, bos 1, eos 2 as in SPECIALS)
DECODER = dict(
    vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
    num_key_value_heads=1, head_dim=8, max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
)


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate([*SPECIALS, *WORDS])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def tiny_model(model_class: type[PreTrainedModel], config, seed: int = 0, init_std: float = 0.5) -> PreTrainedModel:
    """Random weights, larger than the default init so logits are far apart and argmaxes stable."""
    torch.manual_seed(seed)
    model = model_class(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() > 1:
                param.normal_(0.0, init_std)
    return model


def save_tiny(model: PreTrainedModel, target: Path) -> Path:
    model.save_pretrained(target)
    tiny_tokenizer().save_pretrained(target)
    return target


T5_WORDS = "the quick brown fox jumps over lazy dog der die das und ist ein eine le la les est une un".split()
T5_LANGUAGES = ("en", "de", "fr", "ru")


def build_tiny_t5(root: Path, samples_per_language: int = 2) -> Path:
    """A tiny random T5 with a real SentencePiece (unigram) tokenizer trained here on a few hundred
    lines: its pieces include the lone "▁" (e.g. "▁die" -> "▁", "d", "i", "e"), as mT5's do, and
    20 sentinels. Writes ``root/model`` and ``root/samples.jsonl`` (``samples_per_language`` texts
    of ~80 pieces in each of T5_LANGUAGES) and returns ``root``."""
    import json
    import random

    import sentencepiece as spm
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    rng = random.Random(0)
    lines = [" ".join(rng.choice(T5_WORDS) for _ in range(rng.randint(5, 15))) for _ in range(300)]
    (root / "corpus.txt").write_text("\n".join(lines))
    spm.SentencePieceTrainer.train(input=str(root / "corpus.txt"), model_prefix=str(root / "sp"), vocab_size=50,
                                   model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(root / "sp.model"))
    tokenizer = T5Tokenizer(vocab=[(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())],
                            extra_ids=20)
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_ff=64, num_layers=2, num_heads=2, d_kv=16,
                      decoder_start_token_id=tokenizer.pad_token_id, pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id)
    T5ForConditionalGeneration(config).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    rows, i = [], 0
    for language in T5_LANGUAGES:
        for k in range(samples_per_language):
            rows.append({"id": f"{language}{k}", "language": language, "text": " ".join(lines[(i * 8 + j) % len(lines)] for j in range(8))})
            i += 1
    (root / "samples.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return root
