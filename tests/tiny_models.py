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
