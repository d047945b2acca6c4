"""The build's stage functions: (input) -> (output, counts, deletions). Orchestration, the state
file and resuming are in ``run.py``."""

from __future__ import annotations

from collections import defaultdict

from babelprobe.families.owl.builder import align as aligner
from babelprobe.families.owl.builder import filters
from babelprobe.families.owl.builder.books import read_paragraphs
from babelprobe.families.owl.builder.options import BuildOptions
from babelprobe.families.owl.builder.qc import qc_problems
from babelprobe.families.owl.builder.records import (
    AlignedPair, Book, Count, Deletion, Passage, SplitBook, TranslatedBook,
)
from babelprobe.families.owl.builder.sentences import split_book
from babelprobe.families.owl.builder.translate import PLACEHOLDER, Translator, mt_request, translate_books
from babelprobe.models.base import Backend, GenerateResult, request_key
from babelprobe.models.registry import LoadOptions

Result = tuple[list, list[Count], list[Deletion]]


def translator(options: BuildOptions, spec: str, label: str, backends: dict[str, Backend] | None = None) -> Translator:
    """``backends``: models already loaded, by spec (a caller that holds one: tests, a suite)."""
    load = LoadOptions(device=options.device, dtype=options.dtype, model_args=options.model_args)
    return Translator(spec, load, options.cache_path, options.batch_size, label, (backends or {}).get(spec))


def split(books: list[Book], options: BuildOptions) -> Result:
    out, counts = [], []
    for book in books:
        paragraphs = read_paragraphs(book.file)
        result = split_book(book.book_id, book.language, paragraphs, options.splitter)
        out.append(result)
        counts.append(Count(stage="split", book_id=book.book_id, language=book.language,
                            unit="paragraphs -> sentences", n_in=len(paragraphs), n_out=len(result.sentences)))
    return out, counts, []


def translate(split_books: list[SplitBook], options: BuildOptions, progress: bool,
              backends: dict[str, Backend] | None = None) -> Result:
    foreign = [b for b in split_books if b.language != "en"]
    if not foreign:
        return [], [], []
    done = translate_books(foreign, translator(options, options.translator, "translate", backends), options.chunk_sentences,
                           options.max_tokens, options.temperature, options.seed, progress)
    counts = [Count(stage="translate", book_id=t.book_id, language=t.language, unit="sentences",
                    n_in=len(b.sentences), n_out=len(t.english)) for b, t in zip(foreign, done)]
    return done, counts, []


def align(split_books: list[SplitBook], translated: list[TranslatedBook], options: BuildOptions) -> Result:
    english = {b.book_id: b for b in split_books if b.language == "en"}
    originals = {(b.book_id, b.language): b for b in split_books}
    pairs, counts = [], []
    for t in translated:
        en = english[t.book_id]
        found = aligner.align_book(en, originals[(t.book_id, t.language)], t, options.aligner)
        pairs.extend(found)
        counts.append(Count(stage="align", book_id=t.book_id, language=t.language, unit="English paragraphs",
                            n_in=len({s.paragraph for s in en.sentences}), n_out=len(found)))
    return pairs, counts, []


def filter_pairs(split_books: list[SplitBook], pairs: list[AlignedPair], options: BuildOptions) -> Result:
    """Length and BLEU filters per language; a passage is kept when every official language passes."""
    languages: dict[str, list[str]] = defaultdict(list)
    for b in split_books:
        if b.language != "en":
            languages[b.book_id].append(b.language)
    by_key = {(p.book_id, p.paragraph, p.language): p for p in pairs}
    passages: list[Passage] = []
    counts: list[Count] = []
    deletions: list[Deletion] = []
    for en in (b for b in split_books if b.language == "en"):
        paragraphs: dict[int, list[str]] = defaultdict(list)
        for s in en.sentences:
            paragraphs[s.paragraph].append(s.text)
        passed: dict[str, int] = defaultdict(int)
        for paragraph, sentences in paragraphs.items():
            english = " ".join(sentences)
            failures = []
            for lang in languages[en.book_id]:
                pair = by_key.get((en.book_id, paragraph, lang))
                if pair is None:
                    failures.append((lang, "align: no aligned passage"))
                    continue
                english = pair.english
                ratio = filters.length_ratio(pair.english, pair.back_translation)
                score = filters.bleu(pair.back_translation, pair.english)
                if ratio > options.max_length_ratio:
                    failures.append((lang, f"length: ratio {ratio:.2f} > {options.max_length_ratio}"))
                elif score < options.bleu_threshold:
                    failures.append((lang, f"bleu: {score:.2f} < {options.bleu_threshold}"))
                else:
                    passed[lang] += 1
            # a paragraph aligned in no language is not a candidate: only failed candidates are deletions
            aligned = any((en.book_id, paragraph, lang) in by_key for lang in languages[en.book_id])
            if failures and aligned:
                deletions.extend(Deletion(stage="filter", book_id=en.book_id, language=lang, paragraph=paragraph,
                                          reason=reason) for lang, reason in failures)
            if failures:
                continue
            versions = {lang: by_key[(en.book_id, paragraph, lang)] for lang in languages[en.book_id]}
            passages.append(Passage(book_id=en.book_id, paragraph=paragraph, english=english,
                                    versions={lang: p.target for lang, p in versions.items()},
                                    target_sids={lang: p.target_sids for lang, p in versions.items()}))
        for lang in languages[en.book_id]:
            n_in = sum(1 for k in by_key if k[0] == en.book_id and k[2] == lang)
            counts.append(Count(stage="filter", book_id=en.book_id, language=lang, unit="aligned paragraphs",
                                n_in=n_in, n_out=passed[lang]))
        counts.append(Count(stage="filter", book_id=en.book_id, language="all", unit="passages (every language passes)",
                            n_in=len(paragraphs), n_out=sum(1 for p in passages if p.book_id == en.book_id)))
    return passages, counts, deletions


def english_paragraphs(split_books: list[SplitBook]) -> dict[str, list[str]]:
    """book -> its English paragraphs (their sentences joined), the whole book."""
    out: dict[str, list[str]] = {}
    for book in split_books:
        if book.language == "en":
            by_paragraph: dict[int, list[str]] = defaultdict(list)
            for sentence in book.sentences:
                by_paragraph[sentence.paragraph].append(sentence.text)
            out[book.book_id] = [" ".join(by_paragraph[k]) for k in sorted(by_paragraph)]
    return out


def posthoc(passages: list[Passage], options: BuildOptions, split_books: list[SplitBook] | None = None) -> Result:
    """Names (``--names book``: the book's own mentions, names.py; ``passage``: spaCy on the
    passage alone) and the token count; ``split_books`` gives the whole English books."""
    from babelprobe.families.owl.builder.names import BookNames

    books = english_paragraphs(split_books or [])
    lexicons = {book: BookNames(books.get(book) or [p.english for p in passages if p.book_id == book])
                for book in sorted({p.book_id for p in passages})} if options.names == "book" else {}
    kept, deletions = [], []
    for p in passages:
        names = lexicons[p.book_id].of(p.english) if lexicons else filters.character_names(p.english)
        tokens = filters.o200k_tokens(p.english)
        reason = (f"tokens: {tokens} o200k tokens < {options.min_tokens}" if tokens < options.min_tokens
                  else f"names: {len(names)} unique character names > {options.max_names}" if len(names) > options.max_names
                  else None)
        if reason:
            deletions.append(Deletion(stage="posthoc", book_id=p.book_id, language="en", paragraph=p.paragraph, reason=reason))
            continue
        kept.append(p.model_copy(update={"names": names, "tokens": tokens}))
    return kept, _set_counts("posthoc", passages, kept), deletions


def _set_counts(stage: str, before: list[Passage], after: list[Passage]) -> list[Count]:
    """Per book: all passages in and out, then each set (after ``posthoc``, which makes the sets,
    a set's "in" is every passage that entered)."""
    counts = []
    for book in sorted({p.book_id for p in before}):
        mine = [p for p in before if p.book_id == book]
        kept = [p for p in after if p.book_id == book]
        counts.append(Count(stage=stage, book_id=book, language="en", unit="passages", n_in=len(mine), n_out=len(kept)))
        for name in ("with-name", "no-name"):
            n_in = len(mine) if stage == "posthoc" else sum(1 for p in mine if p.set_name == name)
            counts.append(Count(stage=stage, book_id=book, language="en", unit=f"{name} passages", n_in=n_in,
                                n_out=sum(1 for p in kept if p.set_name == name)))
    return counts


def sample(passages: list[Passage], options: BuildOptions) -> Result:
    from babelprobe.data.perturbations import NameNotMaskable, mask_names

    by_key = {(p.book_id, p.paragraph): p for p in passages}
    kept, deletions = [], []
    for book in sorted({p.book_id for p in passages}):
        for name in ("with-name", "no-name"):
            group = [p for p in passages if p.book_id == book and p.set_name == name]
            keys = [(f"{p.paragraph:08d}", p.names[0] if p.names else "") for p in group]
            for key in sorted(filters.stratified_sample(keys, options.per_book, options.seed)):
                p = by_key[(book, int(key))]
                try:
                    masked = mask_names(p.english, p.names, "en") if p.names else p.english
                except NameNotMaskable as exc:
                    deletions.append(Deletion(stage="sample", book_id=book, language="en", paragraph=p.paragraph,
                                              reason=f"mask: {exc}"))
                    continue
                kept.append(p.model_copy(update={"masked": masked}))
    return kept, _set_counts("sample", passages, kept), deletions


def machine_translate(passages: list[Passage], options: BuildOptions, progress: bool,
                      backends: dict[str, Backend] | None = None) -> Result:
    if not options.unseen or not passages:
        return passages, [], []
    mt = translator(options, options.mt_spec, "mt", backends)
    plan = {(p.book_id, p.paragraph, lang): mt_request(mt, p.masked, lang, options.mt_max_tokens, options.mt_temperature, options.seed)
            for p in passages for lang in options.unseen}
    outcomes = mt.answer(list(plan.values()), progress)
    kept: list[Passage] = []
    deletions: list[Deletion] = []
    passed: dict[tuple[str, str], int] = defaultdict(int)
    for p in passages:
        unseen, problems = {}, []
        for lang in options.unseen:
            outcome = outcomes[request_key(plan[(p.book_id, p.paragraph, lang)])]
            if outcome.error is not None or not isinstance(outcome.response, GenerateResult):
                problems.append((lang, f"translation failed: {outcome.error}"))
                continue
            text = outcome.response.text.strip()
            source = p.masked.replace("[MASK]", PLACEHOLDER)
            found = qc_problems(source, text)
            if found:
                problems.extend((lang, f"qc {reason}") for reason in found)
                continue
            passed[(p.book_id, lang)] += 1
            unseen[lang] = text.replace(PLACEHOLDER, p.names[0]) if p.names else text
        if problems:  # B.2: a flagged passage is deleted across all languages
            deletions.extend(Deletion(stage="mt", book_id=p.book_id, language=lang, paragraph=p.paragraph, reason=reason)
                             for lang, reason in problems)
            continue
        kept.append(p.model_copy(update={"unseen": unseen}))
    counts = [Count(stage="mt", book_id=book, language=lang, unit="passages (qc passed)",
                    n_in=sum(1 for p in passages if p.book_id == book), n_out=passed[(book, lang)])
              for book in sorted({p.book_id for p in passages}) for lang in options.unseen]
    counts += [Count(stage="mt", book_id=book, language="all", unit="passages (every language passes)",
                     n_in=sum(1 for p in passages if p.book_id == book), n_out=sum(1 for p in kept if p.book_id == book))
               for book in sorted({p.book_id for p in passages})]
    return kept, counts, deletions
