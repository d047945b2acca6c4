"""ECLeKTiC overall success and transfer score from stored items (ECLeKTiC §3, §3.1).

For each question q with source language s and each other target language t:

    S(q, t) = R_t * R_s          (string metric: word recall; judge: 0/1 correctness)
    overall  = mean of S over all cross-lingual pairs
    transfer = sum of S / sum over questions of R_s * n_targets(q)

where n_targets(q) is the number of target languages q has *in the data* (the official notebook
assumes 11). With binary judge scores the transfer denominator is |K| x n_targets, K the
questions answered correctly in their source language. 95% margins follow the official
notebook: a normal approximation, with the effective sample size (sum w)^2 / sum w^2 for the
weighted transfer score. They count the ~11 target-language pairs of one question as independent
observations although they share the question (and its source answer R_s), so they are too narrow;
``ci_low``/``ci_high`` are 95% percentile intervals from a bootstrap over questions instead (each
resample draws questions with replacement and recomputes the score over all their pairs).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy.stats import norm

from babelprobe.analysis.bootstrap import cluster_ratio_ci
from babelprobe.text.scripts import language_script

Z95 = float(norm.ppf(0.975))


class Score(BaseModel):
    value: float
    margin: float  # 95% half-width, the official notebook's (pairs as independent)
    n: int  # cross-lingual pairs considered
    # the n the margin is computed from: the transfer score's effective sample size (sum w)^2 / sum w^2,
    # 8 where 24 pairs were considered and 8 had their source answer right; None: n (overall; older runs)
    n_effective: float | None = None
    ci_low: float  # 95% interval from the bootstrap over questions
    ci_high: float
    ci_degenerate: bool  # every resample gave the same value (e.g. all pairs equal): no spread measured

    @property
    def margin_n(self) -> float:
        """The n the value's margin rests on (the one to display beside it, and to judge small n by)."""
        return self.n if self.n_effective is None else self.n_effective


class TransferScores(BaseModel):
    overall: Score
    transfer: Score
    source_accuracy: float  # mean R_s over questions (the diagonal of the overall matrix)
    questions: int


def _margin(p: float, n_eff: float) -> float:
    if n_eff <= 0 or math.isnan(p):
        return math.nan
    return Z95 * math.sqrt(max(p * (1 - p), 0.0) / n_eff)


def pair_table(items: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, pd.Series]:
    """Cross-lingual pairs with their target score R_t and source score R_s, and the source
    scores per question. Pairs whose target or source row errored, or has no value of the metric
    (a judge verdict left undecided, ``judge_error``), are left out (counted by the caller),
    never scored as 0."""
    ok = items[items["error"].isna() & items[metric].notna()]
    source = ok[ok["is_source"]].set_index("q_id")[metric].astype(float)
    pairs = ok[~ok["is_source"]].copy()
    pairs = pairs[pairs["q_id"].isin(source.index)]
    pairs["r_t"] = pairs[metric].astype(float)
    # float whatever is left: with no scored source row the map of an empty column keeps the
    # q_id's string dtype, and the product below raised (an all-error setting is n = 0, not a crash)
    pairs["r_s"] = pairs["q_id"].map(source).astype(float)
    pairs["s"] = pairs["r_t"] * pairs["r_s"]
    return pairs, source


def _score(value: float, margin: float, n: int, numerators: np.ndarray, denominators: np.ndarray,
           resamples: int, seed: int, n_effective: float | None = None) -> Score:
    ci = cluster_ratio_ci(numerators, denominators, resamples, seed=seed)
    return Score(value=value, margin=margin, n=n, n_effective=n_effective, ci_low=ci.low, ci_high=ci.high,
                 ci_degenerate=ci.degenerate)


def transfer_scores(pairs: pd.DataFrame, source: pd.Series, resamples: int = 10_000, seed: int = 0) -> TransferScores:
    n = len(pairs)
    overall = float(pairs["s"].mean()) if n else math.nan
    weights = pairs["r_s"].to_numpy()  # each pair weighs its question's source score
    total_w = float(weights.sum())
    transfer = float(pairs["s"].sum() / total_w) if total_w > 0 else math.nan
    n_eff = total_w**2 / float((weights**2).sum()) if total_w > 0 else 0.0
    questions = source[source.index.isin(pairs["q_id"])] if n else source
    # per question: sum of S, pairs, sum of weights; both scores are ratios of their sums
    per_q = pairs.groupby("q_id").agg(s=("s", "sum"), pairs=("s", "size"), w=("r_s", "sum"))
    s_q = per_q["s"].to_numpy(dtype=float)
    return TransferScores(
        overall=_score(overall, _margin(overall, n), n, s_q, per_q["pairs"].to_numpy(dtype=float), resamples, seed),
        transfer=_score(transfer, _margin(transfer, n_eff), n, s_q, per_q["w"].to_numpy(dtype=float), resamples, seed,
                        n_effective=n_eff),
        source_accuracy=float(questions.mean()) if len(questions) else math.nan,
        questions=int(len(questions)),
    )


def language_matrices(pairs: pd.DataFrame, source: pd.Series, items: pd.DataFrame) -> dict[str, dict[str, dict[str, float]]]:
    """Per (source, target) overall and transfer (Figs. 5, 11). The diagonal holds the source
    accuracy (overall) and 1.0 (transfer, by definition) where any source answer was right."""
    out: dict[str, dict[str, dict[str, float]]] = {"overall": {}, "transfer": {}}
    src_lang = items[items["is_source"]].drop_duplicates("q_id").set_index("q_id")["source_language"]
    for s_lang, group in pairs.groupby("source_language"):
        for t_lang, cell in group.groupby("target_language"):
            w = cell["r_s"].sum()
            out["overall"].setdefault(s_lang, {})[t_lang] = float(cell["s"].mean())
            out["transfer"].setdefault(s_lang, {})[t_lang] = float(cell["s"].sum() / w) if w > 0 else math.nan
    for s_lang, scores in source.groupby(src_lang.reindex(source.index)):
        out["overall"].setdefault(s_lang, {})[s_lang] = float(scores.mean())
        out["transfer"].setdefault(s_lang, {})[s_lang] = 1.0 if scores.sum() > 0 else math.nan
    return out


def pair_counts(pairs: pd.DataFrame, source: pd.Series, items: pd.DataFrame) -> dict[str, dict[str, int]]:
    """How many pairs each cell of ``language_matrices`` averages (the diagonal: source questions)."""
    out: dict[str, dict[str, int]] = {}
    for (s_lang, t_lang), cell in pairs.groupby(["source_language", "target_language"]):
        out.setdefault(str(s_lang), {})[str(t_lang)] = len(cell)
    src_lang = items[items["is_source"]].drop_duplicates("q_id").set_index("q_id")["source_language"]
    for s_lang, scores in source.groupby(src_lang.reindex(source.index)):
        out.setdefault(str(s_lang), {})[str(s_lang)] = len(scores)
    return out


def by_language(items: pd.DataFrame) -> dict[str, dict[str, TransferScores]]:
    """Per language, the setting's scores over the pairs whose source is that language
    ("as source") and over the pairs whose target is it ("as target"), with the same margins as
    the overall scores (judge if judged, else the string metric). For the language profile."""
    items = items.reset_index(drop=True)
    judged = "judge_correct" in items and items["judge_correct"].notna().any()
    pairs, source = pair_table(items, "judge_correct" if judged else "recall")
    out: dict[str, dict[str, TransferScores]] = {}
    for role, column in (("as source", "source_language"), ("as target", "target_language")):
        for lang, group in pairs.groupby(column):
            out.setdefault(str(lang), {})[role] = transfer_scores(group, source)
    return out


class SettingSummary(BaseModel):
    setting: str
    items: int
    errors: int
    string: TransferScores
    string_compat: TransferScores
    judge: TransferScores | None
    same_script: dict[str, TransferScores]  # "same" / "cross" -> scores (judge if judged, else string)
    matrices: dict[str, dict[str, dict[str, dict[str, float]]]]  # metric -> overall/transfer -> s -> t
    pair_counts: dict[str, dict[str, int]] = {}  # s -> t -> scored pairs (s -> s: scored source questions)
    # target language -> items whose recall verdict the language layer flagged (``text_flag``)
    text_flags: dict[str, int] = {}
    # rows whose judges' majority is undecided (answers neither yes nor no: ``judge_error``), left
    # out of the judge metric only
    judge_undecided: int = 0


def text_flag_counts(items: pd.DataFrame) -> dict[str, int]:
    """Flagged items (a ``text_flag`` reason: the language layer could not decide) per target
    language; runs stored before the column existed have none."""
    if "text_flag" not in items:
        return {}
    flagged = items[items["text_flag"].notna()]
    return {str(lang): int(n) for lang, n in flagged.groupby("target_language").size().items()}


# A judge's verdicts are trusted only as far as they can be checked (the bundled 135M
# judge says YES to the question repeated as the answer). Two checks, each a warning:
# - agreement with the string metric on rows that have both: the string verdict is "correct"
#   when at least STRING_CORRECT_RECALL of the gold answer's words are in the answer; a Cohen's
#   kappa below JUDGE_KAPPA_LOW (the low end of "moderate", Landis & Koch 1977) is flagged;
# - known-wrong controls (probe.judge_controls): a control accepted on more than
#   CONTROL_ACCEPT_LIMIT of the (question, target language) rows is flagged.
STRING_CORRECT_RECALL = 0.5
JUDGE_KAPPA_LOW = 0.4
CONTROL_ACCEPT_LIMIT = 0.1


class ControlCheck(BaseModel):
    name: str  # probe.CONTROL_*
    judged: int  # (question, target language) rows that got this control
    accepted: int  # the judges' majority said YES to a known-wrong answer

    @property
    def rate(self) -> float:
        return self.accepted / self.judged if self.judged else math.nan


class JudgeCheck(BaseModel):
    """How far the judges' verdicts can be trusted, from the stored items (all settings)."""

    rows: int  # rows with a judge verdict and a string score
    agreement: float | None  # share of those rows where judge and string verdict agree
    kappa: float | None  # Cohen's kappa of the two verdicts (None: undefined, e.g. both constant)
    judge_yes: float | None  # share of those rows the judges accepted
    string_yes: float | None  # share with recall >= STRING_CORRECT_RECALL
    controls: list[ControlCheck]
    warnings: list[str]


def judge_check(items: pd.DataFrame) -> JudgeCheck | None:
    """Agreement of the judges' majority verdict with the string metric, and their verdicts on
    the known-wrong controls; None when no row was judged."""
    from babelprobe.families.eclektic.metrics import cohen_kappa

    if "judge_correct" not in items or not items["judge_correct"].notna().any():
        return None
    ok = items[items["error"].isna() & items["judge_correct"].notna() & items["recall"].notna()]
    judge = [bool(v) for v in ok["judge_correct"]]
    string = [float(v) >= STRING_CORRECT_RECALL for v in ok["recall"]]
    n = len(judge)
    agreement = sum(a == b for a, b in zip(judge, string)) / n if n else None
    kappa = cohen_kappa(judge, string)
    controls: dict[str, list[int]] = {}
    if "control_names" in items:
        rows = ok[ok["control_names"].notna()].drop_duplicates(["q_id", "target_language"])
        for names, accepted in zip(rows["control_names"], rows["control_accepted"]):
            for name, yes in zip(list(names), list(accepted)):
                counts = controls.setdefault(str(name), [0, 0])
                counts[0] += 1
                counts[1] += int(bool(yes))
    checks = [ControlCheck(name=name, judged=judged, accepted=accepted) for name, (judged, accepted) in controls.items()]
    warnings = []
    if kappa is not None and kappa < JUDGE_KAPPA_LOW:
        warnings.append(f"the judge agrees little with the string metric: Cohen's kappa {kappa:.2f} "
                        f"< {JUDGE_KAPPA_LOW} over {n} answers (raw agreement {100 * (agreement or 0):.0f}%)")
    elif kappa is None and n:
        warnings.append(f"agreement with the string metric is undefined over {n} answers (a verdict is constant)")
    for check in checks:
        if check.rate > CONTROL_ACCEPT_LIMIT:
            warnings.append(f"the judge accepts known-wrong answers: {check.name} accepted on {check.accepted} of "
                            f"{check.judged} questions")
    return JudgeCheck(rows=n, agreement=agreement, kappa=kappa, judge_yes=sum(judge) / n if n else None,
                      string_yes=sum(string) / n if n else None, controls=checks, warnings=warnings)


class EclekticSummary(BaseModel):
    settings: list[SettingSummary]
    judges: list[str]
    judge_check: JudgeCheck | None = None  # with a judge: its agreement and controls (JudgeCheck)


def row_scripts(items: pd.DataFrame) -> pd.Series:
    """Script of each row's target language for same- vs cross-script pairs (§4.2):
    languages.language_script (ja and zh both Han), the stored script (read from the question's
    text) only where the language code names none."""
    known = {lang: language_script(lang) for lang in items["target_language"].unique()}
    return pd.Series([known[lang] or stored for lang, stored in zip(items["target_language"], items["script"])],
                     index=items.index)


def summarise_setting(items: pd.DataFrame, resamples: int = 10_000, seed: int = 0) -> SettingSummary:
    items = items.reset_index(drop=True)  # pairs keep the items' row labels
    judged = "judge_correct" in items and items["judge_correct"].notna().any()
    metrics = {"string": "recall", "string_compat": "recall_compat"}
    if judged:
        metrics["judge"] = "judge_correct"
    scores, matrices = {}, {}
    for name, column in metrics.items():
        pairs, source = pair_table(items, column)
        scores[name] = transfer_scores(pairs, source, resamples, seed)
        matrices[name] = language_matrices(pairs, source, items)
    main = "judge_correct" if judged else "recall"
    pairs, source = pair_table(items, main)
    script = row_scripts(items)
    source_script = script[items["is_source"]].groupby(items["q_id"]).first()
    same = (script[pairs.index] == pairs["q_id"].map(source_script)).to_numpy()
    by_script = {label: transfer_scores(pairs[mask], source, resamples, seed)
                 for label, mask in (("same", same), ("cross", ~same)) if np.any(mask)}
    return SettingSummary(
        setting=str(items["setting"].iat[0]), items=len(items), errors=int(items["error"].notna().sum()),
        string=scores["string"], string_compat=scores["string_compat"], judge=scores.get("judge"),
        same_script=by_script, matrices=matrices, pair_counts=pair_counts(pairs, source, items),
        text_flags=text_flag_counts(items),
        judge_undecided=int(items["judge_error"].notna().sum()) if "judge_error" in items else 0,
    )


def summarise_eclektic(items: pd.DataFrame, judges: list[str] | None = None, resamples: int = 10_000,
                       seed: int = 0) -> EclekticSummary:
    """Every setting's scores; ``resamples`` and ``seed`` drive the bootstrap over questions."""
    return EclekticSummary(
        settings=[summarise_setting(group, resamples, seed) for _, group in items.groupby("setting", sort=False)],
        judges=judges or [], judge_check=judge_check(items),
    )


def rescore_predictions(path, columns: str | None = None) -> tuple[pd.DataFrame, EclekticSummary]:
    """Score a predictions file in the official string-metric input format (q_id,
    original_language, target_language, answer, prediction) without a model."""
    from babelprobe.families.eclektic.data import ColumnMap, load_eclektic
    from babelprobe.text.scripts import detect_script
    from babelprobe.families.eclektic.metrics import recall_verdict, word_recall
    from babelprobe.text.evidence import evidence_json

    rows = load_eclektic(path, ColumnMap.parse(columns), predictions=True)
    verdicts = [recall_verdict(r.answer, r.prediction or "", r.target_language) for r in rows]
    items = pd.DataFrame([{
        "q_id": r.q_id, "source_language": r.source_language, "target_language": r.target_language,
        "is_source": r.is_source, "setting": "rescored",
        "script": language_script(r.target_language) or detect_script(r.question or r.answer),
        "answer": r.answer, "prediction": r.prediction,
        "recall": verdict.value,
        "recall_compat": word_recall(r.answer, r.prediction or "", r.target_language, "compat"),
        "evidence": evidence_json(verdict.evidence), "text_flag": verdict.flag,
        "error": None,
    } for r, verdict in zip(rows, verdicts)])
    return items, summarise_eclektic(items)


def compare_eclektic(a: pd.DataFrame, b: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0):
    """Overall success of two runs on the same questions (``babelprobe compare``): per setting,
    S(q, t) = R_t x R_s of every cross-lingual pair both runs scored (string metric; the judge's
    where both runs were judged), B - A with a paired bootstrap CI over those pairs. The pairs of
    one question are resampled independently, as the notebook's margin counts them."""
    from babelprobe.analysis.compare import paired_cells

    cells = []
    metrics = [("string overall %", "recall")]
    if all("judge_correct" in x and x["judge_correct"].notna().any() for x in (a, b)):
        metrics.append(("judge overall %", "judge_correct"))
    for name, column in metrics:
        def pairs_of(items: pd.DataFrame) -> pd.DataFrame:
            parts = [pair_table(group.reset_index(drop=True), column)[0].assign(setting=setting)
                     for setting, group in items.groupby("setting", sort=False)]
            return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
                columns=["setting", "q_id", "target_language", "s"])

        cells += paired_cells(pairs_of(a), pairs_of(b), ["setting", "q_id", "target_language"], "s", name,
                              group_by="setting", scale=100.0, n_resamples=n_resamples, seed=seed)
    return cells
