"""The HTML report sections and language-profile metrics of CKA, OWL and ECLeKTiC (the profile
metrics of memorization, the sections of language similarity), built from a run's summary and
stored items only (the bodies of their ``Family.html_sections`` and ``Family.profile_metrics``)."""

from __future__ import annotations

import math

import pandas as pd

from babelprobe.analysis.cka import CKASummary, GroupAccuracy
from babelprobe.analysis.eclektic import EclekticSummary, Score, by_language
from babelprobe.analysis.memorization import MemorizationSummary, MetricCell
from babelprobe.analysis.owl import Cell, OwlSummary, error_category
from babelprobe.analysis.similarity import SimilaritySummary, neighbours
from babelprobe.report import figures as figs
from babelprobe.report.relations import relation_label
from babelprobe.report.sections import ItemTable, ProfileMetric, Section, Table, figure, pct, text


# --- CKA ---------------------------------------------------------------------------------------

def _accuracy_rows(rows: list[GroupAccuracy], label=str) -> list[list[str]]:
    return [[label(r.group), str(r.n), str(r.errors), pct(r.accuracy, r.ci_low, r.ci_high)] for r in rows]


def cka_sections(summary: CKASummary, items: pd.DataFrame) -> list[Section]:
    languages = Table("accuracy by language (%, 95% bootstrap CI)", ["language", "script", "n", "errors", "accuracy"],
                      [[r.group, r.script or ""] + row[1:] for r, row in zip(summary.languages,
                                                                              _accuracy_rows(summary.languages))])
    relations = Table("accuracy by relation (Wikidata property)", ["relation", "n", "errors", "accuracy"],
                      _accuracy_rows(sorted(summary.relations, key=lambda r: -r.n), relation_label))
    paragraphs = [f"mode {summary.mode}; a fact is known iff P(true) > mean P(false) (Polyglot-or-Not §3). "
                  f"Multilingual accuracy (mean of {len(summary.languages)} languages): "
                  f"{pct(summary.multilingual_accuracy)}% ± {pct(summary.multilingual_half_width)}."]
    if summary.script_test is not None:
        t = summary.script_test
        paragraphs.append(f"accuracy vs script: chi2 = {t.chi2:.2f}, dof = {t.dof}, p = {t.p_value:.3g}; "
                          + ", ".join(f"{s}: {k}/{k + u} known" for s, (k, u) in t.table.items()))
    cells = [Cell(group=r.group, n=r.n, errors=r.errors, value=r.accuracy, ci_low=r.ci_low, ci_high=r.ci_high)
             for r in summary.languages]
    bars = figs.grouped_bars_figure({"accuracy": cells}, [r.group for r in summary.languages],
                                    f"CKA accuracy by language ({summary.mode})", "accuracy %", 100.0)
    rows = []
    for r in items.itertuples(index=False):
        verdict = f"error: {r.error}" if r.error else ("known" if r.known else "not known")
        false_lp = [float(x) for x in r.logp_false] if r.logp_false is not None else []
        scores = (f"log P(true) {r.logp_true:.2f}; log P(false) " + ", ".join(f"{x:.2f}" for x in false_lp)
                  if r.logp_true is not None else "")
        rows.append([r.language, relation_label(r.relation), text(r.stems), text(r.false), scores, r.true, verdict])
    table = ItemTable(["language", "relation", "stems", "false objects", "model scores", "gold (true object)",
                       "verdict"], rows, filters=["language", "relation", "verdict"])
    return [Section("CKA summary", paragraphs, [languages, relations], [figure(bars)]),
            Section("items", ["every fact as scored: the stems, the candidate objects, the model's "
                              "log-probabilities and the verdict"], items=table)]


def cka_profile(summary: CKASummary) -> list[ProfileMetric]:
    return [ProfileMetric(f"CKA accuracy ({summary.mode})", r.group, 100 * r.accuracy, 100 * r.ci_low,
                          100 * r.ci_high, r.n) for r in summary.languages if r.n]


# --- OWL ---------------------------------------------------------------------------------------

def _owl_scale(task: str) -> float:
    return 1.0 if task == "prefix" else 100.0


def owl_sections(summary: OwlSummary, items: pd.DataFrame) -> list[Section]:
    groups = ("original", "official", "unseen")
    overview = Table("accuracy (%; chrF++ for prefix probing) with 95% bootstrap CIs",
                     ["task / perturbation", "n", "errors", "all"] + list(groups), [])
    by_language = []
    taxonomy = []
    for t in summary.tasks:
        scale = _owl_scale(t.task)
        cell = {c.group: c for c in t.by_group}
        overview.rows.append([f"{t.task} / {t.perturbation}", str(t.n), str(t.errors),
                              pct(t.overall.value, t.overall.ci_low, t.overall.ci_high, scale)]
                             + [pct(cell[g].value, cell[g].ci_low, cell[g].ci_high, scale) if g in cell and cell[g].n
                                else "-" for g in groups])
        by_language.append(Table(f"{t.task} / {t.perturbation} by language", ["language", "n", "errors", "value"],
                                 [[c.group, str(c.n), str(c.errors), pct(c.value, c.ci_low, c.ci_high, scale)]
                                  for c in t.by_language]))
        if t.errors_taxonomy:
            wrong = sum(t.errors_taxonomy.values())
            taxonomy.append(Table(f"{t.task} / {t.perturbation}: wrong answers (App. F taxonomy)",
                                  ["category", "count", "share"],
                                  [[k, str(v), f"{100 * v / wrong:.0f}%"] for k, v in t.errors_taxonomy.items()]))
        if t.frequent_wrong:
            taxonomy.append(Table(f"{t.task} / {t.perturbation}: most frequent wrong answers", ["language", "answers"],
                                  [[lang, ", ".join(f"{a} ({n})" for a, n in answers)]
                                   for lang, answers in t.frequent_wrong.items()]))
        if t.overlap:
            taxonomy.append(Table(f"{t.task} / {t.perturbation}: overlap with the reference", list(t.overlap),
                                  [[f"{v:.2f}" for v in t.overlap.values()]]))
    rows = []
    for r in items.itertuples(index=False):
        if r.error:
            verdict = f"error: {r.error}"
        elif r.task == "prefix":
            verdict = f"chrF++ {r.chrf_pp:.1f}"
        else:
            verdict = "correct" if r.correct else f"wrong: {error_category(pd.Series(r._asdict()))}"
        gold = r.reference if r.task == "prefix" else text(r.gold_titles if r.task == "direct" else r.gold_names)
        rows.append([f"{r.task}/{r.perturbation}", r.language, r.book_id, text(r.prompt), text(r.output), text(gold),
                     verdict])
    table = ItemTable(["task", "language", "book", "prompt", "model output", "gold", "verdict"], rows,
                      filters=["task", "language", "book"])
    return [Section("OWL summary", [f"passage lengths in {summary.tokenizer} tokens"], [overview] + by_language,
                    [figure(fig) for _, fig in figs.owl_figure_list(summary)]),
            Section("error taxonomy", tables=taxonomy),
            Section("items", ["every passage version as prompted, with the model's raw output"], items=table)]


def owl_profile(summary: OwlSummary) -> list[ProfileMetric]:
    out = []
    for t in summary.tasks:
        scale = _owl_scale(t.task)
        out += [ProfileMetric(f"OWL {t.task} ({t.perturbation})", c.group, scale * c.value, scale * c.ci_low,
                              scale * c.ci_high, c.n) for c in t.by_language if c.n]
    return out


# --- ECLeKTiC ----------------------------------------------------------------------------------

def _score(s: Score | None) -> str:
    if s is None or math.isnan(s.value):
        return "-"
    return f"{100 * s.value:.1f} ± {100 * s.margin:.1f}"


def eclektic_sections(summary: EclekticSummary, items: pd.DataFrame) -> list[Section]:
    metric = figs.eclektic_metric_name(summary)
    scores = Table("overall success and transfer score (%, 95% margin; ECLeKTiC Table 2)",
                   ["setting", "pairs", "errors", "judge: overall", "judge: transfer", "string: overall",
                    "string: transfer", "notebook string (compat): overall", "transfer"],
                   [[s.setting, str(s.string.overall.n), str(s.errors), _score(s.judge.overall if s.judge else None),
                     _score(s.judge.transfer if s.judge else None), _score(s.string.overall),
                     _score(s.string.transfer), _score(s.string_compat.overall), _score(s.string_compat.transfer)]
                    for s in summary.settings])
    scripts = Table(f"same- vs cross-script pairs ({metric}; §4.2)",
                    ["setting", "pairs", f"overall ({metric})", f"transfer ({metric})"],
                    [[s.setting + f" / {label}-script", str(t.overall.n), _score(t.overall), _score(t.transfer)]
                     for s in summary.settings for label, t in s.same_script.items()])
    paragraphs = [f"judges: {', '.join(summary.judges)} (majority vote)" if summary.judges
                  else "no judge: the string metric (word recall) only"]
    rows = []
    for r in items.itertuples(index=False):
        if r.error:
            verdict = f"error: {r.error}"
        else:
            verdict = f"recall {r.recall:.2f}"
            if getattr(r, "judge_correct", None) is not None:
                verdict = ("judge: correct" if r.judge_correct else "judge: not correct") + "; " + verdict
        rows.append([r.setting, f"{r.source_language} → {r.target_language}", r.target_language, text(r.prompt),
                     text(r.prediction), r.answer, text(getattr(r, "judge_answers", None)), verdict])
    table = ItemTable(["setting", "source → target", "target", "prompt", "model output", "gold", "judge answers",
                       "verdict"], rows, filters=["setting", "target", "verdict"])
    return [Section("ECLeKTiC summary", paragraphs, [scores, scripts],
                    [figure(fig) for _, fig in figs.eclektic_figure_list(summary)]),
            Section("items", ["every (question, target language, setting) with the model's answer"], items=table)]


def eclektic_profile(summary: EclekticSummary, items: pd.DataFrame) -> list[ProfileMetric]:
    out = []
    metric = "judge" if summary.settings and summary.settings[0].judge else "string"
    for setting, group in items.groupby("setting", sort=False):
        for lang, roles in by_language(group).items():
            for role, scores in roles.items():
                out += [_metric(f"ECLeKTiC {name} {role} ({setting}, {metric})", lang, getattr(scores, name))
                        for name in ("overall", "transfer")]
    return [m for m in out if not math.isnan(m.value)]


def _metric(name: str, language: str, s: Score) -> ProfileMetric:
    margin = 0.0 if math.isnan(s.margin) else s.margin
    return ProfileMetric(name, language, 100 * s.value, 100 * max(0.0, s.value - margin),
                         100 * min(1.0, s.value + margin), s.n)


# --- memorization ------------------------------------------------------------------------------

# summary metric -> (profile name, scale, on the 0-100 scale): EM as a rate, RM (BLEU, ROUGE-L) in
# 0-1, PM a log-probability (Shared Path §3.1), shown as it is and left out of the heatmap
MEMORIZATION_PROFILE = {"EM": ("EM %", 100.0, True), "BLEU": ("RM BLEU", 100.0, True),
                        "ROUGE-L": ("RM ROUGE-L", 100.0, True), "PM": ("PM (log Pr)", 1.0, False)}


def memorization_profile(summary: MemorizationSummary) -> list[ProfileMetric]:
    """Per language at the longest prompt length at which a sample was scored (the one
    ``memorization.csv`` holds): EM, RM and PM of the real suffix with their bootstrap CIs; the
    shuffled-suffix controls stay in the run report."""
    longest = max((r.prefix_tokens for r in summary.by_language if r.scored), default=None)
    if longest is None:
        return []
    out = []
    for row in (r for r in summary.by_language if r.prefix_tokens == longest):
        for name, (label, scale, percent) in MEMORIZATION_PROFILE.items():
            pair = row.metrics.get(name)
            if pair is not None and pair.real.n:
                real = pair.real
                out.append(ProfileMetric(f"memorization {label} ({longest}-token prompt)", row.language,
                                         scale * real.value, scale * real.ci_low, scale * real.ci_high, real.n,
                                         percent=percent))
    return out


def memorization_sections(summary: MemorizationSummary, items: pd.DataFrame) -> list[Section]:
    """Table 4 (per prompt length) and the per-language table, each cell 'real (95% CI) /
    control'; RM by language with its control at the longest prompt length that scored; every
    sample with its prompt, the model's continuation and the true suffix."""

    def cell(row, name: str, scale: float) -> str:
        pair = row.metrics.get(name)
        if pair is None:
            return "-"
        control = f" / {scale * pair.control.value:.2f}" if pair.control is not None else ""
        return f"{scale * pair.real.value:.2f} ({scale * pair.real.ci_low:.2f}-{scale * pair.real.ci_high:.2f}){control}"

    metrics = [("EM %", "EM", 100.0), ("BLEU", "BLEU", 100.0), ("ROUGE-L", "ROUGE-L", 100.0), ("PM", "PM", 1.0),
               ("PM per token", "PM-mean", 1.0), ("Min-K%", "Min-K", 1.0)]
    metrics = [m for m in metrics if any(m[1] in r.metrics for r in summary.overall)]
    columns = ["prompt tokens", "scored", "too short", "errors", *(m[0] for m in metrics)]
    tables = [Table("by prompt length: real (95% CI) / control (suffix word-shuffled)", columns,
                    [[str(r.prefix_tokens), str(r.scored), str(r.too_short), str(r.errors),
                      *(cell(r, n, k) for _, n, k in metrics)] for r in summary.overall]),
              Table("by language", ["language", *columns],
                    [[r.language, str(r.prefix_tokens), str(r.scored), str(r.too_short), str(r.errors),
                      *(cell(r, n, k) for _, n, k in metrics)] for r in summary.by_language])]
    figures = []
    longest = max((r.prefix_tokens for r in summary.by_language if r.scored), default=None)
    rows = [r for r in summary.by_language if r.prefix_tokens == longest and "ROUGE-L" in r.metrics]
    if rows:
        def bar(r, pair: MetricCell | None) -> Cell:
            return Cell(group=r.language, n=pair.n if pair else 0, errors=0, value=pair.value if pair else 0.0,
                        ci_low=pair.ci_low if pair else 0.0, ci_high=pair.ci_high if pair else 0.0)

        series = {"real suffix": [bar(r, r.metrics["ROUGE-L"].real) for r in rows],
                  "control (shuffled)": [bar(r, r.metrics["ROUGE-L"].control) for r in rows]}
        figures.append(figure(figs.grouped_bars_figure(series, [r.language for r in rows],
                                                       f"RM (ROUGE-L) by language, {longest}-token prompt",
                                                       "ROUGE-L x 100", 100.0)))
    samples = []
    for r in items.itertuples(index=False):
        if r.status != "scored":
            verdict = f"error: {r.error}" if r.status == "error" else r.status.replace("_", " ")
        else:
            verdict = (f"EM {'yes' if r.exact_match else 'no'}; ROUGE-L {100 * r.rouge_l:.1f}; PM {r.pm:.1f}"
                       + (f" (control {r.control_pm:.1f})" if r.control_pm is not None and r.control_pm == r.control_pm
                          else ""))
        samples.append([r.language, str(r.sample_id), str(r.prefix_tokens), text(r.prefix_text),
                        text(r.generated_text), text(r.suffix_text), verdict])
    table = ItemTable(["language", "sample", "prompt tokens", "prompt", "model output", "gold (true suffix)",
                       "verdict"], samples, filters=["language", "prompt tokens"])
    return [Section("Memorization (Shared Path §3, Table 4)", tables=tables, figures=figures),
            Section("items", ["every sample at every prompt length: the prompt, the model's greedy continuation "
                              "and the true suffix"], items=table)]


# --- language similarity -----------------------------------------------------------------------

def similarity_sections(summary: SimilaritySummary, items: pd.DataFrame) -> list[Section]:
    """Shared Path §4.1 / App. B.4: the final layer's matrix (heatmap) with each language's
    nearest and farthest languages, the typology correlation per layer (Figs. 5-8), and the
    parallel sentences that were encoded."""
    from babelprobe.report.graph_figures import similarity_heatmap_figure, typology_by_layer_figure

    final = summary.layer()
    rows = [[str(r.id), r.language, r.text, f"error: {r.error}" if r.error else ""] for r in items.itertuples(index=False)]
    table = ItemTable(["id", "language", "sentence", "error"], rows, filters=["language"])
    if final is None:  # every sentence (of all but one language) errored: the counts and the items
        return [Section("Language similarity (Shared Path §4.1, App. B.4)",
                        [f"no matrix: {summary.undefined_reason}",
                         "errors per language: " + ", ".join(f"{k} {v}" for k, v in summary.errors.items())]),
                Section("items", ["every parallel sentence whose hidden states were pooled"], items=table)]
    near = neighbours(final)
    nearest = Table(f"layer {final.layer}: each language's most and least similar languages (cosine in the "
                    f"language-specific subspace, rank {summary.rank})",
                    ["language", "sentences", "most similar", "least similar"],
                    [[lang, str(summary.n_sentences.get(lang, 0)), ", ".join(f"{o} {v:.2f}" for o, v in others[:3]),
                      ", ".join(f"{o} {v:.2f}" for o, v in others[-2:])] for lang, others in near.items()])
    figures = [figure(similarity_heatmap_figure(final.as_matrix(), f"layer {final.layer}, rank {summary.rank}"))]
    tables = [nearest]
    if summary.typology:
        features = sorted({t.features for t in summary.typology})
        cells = {(t.layer, t.features): t for t in summary.typology}
        tables.append(Table(f"Pearson r with {summary.typology_source} similarity over language pairs, per layer",
                            ["layer", *features],
                            [[str(layer), *("-" if cells[layer, f].pearson_r is None else
                                            f"{cells[layer, f].pearson_r:+.2f} (pairs {cells[layer, f].n_pairs})"
                                            for f in features)] for layer in summary.layers]))
        if len(summary.layers) > 1:
            figures.append(figure(typology_by_layer_figure([t.model_dump() for t in summary.typology],
                                                           f"model vs {summary.typology_source} similarity")))
    paragraphs = [f"{len(summary.languages)} languages, {sum(summary.n_sentences.values())} sentences, "
                  f"layers {', '.join(map(str, summary.layers))}"]
    unknown = {k: v for k, v in summary.typology_unknown_languages.items() if v}
    if unknown:
        paragraphs.append("not in " + summary.typology_source + ": " +
                          "; ".join(f"{k}: {', '.join(v)}" for k, v in unknown.items()))
    return [Section("Language similarity (Shared Path §4.1, App. B.4)", paragraphs, tables, figures),
            Section("items", ["every parallel sentence whose hidden states were pooled"], items=table)]
