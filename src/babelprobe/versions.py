"""Installed package versions, for fingerprints and manifests."""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Iterable


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed: left out rather than guessed
    return out
