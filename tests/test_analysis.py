"""Bootstrap CIs and CKA summaries on known cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from babelprobe.analysis.bootstrap import bootstrap_ci
from babelprobe.families.cka.analysis import summarise_cka


def test_bootstrap_known_cases():
    ones = bootstrap_ci([1.0] * 50)
    assert (ones.low, ones.mean, ones.high) == (1.0, 1.0, 1.0)
    half = bootstrap_ci([1.0, 0.0] * 500, n_resamples=10_000, seed=0)
    # the bootstrap of a proportion is Binomial(n, p)/n: 95% interval ~ p +/- 1.96 sqrt(p(1-p)/n)
    expected = 1.96 * np.sqrt(0.25 / 1000)
    assert half.mean == 0.5
    assert half.half_width == pytest.approx(expected, rel=0.08)
    lo, hi = stats.binom.ppf([0.025, 0.975], 1000, 0.5) / 1000
    assert half.low == pytest.approx(lo, abs=0.004) and half.high == pytest.approx(hi, abs=0.004)


def test_bootstrap_is_seeded():
    data = np.random.default_rng(1).random(300)  # continuous: quantiles move with the seed
    assert bootstrap_ci(data, seed=7) == bootstrap_ci(data, seed=7)
    assert bootstrap_ci(data, seed=7) != bootstrap_ci(data, seed=8)
    assert bootstrap_ci([]).n == 0


def items(rows):
    return pd.DataFrame(rows, columns=["fact_id", "language", "script", "relation", "mode", "known", "error"])


def test_summary_tables():
    rows = []
    for i in range(40):
        rows.append((f"e{i}", "en", "Latin", "P36" if i % 2 else "P17", "first-token", i < 30, None))
    for i in range(40):
        rows.append((f"r{i}", "ru", "Cyrillic", "P36", "first-token", i < 10, None))
    rows.append(("r-err", "ru", "Cyrillic", "P36", "first-token", None, "ValueError: too long"))
    summary = summarise_cka(items(rows), n_resamples=2000)
    en, ru = summary.languages
    assert (en.group, en.accuracy, en.n, en.errors, en.script) == ("en", 0.75, 40, 0, "Latin")
    assert (ru.accuracy, ru.n, ru.errors, ru.script) == (0.25, 40, 1, "Cyrillic")
    assert summary.multilingual_accuracy == pytest.approx(0.5)
    assert summary.multilingual_half_width == pytest.approx((en.half_width + ru.half_width) / 2)
    # by hand: expected 20 per cell; Yates-corrected chi2 = 4 * (|30 - 20| - 0.5)^2 / 20 = 18.05, and
    # for one degree of freedom p = erfc(sqrt(chi2 / 2))
    assert summary.script_test.chi2 == pytest.approx(18.05) and summary.script_test.dof == 1
    assert summary.script_test.p_value == pytest.approx(math.erfc(math.sqrt(18.05 / 2)), rel=1e-9)
    assert summary.script_test.table == {"Cyrillic": [10, 30], "Latin": [30, 10]}
    relations = {r.group: r for r in summary.relations}
    assert relations["P17"].n == 20 and relations["P17"].accuracy == 0.75
    assert summary.n_errors == 1


def test_single_script_has_no_test():
    rows = [(f"e{i}", "en", "Latin", "P36", "full", i % 2 == 0, None) for i in range(10)]
    assert summarise_cka(items(rows), n_resamples=500).script_test is None


def test_all_known_has_no_test():
    # a zero column (every fact known) has no chi-squared test; it used to crash the summary
    rows = [(f"{lang}{i}", lang, script, "P36", "full", True, None)
            for lang, script in (("en", "Latin"), ("ru", "Cyrillic")) for i in range(5)]
    summary = summarise_cka(items(rows), n_resamples=500)
    assert summary.script_test is None and summary.multilingual_accuracy == 1.0
