"""The transformers backend's load-time self-checks, run once per model and recorded.

``TransformersBackend`` checks at load that its fast paths reproduce the plain ones on this model
(the gathered LM head, packed tree rows with a 4D mask). On Gemma 3 270M the two checks were 35%
of a cached load's CPU time (docs/profiles/README.md): their forwards run the 262k-wide head over
every position. Their outcome depends only on the weights, tokenizer and config (the model's
fingerprint), the dtype and device, the installed libraries and the backend's own code, so it is
recorded under a key made of all of those in ``<home>/self_checks/<key>.json`` (babelprobe's
cache home: a hub snapshot or a user's model folder may be read-only). A changed weights or
tokenizer file, another library version or an edit of the checking code makes another key: the
checks run again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pydantic import BaseModel

from babelprobe.models.base import Fingerprint

# the code whose behaviour the checks vouch for: the backend and the packing of its rows
_CHECKED_CODE = ("hf.py", "packing.py", "tokenization.py", "transformers_helpers.py", "self_checks.py")


class SelfChecks(BaseModel):
    """Which fast paths reproduced the plain ones on this model (hf.py: ``_use_gathered_head``,
    ``_tree_rows_agree``)."""

    gathered_head: bool
    tree_rows: bool


def code_hash() -> str:
    """sha256 of the backend's source files (a changed check or fast path re-checks)."""
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in _CHECKED_CODE:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes())
    return digest.hexdigest()


def checks_key(fingerprint: Fingerprint, model_class: str, attention: str | None, device_name: str) -> str:
    """Everything the checks' outcome depends on: the fingerprint (weights, tokenizer and config
    files, dtype, backend revision, library versions), the device (``device_name``: a GPU's model,
    not only "cuda"), the model class, its attention implementation and the backend's code."""
    payload = {
        "fingerprint": fingerprint.model_dump(exclude={"spec"}), "device_name": device_name,
        "model_class": model_class, "attention": attention, "code": code_hash(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def _record_path(key: str) -> Path:
    from babelprobe.models.weights import home_dir

    return home_dir() / "self_checks" / f"{key}.json"


def recorded_checks(key: str) -> SelfChecks | None:
    """The recorded outcome under ``key``, or None (never checked, or an unreadable record)."""
    path = _record_path(key)
    try:
        return SelfChecks.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def record_checks(key: str, checks: SelfChecks) -> None:
    """Write the outcome atomically (a concurrent loader writes the same content)."""
    path = _record_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(checks.model_dump_json())
        tmp.replace(path)
    except OSError:  # a read-only cache home: the checks simply run again next time
        pass
