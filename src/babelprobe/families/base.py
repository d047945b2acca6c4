"""What a probe family is: everything ``execute_run.run`` and the commands need to know about it.

A family lives in its own folder, ``families/<name>/`` (config, data, probe, metrics, analysis,
report, commands, release), subclasses ``Family`` in ``family.py`` and is registered by name in
``families/__init__.py`` or through the ``babelprobe.families`` entry point group. The pipeline
drives every family the same way:

    load(config) -> items                     validate; apply --langs and --limit
    stages(config) -> [Stage]                 what is answered, by which model, in which order:
                                              by default one stage, "answer", running plans()
    summarise(stored items, config)           from items.parquet only
    write_outputs(summary, config)            files other commands read (optional)
    print_summary / figures / compare         report and plots from the summary
    html_sections / profile_metrics (optional) the HTML run report and the language profile
    commands(root)                            the family's own commands (optional)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Iterable, Sequence, TypeVar

from pydantic import BaseModel

from babelprobe.config import RunOptions
from babelprobe.data.corpus import DOCUMENT_RULE
from babelprobe.data.validation import DatasetError, Problem

if TYPE_CHECKING:
    import pandas as pd
    import typer
    from rich.console import Console

    from babelprobe.data.releases import Release
    from babelprobe.models.base import Backend, Request
    from babelprobe.report.sections import ProfileMetric, Section
    from babelprobe.request_runner import Outcome, Probe
    from babelprobe.store import Manifest

Config = TypeVar("Config", bound=RunOptions)
Pairs = list[tuple[Any, BaseModel]]  # (item, record), in items.parquet order


@dataclass(frozen=True)
class BundledDataset:
    """A dataset shipped in ``data/bundled/`` (listed by ``babelprobe datasets``)."""

    name: str
    path: Path
    description: str


@dataclass
class Plan:
    """One probe over some items; the pipeline runs it with ``run_probe`` in the stage that made it.
    ``label`` prefixes the plan's timings in the manifest (None: a family with one plan)."""

    probe: Probe
    items: Sequence[Any]
    label: str | None = None

    @property
    def request_kinds(self) -> frozenset[str]:
        return frozenset(getattr(self.probe, "request_kinds", ()))


Result = TypeVar("Result", bound=BaseModel)


def response_of(outcome: Outcome, kind: type[Result]) -> Result:
    """The response of an outcome that did not fail, as the result type its request's kind answers
    (a ``loglikelihood`` request: ``LogLikelihoodResult``...). TypeError if it is another: a backend
    answered with the wrong kind, a bug to say, never a value to read."""
    if not isinstance(outcome.response, kind):
        raise TypeError(f"expected a {kind.__name__}, got {type(outcome.response).__name__} "
                        f"(error: {outcome.error})")
    return outcome.response


class StageContext:
    """What a stage's ``run`` may use; the pipeline makes one per stage. Every request goes through
    the run's one response cache, its executor (for the model under test) and its progress display,
    and is counted in the stage's record in ``manifest.stages``."""

    backends: list[Backend]  # the stage's models, loaded, in the order Stage.models gave them

    @property
    def backend(self) -> Backend:
        return self.backends[0]

    def answer(self, requests: Iterable[Request], backend: Backend | None = None) -> dict[str, Outcome]:
        """Answer requests with ``backend`` (default: the stage's first model), keyed by request_key."""
        raise NotImplementedError

    def run_plans(self, plans: list[Plan]) -> Pairs:
        """Run each plan's probe over its items (``runner.run_probe``): (item, record) pairs, in order."""
        raise NotImplementedError


@dataclass(frozen=True)
class Stage(Generic[Config]):
    """One step of a run. ``run(config, previous, context)`` turns the previous stage's result (the
    loaded items, for the first stage) into this stage's; the last stage returns the (item,
    record) pairs that are stored. ``request_kinds`` are checked against every model of the stage
    before the run's first request. ``models`` names the stage's models (None: the model under
    test); ``batch_size`` its batches (None: the run's --batch-size). A stage whose ``models`` give
    none is skipped with its input passed on."""

    name: str
    request_kinds: Callable[[Config], frozenset[str]]
    run: Callable[[Config, Any, StageContext], Any]
    models: Callable[[Config], list[str]] | None = None
    batch_size: Callable[[Config], int] | None = None

    def model_specs(self, config: Config) -> list[str]:
        return [config.model] if self.models is None else list(self.models(config))


@dataclass
class Parts:
    """A run's items one part at a time (``--parts``): the keys in run order, the items' sources
    (``file:row``; one a file is enough for the manifest's data_files), what ``run`` says first
    (``input_notes``), and ``items(key)``: that part's items, asked for once, in ``keys`` order."""

    keys: list[str]
    sources: set[str]
    notes: list[str]
    items: Callable[[str], list]
    close: Callable[[], None] = lambda: None
    # True: parts/<key>.parquet with their stamps, resumed by the next run (--parts language);
    # False: chunks of a --parts none run, appended to items.parquet as each finishes, never resumed (load_chunks)
    resumable: bool = True


class Family(Generic[Config]):
    """Base class of a probe family. Subclasses set the class attributes and implement ``load``,
    ``describe``, ``summarise``, ``print_summary`` and either ``plans`` + ``request_kinds`` (one
    stage) or ``stages``; the optional hooks default to 'none'."""

    name: ClassVar[str]  # the `run` subcommand and manifest.probe
    help: ClassVar[str]  # first line of `run <name> --help`
    config: ClassVar[type[RunOptions]]  # its fields with `option(...)` become the CLI flags
    item_noun: ClassVar[str]  # what --limit and the error messages count: "facts", "passages"
    datasets: ClassVar[tuple[BundledDataset, ...]] = ()
    releases: ClassVar[tuple[Release, ...]] = ()  # public releases `datasets fetch` converts for it
    comparable: ClassVar[bool] = False  # implements compare()

    def load(self, config: Config) -> list[Any]:
        """Load and validate ``config.data`` (DatasetError naming file, row, field), then apply
        ``--langs`` and ``--limit``."""
        raise NotImplementedError

    def describe(self, items: list[Any]) -> str:
        """One line for ``babelprobe validate``: what was found."""
        raise NotImplementedError

    def input_notes(self, items: list[Any]) -> list[str]:
        """What ``run`` says before it starts: what it took from outside the rows (e.g. a language
        from a file name); nothing by default."""
        return []

    def flagged(self, items: list[Any]) -> list[Problem]:
        """Items that load but are left out of the scores (``babelprobe validate`` lists them, each
        with file, row and field); none by default."""
        return []

    def request_kinds(self, config: Config) -> frozenset[str]:
        """The request kinds ``plans`` will send (checked before any request)."""
        raise NotImplementedError

    def plans(self, config: Config, backend: Backend, items: list[Any]) -> list[Plan]:
        raise NotImplementedError

    def stages(self, config: Config) -> list[Stage]:
        """The run's stages, in order. Default: one stage, "answer", running ``plans``."""
        return [Stage("answer", self.request_kinds,
                      lambda config, items, context: context.run_plans(self.plans(config, context.backend, items)))]

    def summarise(self, items: pd.DataFrame, config: Config) -> BaseModel:
        """The summary.json model, from the stored items only."""
        raise NotImplementedError

    def summarise_stored(self, run_dir: Path, config: Config) -> BaseModel:
        """The summary of a run directory's items.parquet (what the pipeline and ``report`` call):
        ``summarise`` of its ``summary_columns``. A family whose runs grow large reads them a
        column at a time instead (memorization), to the same numbers."""
        from babelprobe import store

        return self.summarise(store.read_items(run_dir, self.summary_columns(config)), config)

    def summary_columns(self, config: Config) -> list[str] | None:
        """The items columns ``summarise`` reads (None: all); the pipeline and ``report`` read only
        these from items.parquet, so that a large run's per-item detail is not loaded to summarise it."""
        return None

    def print_summary(self, summary: BaseModel, manifest: Manifest | None, console: Console) -> None:
        raise NotImplementedError

    def smoke_config(self, out: Path) -> RunOptions:
        """The smallest real run of the family (a few items, one model call each where it can),
        written to ``out``: the configuration the family contract tests run for every registered
        family (tests/test_families.py, tests/test_html_report.py). Every family must give one."""
        raise NotImplementedError(f"family {self.name!r} gives no smoke_config (see families/base.py)")

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

    def load_parts(self, config: Config, part_of: Callable[[Any], str]) -> Parts:
        """``--parts``: the items part by part. Default: every item loaded (``load_items``) and
        grouped by ``part_of``; a family whose inputs are large streams them instead."""
        items = load_items(self, config)
        groups: dict[str, list] = {}
        for item in items:
            groups.setdefault(part_of(item), []).append(item)
        return Parts(keys=list(groups), sources={str(i.source) for i in items}, notes=self.input_notes(items),
                     items=groups.pop)

    def load_chunks(self, config: Config) -> Parts | None:
        """``--parts none``: the items in chunks of a fixed size, run and written one chunk at a
        time (``Parts`` with ``resumable`` False: memory flat in the run's size, items.parquet as
        one run writes it), or None: every item at once (the default)."""
        return None

    def part_of(self, config: Config) -> Callable[[Any], str] | None:
        """The key items are run and written by, one part at a time (``parts/<key>.parquet``;
        resumable), or None: all at once. Default: per language with ``--parts language``."""
        if getattr(config, "parts", "none") == "language":
            return lambda item: str(item.language)
        return None

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

    def compare_runs(self, a: BaseModel, b: BaseModel, items_a: pd.DataFrame, items_b: pd.DataFrame,
                     console: Console) -> None:
        """``babelprobe compare A B [C ...]`` for each B: what ``compare`` prints by default; a
        family that matches items overrides this to print paired CIs (analysis/compare.py)."""
        self.compare(a, b, console)

    def demo_steps(self, out: Path) -> list[tuple[str, Callable[[], None]]]:
        """(title, step) run by ``babelprobe demo`` after every family's demo runs (e.g. Shared
        Path's graph over the similarity and memorization runs)."""
        return []

    def commands(self, root: CommandRoot) -> None:
        """Add the family's own commands (``babelprobe graph ...``, ``babelprobe rescore owl``)."""


# command groups several families add commands to, declared here once (their help; cli.py's
# FAMILY_COMMANDS lists these same texts): CommandRoot.group makes each on first use
SHARED_GROUPS = {
    "rescore": "Score released or saved predictions without a model.",
    # `corpus sample` (memorization), `corpus index` / `corpus presence` (owl): one reader, one rule
    "corpus": "Corpus tools: memorization samples (Shared Path §5.2), passage presence in a corpus (OWL Figs. 9-10)."
              "\n\n" + DOCUMENT_RULE,
}


@dataclass
class CommandRoot:
    """Where a family's commands go: the ``babelprobe`` app, and command groups, made on first
    use: a shared one (``SHARED_GROUPS``) by name alone, a family's own one declared once with its
    help (a second declaration with another help is refused: the help shown would depend on the
    order families load in)."""

    app: typer.Typer
    add_run_command: Callable[[Family, typer.Typer], None]  # `run <family>` again under another group
    _groups: dict[str, typer.Typer] = field(default_factory=dict)

    def group(self, name: str, help: str | None = None) -> typer.Typer:
        if help is None:
            if name not in SHARED_GROUPS:
                raise ValueError(f"command group {name!r} needs its help (shared groups: {', '.join(SHARED_GROUPS)})")
            help = SHARED_GROUPS[name]
        elif name in SHARED_GROUPS:
            raise ValueError(f"command group {name!r} is shared: its help is families/base.py SHARED_GROUPS")
        if name not in self._groups:
            import typer

            self._groups[name] = typer.Typer(help=help, no_args_is_help=True)
            self.app.add_typer(self._groups[name], name=name)
        elif self._groups[name].info.help != help:
            raise ValueError(f"command group {name!r} declared twice, as {self._groups[name].info.help!r} "
                             f"and as {help!r}: declare it once and pass it on")
        return self._groups[name]


@dataclass(frozen=True)
class DemoRun:
    title: str
    config: RunOptions


def load_items(family: Family, config: RunOptions) -> list:
    """The family's validated items; an empty result (an empty file, or --langs keeping nothing) is
    a DatasetError naming the file and the filter, for every family."""
    items = family.load(config)
    if items:
        return items
    if config.langs and family.load(config.model_copy(update={"langs": None})):
        message = f"no {family.item_noun} left after --langs {','.join(config.langs)}"
    else:
        message = f"no {family.item_noun}: the dataset is empty"
    raise DatasetError([Problem(str(config.data), None, None, message)])


def sample_groups(items: list, key: Callable[[Any], Any], limit: int | None, seed: int) -> list:
    """Keep ``limit`` groups (a question, a passage: all their language versions), seeded."""
    groups = sorted({key(i) for i in items})
    if limit is None or limit >= len(groups):
        return items
    keep = set(random.Random(seed).sample(groups, limit))
    return [i for i in items if key(i) in keep]
