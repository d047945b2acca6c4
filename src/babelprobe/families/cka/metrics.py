"""Contrastive knowledge assessment, Polyglot-or-Not §3 (after Dong et al., 2022).

    CKA_M(s, r, o) = P_M(o | s, r) / E_o'[ P_M(o' | s, r) ]

and the model knows the fact iff CKA > 1, i.e. P(true) > mean over the false objects of P(false).
Computed in log space so that full-object probabilities (products over many tokens) never
underflow to 0/0.
"""

from __future__ import annotations

import math
from typing import Sequence


def log_mean_exp(logprobs: Sequence[float]) -> float:
    if not logprobs:
        raise ValueError("at least one counterfactual log-probability is needed")
    top = max(logprobs)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(lp - top) for lp in logprobs) / len(logprobs))


def cka_log_ratio(logp_true: float, logp_false: Sequence[float]) -> float:
    """log CKA = log P(true) - log mean P(false)."""
    return logp_true - log_mean_exp(logp_false)


def cka_known(logp_true: float, logp_false: Sequence[float]) -> bool:
    """The paper's decision rule: CKA > 1 (a tie is not knowledge)."""
    return cka_log_ratio(logp_true, logp_false) > 0.0
