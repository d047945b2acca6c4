"""A model spec string, parsed once: ``SCHEME:TARGET`` plus what the target carries.

Every layer that needs a part of a spec (the registry's scheme, a backend's file or hub id, a
hub revision, an ``openai:`` base URL, a suite's folder name) reads it from ``ModelSpec``
instead of splitting the string itself. How a target reads is its engine's declaration
(``BackendInfo.target_syntax``, models/registry.py), never a list of schemes here:

- "name" (``bundled:<name>``, ``gguf:<file>``, ``llamacpp:<file>``, ``llamacpp:bundled:<name>``):
  the target as given;
- "revision" (``hf:``, ``vllm:``): ``<dir>`` or ``<org/name>[@revision]`` (a directory keeps any '@');
- "base-url" (``openai:``): ``<model>`` or ``<model>@<http(s) base URL>`` (the URL form is
  equivalent to ``--base-url``; credentials in it are never stored: models/http.py public_url).

A scheme no engine declares parses as "name"; the loader refuses it, naming the known schemes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from babelprobe.models.registry import TargetSyntax, all_backends

DEFAULT_MODEL = "bundled:gemma-3-270m"


def target_syntax(scheme: str) -> TargetSyntax:
    """How the target of a ``scheme:`` spec reads: its engine's declaration ("name" if none)."""
    return next((info.syntax_of(scheme) for info in all_backends() if scheme in info.schemes), "name")


def _path_like(target: str) -> bool:
    """A hub id is 'name' or 'org/name'; anything else is meant as a directory."""
    return target.startswith(("/", ".", "~")) or target.count("/") > 1


@dataclass(frozen=True)
class ModelSpec:
    """``text`` is the spec as given (it names the model in fingerprints and manifests)."""

    text: str
    scheme: str
    target: str  # everything after "SCHEME:"
    name: str  # the target without revision or base URL: a path, hub id, bundled name, served model
    revision: str | None = None  # hf:/vllm: hub revision
    base_url: str | None = None  # openai:<model>@<url>

    @classmethod
    def parse(cls, text: "str | ModelSpec") -> "ModelSpec":
        if isinstance(text, ModelSpec):
            return text
        scheme, sep, target = text.partition(":")
        if not sep or not scheme or not target:
            raise ValueError(f"model spec {text!r}: expected SCHEME:NAME, e.g. {DEFAULT_MODEL}")
        name, revision, base_url = target, None, None
        syntax = target_syntax(scheme)
        if syntax == "revision" and not Path(target).expanduser().is_dir():
            base, _, rev = target.partition("@")
            name, revision = base, rev or None
        elif syntax == "base-url":
            for marker in ("@http://", "@https://"):
                if marker in target:
                    name, _, rest = target.partition(marker)
                    base_url = marker[1:] + rest
                    break
        return cls(text, scheme, target, name, revision, base_url)

    @property
    def bundled_name(self) -> str | None:
        """The bundled model a ``bundled:`` or ``llamacpp:bundled:`` spec names."""
        if self.scheme == "bundled":
            return self.target
        if self.scheme == "llamacpp" and self.target.startswith("bundled:"):
            return self.target.partition(":")[2]
        return None

    def check(self) -> None:
        """The checks that need nothing loaded (ValueError, one line)."""
        if self.scheme == "hf" and _path_like(self.name) and not Path(self.target).expanduser().is_dir():
            raise ValueError(f"model {self.text}: {self.target} is neither an existing directory nor a hub id (ORG/NAME)")

    def __str__(self) -> str:
        return self.text
