"""OWL scoring: output parsers and metrics for direct probing, name cloze and prefix probing
(OWL §2.1-2.3, footnotes 4 and 6; the authors' evaluation scripts for the exact rules).

Similarity is ``rapidfuzz.fuzz.ratio`` / 100: the normalised InDel similarity
``1 - (insertions + deletions) / (len(a) + len(b))``. It is what the authors' scripts compute
(``fuzzywuzzy.fuzz.ratio``, whose scores rapidfuzz reproduces), so the paper's thresholds (0.9
for titles and authors, 0.7 for names) keep their meaning; a plain Levenshtein ratio would be
stricter for the same threshold. Normalisation is ``unidecode`` + lowercase (+ strip).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from rapidfuzz import fuzz
from unidecode import unidecode

from babelprobe.languages import join_units, text_units
from babelprobe.text.units import word_spans
from babelprobe.text.tokenize import rouge_l_text as rouge_l, script_tokens  # noqa: F401  (the layer's; old names)

DIRECT_PROBE_THRESHOLD = 0.9
NAME_CLOZE_THRESHOLD = 0.7


def normalize(text: str) -> str:
    """unidecode + lowercase + collapsed whitespace: 'Don Quijote' == 'don quijote', 'Bovary' == 'bovary'."""
    return " ".join(unidecode(text).lower().split())


def similarity(a: str, b: str) -> float:
    return fuzz.ratio(a, b) / 100.0


_TITLE = re.compile(r'"?title"?\s*:\s*"?(.*?)"?\s*(?:,\s*"?author"?\s*:|$|\n|</output>)', re.I | re.S)
_AUTHOR = re.compile(r'"?author"?\s*:\s*"?(.*?)"?\s*(?:,\s*"?title"?\s*:|$|\n|</output>|\})', re.I | re.S)
_TAG = re.compile(r"<(output|name)>(.*?)</\1>", re.I | re.S)


def _inside_tags(text: str) -> str:
    """The first <output>/<name> element's content (a rambling model's later ones are not its
    answer), else the raw text."""
    found = _TAG.search(text)
    return found.group(2) if found else text


def parse_title_author(text: str) -> tuple[str, str]:
    """(title, author) from a direct-probing answer. Accepts the asked-for
    ``<output>"title": "...", "author": "..."</output>`` and the usual deviations (missing
    quotes or tags, swapped order, text around it). When neither field is found, the raw text
    stands for both, as in the authors' evaluation (a gold title inside a free-text answer still
    counts through the substring rule)."""
    body = _inside_tags(text).strip()
    title = _TITLE.search(body)
    author = _AUTHOR.search(body)
    if not title and not author:
        return body, body
    return (title.group(1).strip() if title else "", author.group(1).strip() if author else "")


def fuzzy_match(prediction: str, golds: Iterable[str], threshold: float = DIRECT_PROBE_THRESHOLD) -> bool:
    """Normalised prediction within ``threshold`` similarity of a gold string, or containing it."""
    pred = normalize(prediction)
    for gold in golds:
        g = normalize(gold)
        if g and (similarity(pred, g) >= threshold or g in pred):
            return True
    return False


def direct_probe_correct(prediction: str, titles: Iterable[str], authors: Iterable[str]) -> bool:
    """Correct iff title AND author match (OWL §2.1, fn. 4): similarity >= 0.9 or the gold string
    contained in the prediction, after normalisation, against any gold title (English, passage
    language, aliases such as "Nineteen Eighty-Four" for "1984") and any gold author form."""
    title, author = parse_title_author(prediction)
    return fuzzy_match(title, titles) and fuzzy_match(author, authors)


def parse_name(text: str) -> str:
    """The name from a name-cloze answer: inside <name>…</name> or <output>…</output>, else the
    raw text (one line, stripped)."""
    return " ".join(_inside_tags(text).split())


# Titles, ranks, kinship terms and forms of address that stand before (or for) a character's name
# in each language, written as in running text: a word of a name, never the name alone (a model
# answering "Count" for Count Vronsky, "князь" for князь Мышкин or "Uncle" for Uncle Tom has
# named no one). Pinned by tests/test_owl_metrics.py. Compared casefolded as written and after
# normalize() without dots ("Mr." -> "mr", "Doña" -> "dona", "господин" -> "gospodin").
HONORIFICS_BY_LANGUAGE: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in {
    "en": "mr mrs ms miss mister missus sir dame lady lord madam ma'am master mistress dr doctor prof professor "
          "rev reverend father mother brother sister uncle aunt auntie cousin grandfather grandmother grandpa "
          "grandma granny count countess duke duchess prince princess king queen baron baroness earl marquis "
          "marquess viscount emperor empress tsar czar sultan captain capt colonel col general gen major "
          "lieutenant lt sergeant sgt corporal admiral commander st saint judge squire",
    "es": "señor señora señorita sr sra srta don doña tío tía padre madre fray sor conde condesa duque duquesa "
          "príncipe princesa rey reina marqués marquesa barón baronesa capitán coronel general teniente doctor "
          "dr san santo santa maese",
    "fr": "monsieur m mme madame mademoiselle mlle mgr monseigneur maître père mère frère sœur oncle tante "
          "comte comtesse duc duchesse prince princesse roi reine marquis marquise baron baronne vicomte "
          "vicomtesse capitaine colonel général lieutenant docteur abbé saint sainte st ste dame sire",
    "de": "herr frau fräulein hr frl doktor dr professor prof graf gräfin fürst fürstin prinz prinzessin herzog "
          "herzogin könig königin baron baronin freiherr onkel tante vater mutter bruder schwester hauptmann "
          "oberst general leutnant major kapitän sankt st pfarrer pastor",
    "it": "signor signore signora signorina sig don donna conte contessa duca duchessa principe principessa re "
          "regina marchese marchesa barone zio zia padre madre fra frate suor dottore dottor dott capitano "
          "colonnello generale san santo santa messer",
    "pt": "senhor senhora sr sra dom dona tio tia conde condessa duque duquesa príncipe princesa rei rainha barão "
          "baronesa marquês marquesa capitão coronel general doutor dr padre frei são santo santa seu",
    "nl": "meneer mijnheer mevrouw juffrouw heer graaf gravin prins prinses koning koningin baron oom tante "
          "dokter dr kapitein kolonel generaal sint",
    "ru": "господин госпожа барин барыня сударь сударыня князь княгиня княжна граф графиня барон баронесса царь "
          "царица император императрица принц принцесса король королева герцог герцогиня дядя тётя тетя "
          "батюшка матушка отец мать брат сестра дедушка бабушка капитан полковник генерал майор поручик "
          "лейтенант ротмистр доктор профессор пан пани мистер миссис мисс сэр леди лорд мадам месье святой "
          "св товарищ гражданин гражданка",
    "uk": "пан пані панна панич добродій добродійка князь княгиня граф графиня король королева цар цариця "
          "дядько тітка батько мати брат сестра дід баба капітан полковник генерал майор лікар доктор професор "
          "святий св отець отаман гетьман сотник містер місіс міс сер леді лорд",
    "bg": "господин госпожа госпожица г-н г-жа г-ца бай кака чичо вуйчо леля баба дядо княз княгиня граф "
          "графиня цар царица крал кралица принц принцеса капитан полковник генерал майор доктор професор поп "
          "отец свети св мистър мисис мис сър лейди лорд",
    "pl": "pan pani panna panicz hrabia hrabina książę księżna król królowa baron wuj wujek ciocia ciotka stryj "
          "ojciec matka brat siostra kapitan pułkownik generał major porucznik doktor dr profesor prof ksiądz "
          "ks święty św",
    "cs": "pan paní slečna hrabě hraběnka kníže kněžna princ princezna král královna baron strýc strejda teta "
          "otec matka bratr sestra kapitán plukovník generál major doktor dr profesor svatý sv páter",
    "tr": "bay bayan bey hanım efendi paşa ağa hoca dayı amca teyze hala abla ağabey abi sultan şah kral kraliçe "
          "prens prenses kont kontes dük yüzbaşı albay general doktor dr profesor prof aziz hazreti mösyö madam "
          "matmazel",
    "vi": "ông bà cô chú bác cậu dì ngài cụ thầy vua chị",
    "hu": "úr asszony kisasszony gróf grófnő herceg hercegnő király királynő báró bácsi néni doktor dr kapitány "
          "ezredes tábornok szent",
}.items()}


def _honorific_keys(words: frozenset[str]) -> frozenset[str]:
    return frozenset({w.casefold() for w in words} | {normalize(w).strip(".") for w in words})


_HONORIFIC_KEYS = {lang: _honorific_keys(words) for lang, words in HONORIFICS_BY_LANGUAGE.items()}
# Every language's list (used where the language is not known); a passage's own language adds
# its list to English's, as models often answer in English.
HONORIFICS = frozenset().union(*_HONORIFIC_KEYS.values())


def honorifics(language: str | None = None) -> frozenset[str]:
    if not isinstance(language, str) or not language:  # unknown (None, or a missing table cell)
        return HONORIFICS
    return _HONORIFIC_KEYS["en"] | _HONORIFIC_KEYS.get(language.split("-")[0].lower(), frozenset())


def is_honorific(word: str, language: str | None = None) -> bool:
    keys = honorifics(language)
    return (unicodedata.normalize("NFKC", word).casefold().strip(".") in keys
            or normalize(word).strip(".") in keys)


def name_candidates(names: Iterable[str], language: str | None = None) -> set[str]:
    """Every gold name and every single word of it except honorifics ("Hester Prynne" -> also
    "Hester", "Prynne"; "Mr. Darcy" -> also "Darcy", not "Mr."): a model answering "Mr." has not
    named anyone. (The authors' script keeps every word; the issue overrides it.)"""
    out = set()
    for name in names:
        out.add(name)
        out.update(word for word in name.split() if not is_honorific(word, language))
    return {n for n in out if n.strip()}


def name_cloze_correct(prediction: str, names: Iterable[str], language: str | None = None) -> bool:
    """Correct iff the normalised name equals a candidate exactly or has similarity >= 0.7 with
    one (OWL §2.2, fn. 6; candidates: name_candidates). An answer made only of honorifics
    ("Uncle" for Uncle Tom, similarity 0.71) names no one and is never correct."""
    name = parse_name(prediction)
    pred = normalize(name)
    if not pred:
        return False
    candidates = {normalize(c) for c in name_candidates(names, language)}
    if pred in {normalize(n) for n in names}:
        return True  # a whole gold name, even one that is a title (a character called "Captain")
    if all(is_honorific(word, language) for word in name.split()):
        return False
    return pred in candidates or any(similarity(pred, c) >= NAME_CLOZE_THRESHOLD for c in candidates)


# ---------------------------------------------------------------- prefix probing


def extract_continuation(text: str) -> str:
    """The text inside <output>…</output> (an unclosed tag runs to the end), else the raw text,
    on one line."""
    start = text.find("<output>")
    body = text[start + len("<output>"):] if start >= 0 else text
    end = body.find("</output>")
    return " ".join((body[:end] if end >= 0 else body).split())


def split_passage(passage: str, language: str | None = None) -> tuple[str, str]:
    """First and second half at the word midpoint (len(words) // 2), as the authors split at the
    word midpoint; words are the language layer's written words in every script
    (babelprobe.text.units.word_spans: whitespace words, and dictionary-segmented words in Thai,
    Japanese, Chinese, Lao, Khmer, Burmese), punctuation standing alone not counted (a Chinese
    passage's 。 and ， are no words). Whitespace runs become single spaces (for spaced text: the
    authors' " ".join of words)."""
    spans = word_spans(passage, language)
    cut = spans[len(spans) // 2][0] if spans else len(passage)
    return " ".join(passage[:cut].split()), " ".join(passage[cut:].split())


def trim_echo(prefix: str, output: str) -> str:
    """Drop a repeated prefix from the start of a continuation: the longest tail of the prefix
    (compared by units, without punctuation and case) that the output begins with."""
    def key(units: list[str]) -> str:
        return re.sub(r"\W+", " ", join_units(units)).casefold().strip()

    units, out_units = text_units(prefix), text_units(output)
    for start in range(len(units)):
        tail = units[start:]
        if len(out_units) >= len(tail) and key(out_units[: len(tail)]) == key(tail) and key(tail):
            return join_units(out_units[len(tail):])
    return output.strip()


def chrf(hypothesis: str, reference: str, word_order: int = 2) -> float:
    """chrF++ (word_order=2, the paper's metric) or plain chrF (word_order=0, what the released
    numbers were computed with), sacrebleu's sentence-level implementation, 0-100."""
    from sacrebleu.metrics import CHRF

    return float(CHRF(word_order=word_order).sentence_score(hypothesis, [reference]).score)


def bleu(hypothesis: str, reference: str) -> float:
    """Sentence BLEU (sacrebleu, smoothed 'exp') over script_tokens, 0-100."""
    from sacrebleu.metrics import BLEU

    hyp, ref = " ".join(script_tokens(hypothesis)), " ".join(script_tokens(reference))
    return float(BLEU(tokenize="none", effective_order=True).sentence_score(hyp, [ref]).score)
