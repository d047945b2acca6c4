"""Shared fixtures. Real bundled models, each loaded once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the tests may reach a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SHARED_POLYGLOT = ROOT.parent / "shared" / "data" / "polyglot-or-not"


@pytest.fixture(scope="session")
def gemma():
    from babelprobe.models import load_backend

    return load_backend("bundled:gemma-3-270m", device="cpu")


@pytest.fixture(scope="session")
def smollm2():
    from babelprobe.models import load_backend

    return load_backend("bundled:smollm2-135m-instruct", device="cpu")


@pytest.fixture(scope="session")
def polyglot_dir() -> Path:
    if not SHARED_POLYGLOT.is_dir():
        pytest.skip(f"real Polyglot-or-Not data not found at {SHARED_POLYGLOT}")
    return SHARED_POLYGLOT


@pytest.fixture
def fresh(gemma):
    """The session Gemma backend with its forward counters reset, recording its rows."""
    gemma.stats.reset()
    gemma.stats.keep_contexts = True
    yield gemma
    gemma.stats.keep_contexts = False
