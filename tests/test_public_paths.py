"""The public import paths outside ``babelprobe/__init__.py`` (issue 27's list, docs/ARCHITECTURE.md,
"Public import paths"): each stays importable where it is while compatibility re-exports elsewhere
are dropped, and each is what it says (a callable or a class, not a leftover alias of nothing)."""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "babelprobe.families.eclektic.metrics": ("word_recall", "parse_judge"),
    "babelprobe.data.perturbations": ("mask_names", "NameNotMaskable", "shuffle_units"),
    "babelprobe.data.validation": ("DatasetError",),
    "babelprobe.families.owl.data": ("load_owl", "OwlItem"),
    "babelprobe.families.owl.metrics": ("name_cloze_correct", "direct_probe_correct"),
    "babelprobe.families.owl.probe": ("OwlProbe", "perturb"),
    "babelprobe.families.memorization.metrics": ("bleu", "rm_units", "rouge_l"),
}


@pytest.mark.parametrize("module,name", [(m, n) for m, names in PUBLIC.items() for n in names])
def test_public_import_path(module, name):
    assert callable(getattr(importlib.import_module(module), name))


def test_public_paths_are_documented():
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    section = guide.split("## Public import paths", 1)[1].split("\n## ", 1)[0]
    for module, names in PUBLIC.items():
        for name in names:
            assert f"`{module.removeprefix('babelprobe.')}.{name}`" in section


@pytest.mark.parametrize("module", ["babelprobe.affixes", "babelprobe.segmenters"])
def test_compatibility_modules_are_gone(module):
    """Top-level aliases of the language layer: callers import babelprobe.text.* instead."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)
