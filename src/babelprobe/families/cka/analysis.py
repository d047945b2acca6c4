"""CKA summaries from stored items (Polyglot-or-Not §5, Tables 1-3): per-language accuracy with
95% bootstrap CIs, the multilingual mean, a chi-squared test of accuracy against script, and
accuracy by relation."""

from __future__ import annotations

import math

import pandas as pd
from pydantic import BaseModel
from scipy import stats

from babelprobe.analysis.bootstrap import bootstrap_ci


class GroupAccuracy(BaseModel):
    group: str
    n: int
    errors: int
    accuracy: float
    ci_low: float
    ci_high: float
    half_width: float
    script: str | None = None
    excluded: int = 0  # facts left out: a false object equals the true one (never knowable)
    degenerate: bool = False  # every fact known or none (or n <= 1): the +/- 0 is not a measured CI


class ScriptTest(BaseModel):
    """Chi-squared test of independence between a language's script and fact recall (§5)."""

    chi2: float
    p_value: float
    dof: int
    table: dict[str, list[int]]  # script -> [known, not known]


class ExcludedFact(BaseModel):
    """A fact loaded but left out of every score, and why (data.same_as_true)."""

    fact_id: str
    language: str
    reason: str


class CKASummary(BaseModel):
    mode: str
    n_items: int
    n_errors: int
    languages: list[GroupAccuracy]
    multilingual_accuracy: float  # plain mean of the per-language accuracies (Table 1)
    # mean of the per-language 95% half-widths (Table 1), over the languages whose CI is not degenerate
    multilingual_half_width: float
    script_test: ScriptTest | None
    relations: list[GroupAccuracy]
    # languages left out of multilingual_half_width: their "+/- 0" would shrink it (all of them: it is 0)
    degenerate_languages: list[str] = []
    # facts whose false object equals the true one: in n_items, in no accuracy, n or CI
    n_excluded: int = 0
    excluded: list[ExcludedFact] = []


def _excluded(items: pd.DataFrame) -> pd.Series:
    """Rows left out of the scores (runs stored before the column existed have none)."""
    if "excluded" not in items.columns:
        return pd.Series(False, index=items.index)
    return items["excluded"].notna()


def _group_accuracy(name: str, group: pd.DataFrame, n_resamples: int, seed: int) -> GroupAccuracy:
    left_out = _excluded(group)
    kept = group[~left_out]
    scored = kept[kept["error"].isna()]
    ci = bootstrap_ci(scored["known"].astype(float).to_numpy(), n_resamples=n_resamples, seed=seed)
    return GroupAccuracy(
        group=name, n=len(scored), errors=len(kept) - len(scored), accuracy=ci.mean,
        ci_low=ci.low, ci_high=ci.high, half_width=ci.half_width, degenerate=ci.degenerate,
        excluded=int(left_out.sum()),
    )


def script_test(items: pd.DataFrame, language_script: dict[str, str]) -> ScriptTest | None:
    scored = items[items["error"].isna() & ~_excluded(items)]
    scripts = scored["language"].map(language_script)
    table = pd.crosstab(scripts, scored["known"].astype(bool)).reindex(columns=[True, False], fill_value=0)
    if len(table) < 2 or (table.sum(axis=0) == 0).any():
        return None  # one script, or every scored fact known (or none): nothing to test
    chi2, p, dof, _ = stats.chi2_contingency(table.to_numpy())
    return ScriptTest(
        chi2=float(chi2), p_value=float(p), dof=int(dof),
        table={str(s): [int(v) for v in row] for s, row in table.iterrows()},
    )


def summarise_cka(items: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0) -> CKASummary:
    languages = []
    language_script: dict[str, str] = {}
    for language, group in items.groupby("language", sort=False):
        # a language's script is the majority of its facts' scripts, each read from the text
        language_script[language] = group["script"].mode().iat[0]
        row = _group_accuracy(str(language), group, n_resamples, seed)
        row.script = language_script[language]
        languages.append(row)
    relations = [
        _group_accuracy(str(rel), group, n_resamples, seed)
        for rel, group in items.groupby("relation", sort=True)
    ]
    scored_languages = [lang for lang in languages if lang.n]
    # no language scored (every item errored): no mean, not 0 % (a wrong number) -- n = 0, the errors counted
    mean = (sum(lang.accuracy for lang in scored_languages) / len(scored_languages)) if scored_languages else math.nan
    measured = [lang for lang in scored_languages if not lang.degenerate]
    half = (sum(lang.half_width for lang in measured) / max(1, len(measured))) if scored_languages else math.nan
    return CKASummary(
        mode=str(items["mode"].iat[0]) if len(items) else "",
        n_items=len(items), n_errors=int(items["error"].notna().sum()), languages=languages,
        multilingual_accuracy=mean, multilingual_half_width=half,
        script_test=script_test(items, language_script), relations=relations,
        degenerate_languages=[lang.group for lang in scored_languages if lang.degenerate],
        n_excluded=int(_excluded(items).sum()),
        excluded=[ExcludedFact(fact_id=str(r.fact_id), language=str(r.language), reason=str(r.excluded))
                  for r in items[_excluded(items)].itertuples(index=False)],
    )


def compare_cka(a: pd.DataFrame, b: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0):
    """Accuracy of two runs on the same facts (``babelprobe compare``): per language and overall,
    B - A with a paired bootstrap CI over the facts both runs scored (analysis/compare.py)."""
    from babelprobe.analysis.compare import paired_cells

    # an excluded fact has no verdict (known is None), so it is in no cell
    return paired_cells(a, b, ["fact_id", "language"], "known", "accuracy %", group_by="language", scale=100.0,
                        n_resamples=n_resamples, seed=seed)
