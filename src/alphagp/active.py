"""Active learning by predictive entropy (alpha paper section 5.6).

The next point to label is the pool point where the classifier is least certain: the largest
entropy H[p(y | x)] = -sum_c p_c log p_c of its predictive distribution.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import entropy


def predictive_entropy(proba: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each row of ``proba`` ``[N, C]``; returns ``[N]``."""
    return entropy(np.asarray(proba, dtype=np.float64), axis=1)


def most_uncertain(classifier, X_pool, n: int = 1) -> np.ndarray:
    """Indices of the ``n`` pool rows of highest predictive entropy under a fitted classifier,
    most uncertain first (ties broken by the lower index)."""
    scores = predictive_entropy(classifier.predict_proba(X_pool))
    if not 1 <= n <= len(scores):
        raise ValueError(f"n must lie in [1, {len(scores)}] (the pool size), got {n}")
    return np.argsort(-scores, kind="stable")[:n]
