"""The registry of probe families: name -> "module:attribute", imported on first use.

The order here is the order of ``babelprobe demo`` and ``babelprobe datasets``. To add a family,
see docs/ARCHITECTURE.md, "How to add a probe family".
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from babelprobe.families.base import Family

FAMILIES: dict[str, str] = {
    "cka": "babelprobe.families.cka:family",
    "owl": "babelprobe.families.owl:family",
    "eclektic": "babelprobe.families.eclektic:family",
    "similarity": "babelprobe.families.similarity:family",
}


class UnknownFamily(ValueError):
    pass


def family_names() -> list[str]:
    return list(FAMILIES)


@cache
def get_family(name: str) -> Family:
    """The family registered as ``name``; UnknownFamily (a ValueError) names the known ones."""
    if name not in FAMILIES:
        raise UnknownFamily(f"unknown probe {name!r} (available: {', '.join(FAMILIES)})")
    module, _, attribute = FAMILIES[name].partition(":")
    family = getattr(import_module(module), attribute)
    if family.name != name:
        raise RuntimeError(f"{FAMILIES[name]} is registered as {name!r} but calls itself {family.name!r}")
    return family


def all_families() -> list[Family]:
    return [get_family(name) for name in FAMILIES]
