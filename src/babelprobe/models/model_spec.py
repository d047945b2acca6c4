"""A model spec string, parsed once: ``SCHEME:TARGET`` plus what the target carries.

Every layer that needs a part of a spec (the registry's scheme, a backend's file or hub id, a
hub revision, an ``openai:`` base URL, a suite's folder name) reads it from ``ModelSpec``
instead of splitting the string itself, so the forms below are defined here and nowhere else:

- ``bundled:<name>``, ``gguf:<file>``, ``llamacpp:<file>``, ``llamacpp:bundled:<name>``;
- ``hf:<dir>``, ``hf:<org/name>[@revision]``, ``vllm:`` likewise (a directory keeps any '@');
- ``openai:<model>`` or ``openai:<model>@<http(s) base URL>`` (the URL form is equivalent to
  ``--base-url``; credentials in it are never stored: openai_backend.public_url).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "bundled:gemma-3-270m"
_REVISION_SCHEMES = ("hf", "vllm")


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
        if scheme in _REVISION_SCHEMES and not Path(target).expanduser().is_dir():
            base, _, rev = target.partition("@")
            name, revision = base, rev or None
        elif scheme == "openai":
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
