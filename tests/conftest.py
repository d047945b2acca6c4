"""Shared fixtures. Real bundled models, each loaded once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the tests may reach a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def gemma():
    from babelprobe.models import load_backend

    return load_backend("bundled:gemma-3-270m", device="cpu")


@pytest.fixture(scope="session")
def smollm2():
    from babelprobe.models import load_backend

    return load_backend("bundled:smollm2-135m-instruct", device="cpu")


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    """A tiny random T5 with a real SentencePiece tokenizer (tests/tiny_models.py: build_tiny_t5):
    ``tiny_t5 / "model"``, ``tiny_t5 / "samples.jsonl"``."""
    from tiny_models import build_tiny_t5

    return build_tiny_t5(tmp_path_factory.mktemp("t5"))


@pytest.fixture(scope="session")
def release_dir(tmp_path_factory) -> Path:
    """The bundled Polyglot-or-Not facts in the release's layout: one <lang>.parquet per language,
    no language column, several objects and stems joined by " <br> " (so these tests run on a
    fresh clone, without ../shared)."""
    import pandas as pd

    from babelprobe.families.cka.config import DEMO_CKA

    rows = pd.read_json(DEMO_CKA, lines=True)
    out = tmp_path_factory.mktemp("polyglot-or-not")
    for language, group in rows.groupby("language"):
        group.drop(columns="language").to_parquet(out / f"{language}.parquet", index=False)
    return out


@pytest.fixture
def fresh(gemma):
    """The session Gemma backend with its forward counters reset, recording its rows."""
    gemma.stats.reset()
    gemma.stats.keep_contexts = True
    yield gemma
    gemma.stats.keep_contexts = False
