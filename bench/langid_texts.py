"""Real text in Shared Path's 95 languages: the Universal Declaration of Human Rights as the
Unicode "UDHR in XML" project publishes it (https://github.com/eric-muller/udhr, data/udhr/;
translations from the OHCHR, https://www.ohchr.org/en/human-rights/universal-declaration), for
94 of them. Sindhi has no text there (status only): its text is the Kawish newswire sentences of
the Universal Dependencies Sindhi-Isra treebank (https://github.com/UniversalDependencies/
UD_Sindhi-Isra, sd_isra-ud-test.conllu, CC BY-SA 4.0), the ``# text =`` lines in order.

Each translation is cut into documents the way a corpus filter sees paragraphs: consecutive
``<para>`` texts joined until the document is longer than 600 characters (Shared Path §5.2 keeps
"more than 600 characters"); a last piece shorter than that is dropped.

Usage: python bench/langid_texts.py UDHR_XML_DIR SINDHI_CONLLU --out tests/fixtures/langid --per-language 3
(writes ``<lang>.txt``, one document per line, the first N documents of each language).
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

# mC4 code -> UDHR file (data/udhr/udhr_<file>.xml). Where the project has several translations
# the choice is named: the variety mC4's text is mostly in (Latin Malay, Cyrillic Serbian, Latin
# Uzbek and Azerbaijani, monotonic Greek, Bokmål, Kurmanji, Nigerian Hausa, 1996 German spelling).
UDHR_FILES = {
    "en": "eng", "ru": "rus", "es": "spa", "de": "deu_1996", "fr": "fra", "it": "ita", "pt": "por_PT",
    "pl": "pol", "nl": "nld", "tr": "tur", "ja": "jpn", "vi": "vie", "id": "ind", "cs": "ces",
    "zh": "cmn_hans", "fa": "pes_1", "ar": "arb", "sv": "swe", "ro": "ron_2006", "el": "ell_monotonic",
    "uk": "ukr", "hu": "hun", "da": "dan", "fi": "fin", "no": "nob", "bg": "bul", "hi": "hin", "sk": "slk",
    "ko": "kor", "th": "tha", "ca": "cat", "ms": "mly_latn", "iw": "heb", "lt": "lit", "sl": "slv",
    "mr": "mar", "bn": "ben", "et": "est", "lv": "lav", "az": "azj_latn", "gl": "glg", "cy": "cym",
    "sq": "als", "ta": "tam", "sr": "srp_cyrl", "ne": "nep", "lb": "ltz", "hy": "hye", "kk": "kaz",
    "ka": "kat", "mt": "mlt", "af": "afr", "fil": "tgl", "is": "isl", "mk": "mkd", "ml": "mal",
    "ur": "urd", "be": "bel", "eu": "eus", "tg": "tgk", "te": "tel", "kn": "kan", "ky": "kir", "sw": "swh",
    "so": "som", "my": "mya", "uz": "uzn_latn", "km": "khm", "gu": "guj", "jv": "jav",
    "zu": "zul", "si": "sin", "eo": "epo", "ga": "gle", "pa": "pan", "ceb": "ceb", "mg": "plt",
    "ps": "pbu", "sn": "sna", "gd": "gla", "ku": "kmr", "su": "sun", "ht": "hat_kreyol", "ha": "hau_NG",
    "ny": "nya_chechewa", "am": "amh", "yi": "ydd", "lo": "lao", "mi": "mri", "sm": "smo", "ig": "ibo",
    "xh": "xho", "st": "sot", "yo": "yor",
}
MIN_CHARS = 600


def paragraphs(path: Path) -> list[str]:
    """The ``<para>`` texts of one UDHR XML file, in document order (titles left out)."""
    root = ET.parse(path).getroot()
    out = []
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] == "para":
            text = " ".join("".join(element.itertext()).split())
            if text:
                out.append(text)
    return out


def joined(pieces: list[str], min_chars: int = MIN_CHARS) -> list[str]:
    """Consecutive pieces joined until each document is longer than ``min_chars``."""
    out, current = [], ""
    for piece in pieces:
        current = f"{current} {piece}" if current else piece
        if len(current) > min_chars:
            out.append(current)
            current = ""
    return out


def conllu_sentences(path: Path) -> list[str]:
    return [line[len("# text = "):].strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("# text = ")]


def real_documents(udhr_folder: Path, sindhi_conllu: Path) -> dict[str, list[str]]:
    """mC4 language -> its documents (UDHR; Sindhi from the UD treebank)."""
    out = {lang: joined(paragraphs(udhr_folder / f"udhr_{name}.xml")) for lang, name in UDHR_FILES.items()
           if (udhr_folder / f"udhr_{name}.xml").is_file()}
    out["sd"] = joined(conllu_sentences(sindhi_conllu))
    return dict(sorted(out.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("udhr_folder", type=Path)
    parser.add_argument("sindhi_conllu", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-language", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for lang, docs in real_documents(args.udhr_folder, args.sindhi_conllu).items():
        (args.out / f"{lang}.txt").write_text("\n".join(docs[: args.per_language]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
