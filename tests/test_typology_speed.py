"""lang2vec's tables read once per process (analysis/typology.py ``lang2vec_features``) give what
``lang2vec.get_features`` gives, value for value (issue 31: a report re-read the ``fam`` archive
once per feature name)."""

from __future__ import annotations

import pytest

pytest.importorskip("lang2vec")

from babelprobe.analysis.typology import import_lang2vec, lang2vec_features  # noqa: E402

# syntax_wals has unknown values ("--"), fam 3,700 features. ISO 639-3 codes across families and
# scripts (Latin, Cyrillic, Han, Arabic, Devanagari, Ge'ez, Hangul), a code lang2vec does not know
# ("qqq"), and a repeated one
CODES = ("eng", "deu", "rus", "zho", "ara", "hin", "amh", "kor", "fin", "yor", "qqq", "eng")


@pytest.mark.parametrize("feature_set", ["syntax_knn", "fam", "syntax_wals"])
def test_features_equal_lang2vecs_own(feature_set: str) -> None:
    l2v = import_lang2vec()
    present = [c for c in CODES if c in l2v.available_languages()]
    expected = l2v.get_features(present, feature_set, header=True)
    got = lang2vec_features(CODES, feature_set)
    assert list(got) == list(expected)
    assert got["CODE"] == expected["CODE"]
    for code in present:
        assert len(got[code]) == len(expected[code])
        # '--' (unknown) where lang2vec has it, the same float elsewhere
        assert [str(v) for v in got[code]] == [str(v) for v in expected[code]]


def test_unknown_codes_only_give_nothing() -> None:
    assert lang2vec_features(("qqq", "zzz"), "fam") == {}


def test_a_feature_set_reads_its_archive_once(monkeypatch) -> None:
    """lang2vec's get_named_set indexes the lazily read .npz once per feature name (3,700 times for
    ``fam``, each decompressing the ``feats`` array): here the arrays are read once per table."""
    from numpy.lib.npyio import NpzFile

    from babelprobe.analysis import typology

    import_lang2vec()  # its import reads family_features.npz itself (available_languages)
    reads = []
    original = NpzFile.__getitem__
    monkeypatch.setattr(NpzFile, "__getitem__", lambda self, key: reads.append(key) or original(self, key))
    if hasattr(typology, "_lang2vec_table"):  # a table read earlier in this process is read again
        typology._lang2vec_table.cache_clear()
    features = lang2vec_features.__wrapped__(("deu", "rus", "jpn"), "fam")
    assert len(features["CODE"]) > 1000  # every Glottolog family feature
    assert len(reads) <= 5  # data, langs, feats, sources: once each
