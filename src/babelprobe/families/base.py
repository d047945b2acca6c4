"""What a probe family is: everything ``pipeline.run`` and the commands need to know about it.

A family subclasses ``Family`` in its own module (``families/<name>.py``) and is registered by
name in ``families/__init__.py``. The pipeline drives every family the same way:

    load(config) -> items                     validate; apply --langs and --limit
    plans(config, backend, items) -> [Plan]   which probe runs on which items
    second_stage (optional)                   models that rule on the answers (judges)
    summarise(stored items, config)           from items.parquet only
    write_outputs(summary, config)            files other commands read (optional)
    print_summary / figures / compare         report and plots from the summary
    html_sections / profile_metrics (optional) the HTML run report and the language profile
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Sequence, TypeVar

from pydantic import BaseModel

from babelprobe.config import RunOptions

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from babelprobe.models.base import Backend
    from babelprobe.report.sections import ProfileMetric, Section
    from babelprobe.runner import Probe, Runner
    from babelprobe.store import Manifest

Config = TypeVar("Config", bound=RunOptions)


@dataclass(frozen=True)
class BundledDataset:
    """A dataset shipped in ``data/bundled/`` (listed by ``babelprobe datasets``)."""

    name: str
    path: Path
    description: str


@dataclass
class Plan:
    """One probe over some items; the pipeline runs it with ``run_probe`` through one Runner.
    ``label`` prefixes the plan's timings in the manifest (None: a family with one plan)."""

    probe: Probe
    items: Sequence[Any]
    label: str | None = None

    @property
    def request_kinds(self) -> frozenset[str]:
        return frozenset(getattr(self.probe, "request_kinds", ()))


@dataclass(frozen=True)
class DemoRun:
    title: str
    config: RunOptions


Pairs = list[tuple[Any, BaseModel]]  # (item, record), in items.parquet order


@dataclass(frozen=True)
class SecondStage(Generic[Config]):
    """Models that rule on the first stage's records (ECLeKTiC's judges).

    ``models(config)`` names them (model specs; the pipeline loads each once), ``run`` returns
    the pairs with updated records; its requests go in batches of ``batch_size(config)`` (default:
    the run's ``batch_size``). Its time goes into the manifest under ``name``."""

    name: str
    models: Callable[[Config], list[str]]
    run: Callable[[Config, Pairs, list["Backend"], Callable[["Backend"], "Runner"]], Pairs]
    request_kinds: frozenset[str] = field(default_factory=frozenset)
    batch_size: Callable[[Config], int] | None = None


class Family(Generic[Config]):
    """Base class of a probe family. Subclasses set the class attributes and implement the
    abstract methods; the optional hooks default to 'none'."""

    name: ClassVar[str]  # the `run` subcommand and manifest.probe
    help: ClassVar[str]  # first line of `run <name> --help`
    config: ClassVar[type[RunOptions]]  # its fields with `option(...)` become the CLI flags
    item_noun: ClassVar[str]  # what --limit and the error messages count: "facts", "passages"
    datasets: ClassVar[tuple[BundledDataset, ...]] = ()
    second_stage: ClassVar[SecondStage | None] = None
    comparable: ClassVar[bool] = False  # implements compare()

    def load(self, config: Config) -> list[Any]:
        """Load and validate ``config.data`` (DatasetError naming file, row, field), then apply
        ``--langs`` and ``--limit``."""
        raise NotImplementedError

    def describe(self, items: list[Any]) -> str:
        """One line for ``babelprobe validate``: what was found."""
        raise NotImplementedError

    def plans(self, config: Config, backend: Backend, items: list[Any]) -> list[Plan]:
        raise NotImplementedError

    def summarise(self, items: pd.DataFrame, config: Config) -> BaseModel:
        """The summary.json model, from the stored items only."""
        raise NotImplementedError

    def print_summary(self, summary: BaseModel, manifest: Manifest | None, console: Console) -> None:
        raise NotImplementedError

    def demo(self, out: Path, model: str, device: str) -> list[DemoRun]:
        """The runs ``babelprobe demo`` makes on the bundled data (each in its own folder of ``out``)."""
        return []

    def write_outputs(self, summary: BaseModel, config: Config) -> list[Path]:
        """Files other commands read, written next to the results after every run
        (e.g. similarity.csv for ``babelprobe graph``)."""
        return []

    def figures(self, summary: BaseModel, out: Path) -> list[Path]:
        """Figures written next to the results when the config has ``figures`` on."""
        return []

    def manifest_fields(self, config: Config) -> dict[str, Any]:
        """Extra manifest fields (e.g. OWL's length tokenizer)."""
        return {}

    def html_sections(self, summary: BaseModel, items: pd.DataFrame, manifest: Manifest) -> list[Section]:
        """The family's part of ``babelprobe report RUN --html``: tables, figures, the items
        (report/sections.py records; the page escapes all their text)."""
        return []

    def profile_metrics(self, summary: BaseModel, items: pd.DataFrame) -> list[ProfileMetric]:
        """Per-language values of the family's metrics for ``babelprobe profile`` (none: the
        family adds no columns)."""
        return []

    def compare(self, a: BaseModel, b: BaseModel, console: Console) -> None:
        """``babelprobe compare A B``: print B - A of two summaries (only where ``comparable``)."""
        raise NotImplementedError


def sample_groups(items: list, key: Callable[[Any], Any], limit: int | None, seed: int) -> list:
    """Keep ``limit`` groups (a question, a passage: all their language versions), seeded."""
    groups = sorted({key(i) for i in items})
    if limit is None or limit >= len(groups):
        return items
    keep = set(random.Random(seed).sample(groups, limit))
    return [i for i in items if key(i) in keep]
