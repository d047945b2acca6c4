"""The registry of probe families: name -> "module:attribute", imported on first use.

The built-in families are listed here, in the order of ``babelprobe demo`` and ``babelprobe
datasets``; a package adds its own through the entry point group ``babelprobe.families`` (name =
the family's name, value = "module:attribute" of its ``Family`` object), as lm-evaluation-harness
accepts tasks from other packages. See docs/ARCHITECTURE.md, "How to add a probe family".
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from importlib import import_module
from importlib.metadata import entry_points

from babelprobe.data.fetch import FetchResult, fetch_release
from babelprobe.data.releases import FetchError, Release
from babelprobe.families.base import Family, load_items

__all__ = ["ENTRY_POINT_GROUP", "FAMILIES", "Family", "UnknownFamily", "all_families", "family_names",
           "fetch_dataset", "get_family", "get_release", "load_items", "registered", "releases"]

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


def releases() -> dict[str, Release]:
    """Every family's public releases (``Family.releases``), by name: what ``datasets fetch`` fetches."""
    return {r.name: r for family in all_families() for r in family.releases}


def get_release(name: str) -> Release:
    found = releases()
    if name not in found:
        raise FetchError(f"unknown dataset {name!r} (available: {', '.join(found)})")
    return found[name]


def fetch_dataset(name: str, out: Path | None = None, source: str | None = None,
                  langs: list[str] | None = None) -> FetchResult:
    """``babelprobe datasets fetch NAME``: the release fetched by data/fetch.py, then loaded with
    its family's own loader (as ``run`` and ``validate`` read it)."""
    release = get_release(name)

    def check(folder: Path) -> str:
        family = get_family(release.probe)
        # validated from a dict: each family's config gives its own `probe` default (RunOptions has none)
        config = family.config.model_validate({"out": Path("."), "data": folder / release.data})
        return family.describe(load_items(family, config))

    return fetch_release(release, check, out, source, langs)
