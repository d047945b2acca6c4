"""The registry of probe families: name -> "module:attribute", imported on first use.

The built-in families are listed here, in the order of ``babelprobe demo`` and ``babelprobe
datasets``; a package adds its own through the entry point group ``babelprobe.families`` (name =
the family's name, value = "module:attribute" of its ``Family`` object), as lm-evaluation-harness
accepts tasks from other packages. See docs/ARCHITECTURE.md, "How to add a probe family".
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

from babelprobe.families.base import Family, load_items

__all__ = ["ENTRY_POINT_GROUP", "FAMILIES", "Family", "UnknownFamily", "all_families", "family_names",
           "get_family", "load_items", "registered"]

ENTRY_POINT_GROUP = "babelprobe.families"
FAMILIES: dict[str, str] = {
    "cka": "babelprobe.families.cka.family:family",
    "owl": "babelprobe.families.owl.family:family",
    "eclektic": "babelprobe.families.eclektic.family:family",
    "memorization": "babelprobe.families.memorization.family:family",
    "similarity": "babelprobe.families.similarity.family:family",
}


class UnknownFamily(ValueError):
    pass


@cache
def registered() -> dict[str, str]:
    """The built-in families, then those of installed packages' entry points (a built-in name wins)."""
    found = dict(FAMILIES)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value)
    return found


def family_names() -> list[str]:
    return list(registered())


@cache
def get_family(name: str) -> Family:
    """The family registered as ``name``; UnknownFamily (a ValueError) names the known ones."""
    families = registered()
    if name not in families:
        raise UnknownFamily(f"unknown probe {name!r} (available: {', '.join(families)})")
    module, _, attribute = families[name].partition(":")
    family = getattr(import_module(module), attribute)
    if family.name != name:
        raise RuntimeError(f"{families[name]} is registered as {name!r} but calls itself {family.name!r}")
    return family


def all_families() -> list[Family]:
    return [get_family(name) for name in registered()]
