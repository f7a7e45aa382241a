"""The class frequencies (``method="class_frequencies"``): the weighted counts plus one half, by a
fit and by a stream's calls alike."""

import numpy as np

from alphagp import GPClassifier
from alphagp.methods.class_frequencies import PRIOR_COUNT


def _problem():
    rng = np.random.default_rng(3)
    return rng.standard_normal((60, 2)), rng.integers(0, 3, 60), rng.uniform(0.5, 2.0, 60)


def test_a_fit_predicts_the_weighted_counts_plus_the_prior_count():
    X, y, w = _problem()
    counts = np.bincount(y, weights=w, minlength=3) + PRIOR_COUNT
    proba = GPClassifier(method="class_frequencies").fit(X, y, sample_weight=w).predict_proba(X[:4])
    np.testing.assert_allclose(proba, np.tile(counts / counts.sum(), (4, 1)), rtol=1e-12)


def test_a_stream_adds_each_calls_counts_and_saves_them(tmp_path):
    X, y, w = _problem()
    whole = GPClassifier(method="class_frequencies").fit(X, y, sample_weight=w)
    stream = GPClassifier(method="class_frequencies")
    for rows in (slice(0, 7), slice(7, 30), slice(30, None)):
        stream.partial_fit(X[rows], y[rows], classes=[0, 1, 2], sample_weight=w[rows])
    np.testing.assert_allclose(stream.predict_proba(X[:2]), whole.predict_proba(X[:2]), rtol=1e-12)
    stream.save(tmp_path / "m.agp")
    again = GPClassifier.load(tmp_path / "m.agp")
    again.partial_fit(X[:5], y[:5])
    counts = np.bincount(y, weights=w, minlength=3) + np.bincount(y[:5], minlength=3) + PRIOR_COUNT
    np.testing.assert_allclose(again.predict_proba(X[:1])[0], counts / counts.sum(), rtol=1e-12)

