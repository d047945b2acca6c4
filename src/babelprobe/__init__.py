"""babelprobe: measure what a language model has memorized and what it knows, across languages.

The public API for scripts and for probe families defined in other packages. Names load on first
use (``import babelprobe`` stays light); everything else is private to its module.

    from babelprobe import CKAConfig, run, read_run
    outcome = run(CKAConfig(out=Path("runs/cka"), langs=["en", "de"], limit=50))
    stored = read_run(outcome.out)          # summary recomputed from items.parquet

A family in another package subclasses ``Family`` and registers it under the entry point group
``babelprobe.families`` (see docs/ARCHITECTURE.md, "How to add a probe family"); a backend is
one module plus one ``BackendInfo`` registered under ``babelprobe.backends`` ("How to add a
backend").
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # running and reading runs
    "run": "babelprobe.execute_run", "RunOutcome": "babelprobe.execute_run", "load_items": "babelprobe.families.base",
    "read_run": "babelprobe.stored_runs", "StoredRun": "babelprobe.stored_runs", "RunError": "babelprobe.stored_runs",
    "Manifest": "babelprobe.store", "read_items": "babelprobe.store",
    # configs
    "RunOptions": "babelprobe.config", "option": "babelprobe.config", "comma_list": "babelprobe.config",
    "CKAConfig": "babelprobe.families.cka.config", "OwlConfig": "babelprobe.families.owl.config",
    "EclekticConfig": "babelprobe.families.eclektic.config",
    "MemorizationConfig": "babelprobe.families.memorization.config",
    "SimilarityConfig": "babelprobe.families.similarity.config",
    # families
    "Family": "babelprobe.families.base", "Stage": "babelprobe.families.base",
    "StageContext": "babelprobe.families.base", "Plan": "babelprobe.families.base",
    "BundledDataset": "babelprobe.families.base", "DemoRun": "babelprobe.families.base",
    "CommandRoot": "babelprobe.families.base", "sample_groups": "babelprobe.families.base",
    "get_family": "babelprobe.families", "family_names": "babelprobe.families",
    "Probe": "babelprobe.request_runner", "Outcome": "babelprobe.request_runner",
    # backends and request kinds
    "Backend": "babelprobe.models.base", "Fingerprint": "babelprobe.models.base",
    "Request": "babelprobe.models.base", "Response": "babelprobe.models.base",
    "Generate": "babelprobe.models.base", "LogLikelihood": "babelprobe.models.base",
    "NextToken": "babelprobe.models.base", "HiddenStates": "babelprobe.models.base",
    "Tokenize": "babelprobe.models.base", "ChatMessage": "babelprobe.models.base",
    "GenerateResult": "babelprobe.models.base", "LogLikelihoodResult": "babelprobe.models.base",
    "NextTokenResult": "babelprobe.models.base", "HiddenStatesResult": "babelprobe.models.base",
    "TokenizeResult": "babelprobe.models.base",
    "request_key": "babelprobe.models.base", "load_backend": "babelprobe.models",
    # a backend's one declaration (its registry entry) and what it takes
    "BackendInfo": "babelprobe.models.registry", "BackendOptions": "babelprobe.models.registry",
    "ReplicaVariables": "babelprobe.models.registry", "LoadOptions": "babelprobe.models.registry",
    "ModelSpec": "babelprobe.models.model_spec",
    # data, statistics and report building blocks
    "DatasetError": "babelprobe.data.validation", "Problem": "babelprobe.data.validation",
    "read_rows": "babelprobe.data.tables", "bootstrap_ci": "babelprobe.analysis.bootstrap",
    "Cell": "babelprobe.analysis.bootstrap", "Section": "babelprobe.report.sections",
    "HtmlTable": "babelprobe.report.sections", "ItemTable": "babelprobe.report.sections",
    "ProfileMetric": "babelprobe.report.sections",
}
_RENAMED = {"HtmlTable": "Table"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'babelprobe' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
