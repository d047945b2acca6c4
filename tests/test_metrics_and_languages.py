"""Pure functions: the CKA rule (Polyglot-or-Not §3) and script detection."""

from __future__ import annotations

import math

import pytest

from babelprobe.text.scripts import detect_script
from babelprobe.text.units import joins_without_space
from babelprobe.families.cka.metrics import cka_known, cka_log_ratio, log_mean_exp


def test_cka_rule_compares_with_the_mean_of_false_probabilities():
    lp = math.log
    # P(true)=0.3 against false 0.5 and 0.05: mean 0.275 < 0.3 -> known (a max rule would say no)
    assert cka_known(lp(0.3), [lp(0.5), lp(0.05)])
    assert math.exp(cka_log_ratio(lp(0.3), [lp(0.5), lp(0.05)])) == pytest.approx(0.3 / 0.275)
    assert not cka_known(lp(0.2), [lp(0.5), lp(0.05)])
    assert not cka_known(lp(0.25), [lp(0.25)])  # a tie is not knowledge (CKA must exceed 1)


def test_log_space_survives_underflow():
    # whole-object probabilities of long objects underflow in linear space
    assert cka_known(-900.0, [-950.0, -1000.0])
    assert log_mean_exp([-1000.0, -1000.0]) == pytest.approx(-1000.0)
    with pytest.raises(ValueError):
        log_mean_exp([])


@pytest.mark.parametrize("text,script", [
    ("Paris is the capital of France", "Latin"),
    ("Руанда со столицей Кигали", "Cyrillic"),
    ("Prius виробляє", "Cyrillic"),  # a Latin brand name inside a Ukrainian sentence
    ("日本の首都は東京", "Han"),
    ("Αθήνα", "Greek"),
    ("القاهرة", "Arabic"),
    ("1984!", "Unknown"),
])
def test_detect_script(text, script):
    assert detect_script(text) == script


def test_joins_without_space():
    assert joins_without_space("日本の首都は")
    assert joins_without_space("東京。")  # punctuation after a Han character
    assert joins_without_space("ends with a space ")
    assert not joins_without_space("Paris is the capital of")
    assert not joins_without_space("Столица Китайской Народной Республики,")
