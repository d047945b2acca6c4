"""OWL summaries from stored items (OWL §3, App. A.2, App. F, Tables 9-17): accuracy by language,
language group, book, perturbation and context length with bootstrap CIs; prefix-probing overlap
scores; an error taxonomy with the most frequent wrong answers; run-to-run deltas."""

from __future__ import annotations

import re
from collections import Counter

import pandas as pd
from pydantic import BaseModel

from babelprobe.analysis.bootstrap import Cell, bootstrap_ci
from babelprobe.families.owl.audio import AUDIO_LANGUAGE, MODALITIES, VARIANT_OF
from babelprobe.families.owl.metrics import is_honorific, normalize
from babelprobe.text.pronouns import is_abstention, is_pronoun

LENGTH_BUCKETS = ((0, 50, "0-50"), (50, 100, "50-100"), (100, 10**9, "100+"))
# Pronouns and abstention words per language: text/data/pronouns/<lang>.tsv (a source per row).
_REFUSALS = ("i cannot", "i can't", "sorry")


def length_bucket(tokens: int) -> str:
    return next(label for low, high, label in LENGTH_BUCKETS if low <= tokens < high)


class TaskSummary(BaseModel):
    task: str
    perturbation: str
    n: int
    errors: int
    overall: Cell
    by_language: list[Cell]
    by_group: list[Cell]
    by_book: list[Cell]
    by_length: list[Cell]
    book_language: dict[str, dict[str, float]]  # book -> language -> value
    book_language_n: dict[str, dict[str, int]] = {}  # book -> language -> scored items
    errors_taxonomy: dict[str, int] = {}
    frequent_wrong: dict[str, list[tuple[str, int]]] = {}  # language -> [(answer, count)]
    overlap: dict[str, float] = {}  # prefix probing: mean chrF++, chrF, BLEU, ROUGE-L
    # items the language layer flagged (text_flag: a refused mask, a form or answer it could not
    # place, a language without a name paradigm), per language
    text_flagged: dict[str, int] = {}
    # App. B.4 / Fig. 10 (run owl --presence): "seen"/"unseen" overall, then "<language group>/seen" ...
    by_presence: list[Cell] = []
    by_language_presence: list[Cell] = []  # "<language>/seen", "<language>/unseen" (the profile's columns)


class ModalityRow(BaseModel):
    task: str
    perturbation: str
    passages: int  # passages scored in every modality of the row
    cells: list[Cell]  # one per modality, over the same passages (group = modality)
    flagged_audio: int = 0  # of those passages, how many heard a file above the WER threshold


class OwlSummary(BaseModel):
    tokenizer: str = "o200k_base (bpe-openai)"
    tasks: list[TaskSummary]  # the text rows
    modalities: list[ModalityRow] = []  # --modality audio: audio (and asr) beside text, Fig. 3
    # Fig. 9: passages (book, passage) per match type of the presence search; empty without --presence
    presence_matches: dict[str, int] = {}


SEEN_MATCHES = ("exact", "window-40", "window-30", "window-20")


def seen_label(match: object) -> str | None:
    """App. B.4: any exact or window match is "seen", "none" is "unseen"; not searched: None."""
    if match in SEEN_MATCHES:
        return "seen"
    return "unseen" if match == "none" else None


def presence_cells(items: pd.DataFrame, column: str, n_resamples: int, seed: int,
                   by: str = "language_group") -> list[Cell]:
    """Accuracy (or chrF++) of seen vs unseen passages, overall and per language group (Fig. 10)
    (``by="language"``: per language only)."""
    if "presence" not in items or items["presence"].isna().all():
        return []
    items = items.assign(seen=items["presence"].map(seen_label)).dropna(subset=["seen"])
    cells = [] if by == "language" else [_cell(str(k), g, column, n_resamples, seed)
                                         for k, g in items.groupby("seen", sort=True)]
    for (group, seen), g in items.groupby([by, "seen"], sort=True):
        cells.append(_cell(f"{group}/{seen}", g, column, n_resamples, seed))
    return cells


def presence_matches(items: pd.DataFrame) -> dict[str, int]:
    """Fig. 9: one count per passage (book, passage id), by the label its versions carry."""
    if "presence" not in items or items["presence"].isna().all():
        return {}
    passages = items.dropna(subset=["presence"]).drop_duplicates(["book_id", "passage_id"])
    counts = Counter(passages["presence"])
    return {m: counts.get(m, 0) for m in (*SEEN_MATCHES, "none")}


def error_category(row: pd.Series) -> str:
    """App. F's taxonomy for a wrong answer."""
    if row["task"] == "direct":
        title = normalize(row["title"] or "").strip(" .\"'")
        if is_abstention(row["title"] or "", row.get("language")) or title.startswith(_REFUSALS):
            return "abstention"
        if row["author_correct"]:
            return "correct author, wrong title"
        return "wrong book"
    name = (row["name"] or "").strip()
    norm = normalize(name).strip(" .\"'")
    if is_abstention(name, row.get("language")) or norm.startswith(_REFUSALS):
        return "abstention"
    if "[mask]" in norm:
        return "[MASK] echoed"
    if is_pronoun(name, row.get("language")):
        return "pronoun"
    if name.split() and all(is_honorific(word, row.get("language")) for word in name.split()):
        return "honorific"
    if re.search(r",|/|\bor\b|;", norm) or str(row["output"] or "").count("<name>") > 1:
        return "multiple guesses"
    return "wrong name"


def text_flag_counts(items: pd.DataFrame) -> dict[str, int]:
    """Flagged items (text_flag set) per language; languages without flags are left out."""
    if "text_flag" not in items:
        return {}
    flagged = items[items["text_flag"].notna()]
    return {str(lang): len(g) for lang, g in flagged.groupby("language", sort=True)}


def _cell(name: str, group: pd.DataFrame, column: str, n_resamples: int, seed: int) -> Cell:
    scored = group[group["error"].isna()]
    ci = bootstrap_ci(scored[column].astype(float).to_numpy(), n_resamples=n_resamples, seed=seed)
    return Cell(group=str(name), n=len(scored), errors=len(group) - len(scored), value=ci.mean,
                ci_low=ci.low, ci_high=ci.high, degenerate=ci.degenerate)


def summarise_task(items: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0) -> TaskSummary:
    column = "chrf_pp" if items["task"].iat[0] == "prefix" else "correct"
    items = items.assign(length=items["passage_tokens"].map(length_bucket))

    def cells(by: str) -> list[Cell]:
        return [_cell(k, g, column, n_resamples, seed) for k, g in items.groupby(by, sort=True)]

    scored = items[items["error"].isna()]
    matrix = {str(b): {str(lang): float(g[column].astype(float).mean()) for lang, g in bg.groupby("language")}
              for b, bg in scored.groupby("book_id")}
    summary = TaskSummary(
        task=str(items["task"].iat[0]), perturbation=str(items["perturbation"].iat[0]), n=len(scored),
        errors=len(items) - len(scored), overall=_cell("all", items, column, n_resamples, seed),
        by_language=cells("language"), by_group=cells("language_group"), by_book=cells("book_id"),
        by_length=[c for label in ("0-50", "50-100", "100+") for c in cells("length") if c.group == label],
        book_language=matrix,
        book_language_n={str(b): {str(lang): len(g) for lang, g in bg.groupby("language")}
                         for b, bg in scored.groupby("book_id")},
        by_presence=presence_cells(items, column, n_resamples, seed),
        by_language_presence=presence_cells(items, column, n_resamples, seed, by="language"),
        text_flagged=text_flag_counts(items),
    )
    if column == "correct":
        wrong = scored[~scored["correct"].astype(bool)]
        # (apply on an empty frame returns a frame: its column names would be counted as categories)
        categories = [error_category(row) for _, row in wrong.iterrows()]
        summary.errors_taxonomy = dict(Counter(categories).most_common())
        answer = wrong["title"] if summary.task == "direct" else wrong["name"]
        summary.frequent_wrong = {str(lang): Counter(a for a in answer[wrong["language"] == lang] if a).most_common(5)
                                  for lang in sorted(wrong["language"].unique())}
    else:
        summary.overlap = {m: float(scored[m].mean()) for m in ("chrf_pp", "chrf", "bleu", "rouge_l")}
    return summary


def summarise_owl(items: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0) -> OwlSummary:
    modality = items["modality"].fillna("text") if "modality" in items.columns else None
    text = items if modality is None else items[modality == "text"]
    summary = OwlSummary(tasks=[summarise_task(g, n_resamples, seed)
                                for _, g in text.groupby(["task", "perturbation"], sort=False)],
                         presence_matches=presence_matches(text))
    if modality is not None and (modality != "text").any():
        summary.modalities = modality_rows(items, n_resamples, seed)
    return summary


class Delta(BaseModel):
    task: str
    perturbation: str
    group: str
    a: float
    b: float
    delta_pp: float  # percentage points (chrF++ points for prefix probing)
    n_a: int | None = None  # the items each side's value rests on
    n_b: int | None = None


def compare_owl(a: OwlSummary, b: OwlSummary) -> list[Delta]:
    """B minus A per (task, perturbation, language) cell and overall (OWL Tables 10-12)."""
    scale = {True: 1.0, False: 100.0}
    out = []
    b_tasks = {(t.task, t.perturbation): t for t in b.tasks}
    for ta in a.tasks:
        tb = b_tasks.get((ta.task, ta.perturbation))
        if tb is None:
            continue
        k = scale[ta.task == "prefix"]
        cells_b = {c.group: c for c in tb.by_language}
        for ca in [ta.overall, *ta.by_language]:
            cb = tb.overall if ca.group == "all" else cells_b.get(ca.group)
            if cb is not None and ca.n and cb.n:
                out.append(Delta(task=ta.task, perturbation=ta.perturbation, group=ca.group, a=ca.value,
                                 b=cb.value, delta_pp=k * (cb.value - ca.value), n_a=ca.n, n_b=cb.n))
    return out


class RescoredColumn(BaseModel):
    column: str
    language: str
    variant: str
    n: int
    accuracy: float | None = None  # direct probing, name cloze
    chrf_pp: float | None = None  # prefix probing
    chrf: float | None = None


def rescore_release(path, task: str, titles: list[str] | None = None, author: str | None = None
                    ) -> tuple[pd.DataFrame, list[RescoredColumn]]:
    """Score the OWL release's prediction CSVs without a model.

    direct: passage columns and ``{col}_results`` predictions; gold titles from ``en_book_title``
    / ``{lang}_book_title`` columns and ``titles``, the author from ``author_name`` or ``author``.
    name-cloze: ``Single_ent`` (a list of names) and ``*_results``. prefix: ``{lang}_second_half``
    references and ``{lang}_Completion`` or ``{lang}_results_raw`` outputs (echo of
    ``{lang}_first_half`` trimmed)."""
    import ast
    from pathlib import Path

    from babelprobe.data.tables import read_rows
    from babelprobe.data.validation import DatasetError, Problem
    from babelprobe.families.owl.metrics import (
        bleu, chrf, direct_probe_correct, extract_continuation, name_cloze_verdict, trim_echo,
    )
    from babelprobe.text.tokenize import rouge_l_text as rouge_l

    rows = read_rows(Path(path))
    if not rows:
        raise DatasetError([Problem(str(path), None, None, "no rows")])
    header = list(rows[0][1])
    out = []
    if task == "prefix":
        pairs = [(c, c.split("_")[0]) for c in header if c.endswith(("_Completion", "_results_raw"))]
        missing = [f"{lang}_second_half" for _, lang in pairs if f"{lang}_second_half" not in header]
        if not pairs or missing:
            raise DatasetError([Problem(str(path), None, None, "prefix rescoring needs {lang}_second_half and "
                                        "{lang}_Completion or {lang}_results_raw columns")])
    else:
        pairs = [(c, c.split("_")[0]) for c in header if c.endswith("_results")]
        if not pairs:
            raise DatasetError([Problem(str(path), None, None, "no *_results prediction columns")])
    for number, row in rows:
        for column, lang in pairs:
            prediction = row.get(column)
            if prediction is None or (isinstance(prediction, float) and prediction != prediction):
                continue
            prediction = str(prediction)
            record = {"row": number, "column": column, "language": lang,
                      "variant": "shuffled" if "shuffled" in column else "none", "prediction": prediction}
            if task == "direct":
                golds = [str(row[c]) for c in ("en_book_title", f"{lang}_book_title") if row.get(c)] + list(titles or [])
                gold_author = str(row.get("author_name") or author or "")
                if not golds or not gold_author:
                    raise DatasetError([Problem(str(path), number, "en_book_title/author_name",
                                                "no gold title or author: add the columns or pass --title/--author")])
                record["correct"] = direct_probe_correct(prediction, golds, [gold_author])
            elif task == "name-cloze":
                raw = row.get("Single_ent")
                try:
                    names = ast.literal_eval(raw) if isinstance(raw, str) else list(raw or [])
                except (ValueError, SyntaxError):
                    raise DatasetError([Problem(str(path), number, "Single_ent", f"not a list of names: {raw!r}")])
                # the compat path: the authors' rule only (OWL §2.2 fn. 6), so rescored numbers stay the paper's
                record["correct"] = name_cloze_verdict(prediction, [str(n) for n in names], lang, forms=False).correct
            else:
                reference = str(row.get(f"{lang}_second_half") or "")
                continuation = trim_echo(str(row.get(f"{lang}_first_half") or ""), extract_continuation(prediction))
                record.update(reference=reference, continuation=continuation, chrf_pp=chrf(continuation, reference, 2),
                              chrf=chrf(continuation, reference, 0), bleu=bleu(continuation, reference),
                              rouge_l=rouge_l(continuation, reference))
            out.append(record)
    items = pd.DataFrame(out)
    summary = []
    for column, group in items.groupby("column", sort=False):
        entry = RescoredColumn(column=str(column), language=str(group["language"].iat[0]),
                               variant=str(group["variant"].iat[0]), n=len(group))
        if task == "prefix":
            entry.chrf_pp, entry.chrf = float(group["chrf_pp"].mean()), float(group["chrf"].mean())
        else:
            entry.accuracy = float(group["correct"].mean())
        summary.append(entry)
    return items, summary


# ---------------------------------------------------------------------- Fig. 3: audio beside text
def modality_rows(items: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0) -> list[ModalityRow]:
    """Per (task, perturbation): accuracy (chrF++ for prefix probing) of each modality over the
    English passages that every modality of the run answered without error (Fig. 3), with
    bootstrap CIs; each cell's ``errors`` counts that modality's errored items (all passages)."""
    if "modality" not in items.columns:
        return []
    items = items.assign(modality=items["modality"].fillna("text"))
    english = items[items["language"] == AUDIO_LANGUAGE]
    rows = []
    for (task, perturbation), group in english.groupby(["task", "perturbation"], sort=False):
        present = [m for m in MODALITIES if m in set(group["modality"])]
        if len(present) < 2 or (task, perturbation) not in VARIANT_OF:
            continue
        column = "chrf_pp" if task == "prefix" else "correct"
        ok = group[group["error"].isna()]
        keys = set.intersection(*(set(map(tuple, ok[ok["modality"] == m][["book_id", "passage_id"]].to_numpy()))
                                  for m in present))
        pair = group[[tuple(k) in keys for k in group[["book_id", "passage_id"]].to_numpy()]]
        # the values are over the shared passages; the errors are every errored item of the
        # modality (those passages are why the shared set is smaller: counted, not dropped)
        cells = [_cell(m, pair[pair["modality"] == m], column, n_resamples, seed).model_copy(
            update={"errors": int(((group["modality"] == m) & group["error"].notna()).sum())}) for m in present]
        audio = pair[pair["modality"] == "audio"]
        flagged = int(audio["audio_flagged"].fillna(False).astype(bool).sum()) if "audio_flagged" in audio else 0
        rows.append(ModalityRow(task=str(task), perturbation=str(perturbation), passages=len(keys), cells=cells,
                                flagged_audio=flagged))
    return rows
