"""Self-contained HTML pages from stored runs: ``babelprobe report RUN --html`` (one run) and
``babelprobe profile RUN... --html OUT`` (a language profile per model).

Rendered with Jinja2 and autoescaping: every string from a run (model outputs, dataset text,
config) is escaped by the template, never concatenated into markup. Figures are matplotlib SVGs
in ``<img src="data:...">`` (vector, offline, and an image cannot run script); the only script is
the page's own filter/sort code, which reads cell text and never writes markup."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd
from jinja2 import Environment, PackageLoader

from babelprobe import store
from babelprobe.languages import language_name
from babelprobe.text.scripts import language_script
from babelprobe.analysis.bootstrap import SMALL_N, small_n
from babelprobe.report.figures import heatmap_figure
from babelprobe.report.lang_family import families_of, family_note
from babelprobe.report.sections import ProfileMetric, figure
from babelprobe.stored_runs import RunError, StoredRun, read_run



@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=PackageLoader("babelprobe.report", "templates"), autoescape=True,
                       trim_blocks=True, lstrip_blocks=True)


def read_for_report(run_dir: Path) -> tuple[StoredRun, pd.DataFrame]:
    """What a run's report and the profile read of it: the run (summary recomputed) and its items."""
    return read_run(run_dir), store.read_items(run_dir)


def run_report(run_dir: Path, out: Path | None = None, read: tuple[StoredRun, pd.DataFrame] | None = None) -> Path:
    """Write the run's HTML report (default ``RUN_DIR/report.html``) from its stored files only
    (``read``: ``read_for_report(run_dir)``, when the caller has it already)."""
    stored, items = read if read is not None else read_for_report(run_dir)
    manifest = stored.manifest
    sections = stored.family.html_sections(stored.summary, items, manifest)
    r = manifest.requests
    facts = [("probe", manifest.probe), ("model", manifest.model.spec), ("weights", manifest.model.weights),
             ("dtype / device", f"{manifest.model.dtype} / {manifest.model.device}"),
             ("judges", ", ".join(j.spec for j in manifest.judges) or "-"),
             ("items / errors", f"{manifest.items} / {manifest.errors}"),
             ("requests", f"{r.unique} unique, {r.cached} cached, {r.computed} computed, {r.failed} failed"),
             ("data files", ", ".join(f"{p} (sha256 {h[:12]})" for p, h in manifest.data_files.items())),
             ("created", manifest.created), ("git revision", manifest.git_revision or "-"),
             ("seed", str(manifest.seed)), ("time", f"{manifest.timings.get('total', 0):.1f} s"),
             ("command", " ".join(manifest.command))]
    title = f"babelprobe report: {manifest.probe} on {manifest.model.spec}"
    page = _environment().get_template("run.html.j2").render(title=title, facts=facts, sections=sections)
    out = out or Path(run_dir) / "report.html"
    out.write_text(page, encoding="utf-8")
    return out


@dataclass(frozen=True)
class ProfileCell:
    value: float
    low: float
    high: float
    n: float  # an effective n may not be whole
    note: str = ""  # measured otherwise than the column says (ProfileMetric.note)

    @property
    def small(self) -> bool:
        return small_n(self.n)


@dataclass(frozen=True)
class ProfileRow:
    """One language's row of the profile table (``profile.html.j2``): a cell per metric, None where
    no run of the model measured it."""

    language: str
    name: str
    script: str
    family: str
    cells: list[ProfileCell | None]


def _not_a_run(run_dir: Path, exc: Exception) -> str:
    """Why ``run_dir`` is no probe run, in words (``runs/*`` also matches a graph folder, notes...)."""
    path = Path(run_dir)
    if path.is_file():
        return f"{path}: a file, not a run folder"
    if path.is_dir() and not (path / store.MANIFEST).exists() and (path / "graph.json").is_file():
        return f"{path}: a `graph correlate` output (graph.json), not a probe run"
    return str(exc)


def profile_report(run_dirs: list[Path], out: Path, on_skip: Callable[[str], None] | None = None,
                   read: Mapping[Path, tuple[StoredRun, pd.DataFrame]] | None = None) -> Path:
    """One page: per model (manifest.model.spec), languages x probe metrics with CIs, script,
    language family, sortable, and a heatmap of the same table. With ``on_skip``, a folder that is
    no readable probe run (README's ``profile runs/*`` also matches the demo's graph folder) is
    passed over, its reason given to ``on_skip``; RunError if none is left. Without, it is an error.
    ``read``: runs the caller has read already (``read_for_report``), by folder."""
    readable = []
    for run_dir in run_dirs:
        try:
            stored, items = read[Path(run_dir)] if read is not None and Path(run_dir) in read else \
                read_for_report(run_dir)
            readable.append((Path(run_dir), stored, items))
        except (FileNotFoundError, ValueError) as exc:
            if on_skip is None:
                raise
            on_skip(_not_a_run(run_dir, exc))
    if not readable:
        raise RunError(f"no probe run among the {len(run_dirs)} folder(s) given: nothing to profile")
    metrics: dict[str, dict[str, dict[str, ProfileCell]]] = defaultdict(dict)  # model -> metric -> lang -> cell
    off_scale: set[str] = set()  # metrics not in percent (memorization PM): in the table, not the heatmap
    sources: dict[str, list[str]] = defaultdict(list)
    for run_dir, stored, items in readable:
        model = stored.manifest.model.spec
        sources[model].append(str(run_dir))
        got: list[ProfileMetric] = stored.family.profile_metrics(stored.summary, items)
        taken = set(metrics[model])  # a metric an earlier run of this model already gave: name the run
        for m in got:
            name = f"{m.metric} [{run_dir.name}]" if m.metric in taken else m.metric
            metrics[model].setdefault(name, {})[m.language] = ProfileCell(m.value, m.low, m.high, m.n, m.note)
            if not m.percent:
                off_scale.add(name)
    models = []
    for model, by_metric in metrics.items():
        names = list(by_metric)
        languages = sorted({lang for cells in by_metric.values() for lang in cells})
        families = families_of(languages)
        rows = [ProfileRow(lang, language_name(lang), language_script(lang) or "", families[lang],
                           [by_metric[name].get(lang) for name in names]) for lang in languages]
        on_scale = [name for name in names if name not in off_scale]
        heat = heatmap_figure({row.language: {name: c.value for name, c in zip(names, row.cells) if c is not None}
                               for row in rows},
                              f"{model}: language profile", rows_label="language", columns_label="metric",
                              square=False, scale=1.0, columns=on_scale, rows=languages,
                              counts={row.language: {name: c.n for name, c in zip(names, row.cells) if c is not None}
                                      for row in rows}) if on_scale else None
        models.append({"spec": model, "metrics": names, "rows": rows, "runs": sources[model],
                       "heatmap": figure(heat) if heat is not None else None})
    page = _environment().get_template("profile.html.j2").render(
        title="babelprobe language profile: " + ", ".join(metrics) if metrics else "babelprobe language profile",
        models=models, family_note=family_note(), small_n=SMALL_N)
    out.write_text(page, encoding="utf-8")
    return out


def write_demo_reports(out_root: Path) -> list[Path]:
    """After ``babelprobe demo``: report.html in every finished run folder of ``out_root``, then
    ``out_root/profile.html`` over all of them. Returns the paths written."""
    run_dirs = sorted(d for d in Path(out_root).iterdir() if (d / store.MANIFEST).is_file())
    # each run read (and its summary recomputed) once, for its page and the profile alike
    read = {d: read_for_report(d) for d in run_dirs}
    paths = [run_report(d, read=read[d]) for d in run_dirs]
    if run_dirs:
        paths.append(profile_report(run_dirs, Path(out_root) / "profile.html", read=read))
    return paths
