"""Prediction sets (issue 46, item 3): the split-conformal threshold against its definition, the
coverage on a synthetic problem within its binomial bound, the same sets as MAPIE's, and the
calibration rows' round trip through a model file."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alphagp import GPClassifier
from alphagp.conformal import conformity_scores, prediction_sets, threshold


def blobs(n: int, seed: int):
    """Three overlapping Gaussian classes in 2-D (about 20 % of the rows nearer another class's mean)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centres = np.array([[0.0, 0.0], [1.5, 0.0], [0.75, 1.3]])
    return centres[y] + rng.normal(size=(n, 2)), y


@pytest.fixture(scope="module")
def fitted():
    X, y = blobs(400, 0)
    return GPClassifier(method="pep", n_inducing=10, max_iter=40, random_state=0).fit(X, y)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.floats(0.05, 0.95))
def test_the_threshold_is_the_smallest_that_covers_enough_calibration_rows(scores, level):
    scores = np.array(scores)
    n, q = len(scores), threshold(scores, level)
    needed = math.ceil((n + 1) * level)
    if needed > n:
        assert q == math.inf
    else:                      # the smallest score value q with at least `needed` scores at or below it
        assert np.sum(scores <= q) >= needed
        assert q in scores and np.sum(scores < q) < needed


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_coverage_on_fresh_rows_lies_within_its_binomial_bound(fitted, level):
    X_cal, y_cal = blobs(500, 1)
    X_test, y_test = blobs(4000, 2)
    fitted.conformalize(X_cal, y_cal)
    sets = fitted.predict_set(X_test, level)
    coverage = sets[np.arange(len(y_test)), y_test].mean()
    # given the calibration rows the coverage is Beta(k, n + 1 - k) around level (sd 0.013 at n = 500,
    # level 0.9), and the 4,000 test rows add binomial noise (sd 0.005): 4 sd of both
    spread = 4 * math.sqrt(level * (1 - level) * (1 / 500 + 1 / 4000))
    assert level - spread < coverage < level + 1 / 501 + spread
    on_calibration = fitted.predict_set(X_cal, level)[np.arange(len(y_cal)), y_cal].mean()
    assert on_calibration >= level                        # the quantile's definition, exactly
    assert 1.0 < sets.sum(1).mean() < 3.0                 # informative sets: neither singletons nor everything


def test_the_sets_are_mapies(fitted):
    classification = pytest.importorskip("mapie.classification")
    X_cal, y_cal = blobs(300, 3)
    X_test, _ = blobs(500, 4)
    mapie = classification.SplitConformalClassifier(estimator=fitted, confidence_level=[0.8, 0.9, 0.95],
                                                    conformity_score="lac", prefit=True)
    mapie.conformalize(X_cal, y_cal)
    _, theirs = mapie.predict_set(X_test)
    fitted.conformalize(X_cal, y_cal)
    for k, level in enumerate([0.8, 0.9, 0.95]):
        np.testing.assert_array_equal(fitted.predict_set(X_test, level), theirs[:, :, k])


def test_mapie_fits_an_unfitted_gpclassifier():
    classification = pytest.importorskip("mapie.classification")
    X, y = blobs(600, 5)
    mapie = classification.SplitConformalClassifier(
        estimator=GPClassifier(method="pep", n_inducing=10, max_iter=20, random_state=0), confidence_level=0.9,
        prefit=False)
    mapie.fit(X[:300], y[:300]).conformalize(X[300:], y[300:])
    X_test, y_test = blobs(2000, 6)
    _, sets = mapie.predict_set(X_test)
    assert abs(sets[np.arange(len(y_test)), y_test, 0].mean() - 0.9) < 4 * math.sqrt(0.09 * (1 / 300 + 1 / 2000))


def test_early_stopping_rows_calibrate_and_survive_a_model_file(tmp_path):
    X, y = blobs(600, 7)
    clf = GPClassifier(method="sep", batch_size=64, early_stopping=True, max_iter=20, random_state=0).fit(X, y)
    assert len(clf.conformity_scores_) == 60                           # the held-out 10 %
    clf.save(tmp_path / "m.safetensors")
    loaded = GPClassifier.load(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(loaded.conformity_scores_, clf.conformity_scores_)
    np.testing.assert_array_equal(loaded.predict_set(X[:50]), clf.predict_set(X[:50]))


def test_prediction_sets_need_calibration_rows_and_a_level_in_the_open_unit_interval(fitted):
    X, y = blobs(50, 8)
    fresh = GPClassifier(method="pep", n_inducing=5, max_iter=5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="predict_set needs calibration rows"):
        fresh.predict_set(X)
    fresh.conformalize(X, y)
    for level in (0.0, 1.0, 1.5, "0.9", None, True):          # issue 60, item 12: strings and None too
        with pytest.raises(ValueError, match="confidence_level must be a number in"):
            fresh.predict_set(X, level)
    with pytest.raises(ValueError, match="conditional must be None .* or 'class'"):
        fresh.predict_set(X, 0.9, conditional="label")
    with pytest.raises(ValueError, match="not seen"):
        fresh.conformalize(X, y + 5)
    with pytest.raises(ValueError, match="rows"):
        fresh.conformalize(X, y[:-1])


def test_the_module_functions_agree_with_the_estimator(fitted):
    X_cal, y_cal = blobs(200, 9)
    proba = fitted.predict_proba(X_cal)
    scores = conformity_scores(proba, y_cal)
    np.testing.assert_allclose(scores, 1 - proba[np.arange(len(y_cal)), y_cal])
    fitted.conformalize(X_cal, y_cal)
    np.testing.assert_array_equal(prediction_sets(proba, scores, 0.9), fitted.predict_set(X_cal, 0.9))


@pytest.mark.parametrize("level", [0.8, 0.9])
def test_class_conditional_sets_cover_every_class(fitted, level):
    """Issue 60, item 18: Mondrian sets hold the true label at the level for the rows of every
    class (within the binomial bound of each class's calibration and test rows), and each class's
    column is the marginal set calibrated on that class's calibration rows alone."""
    X_cal, y_cal = blobs(900, 10)
    X_test, y_test = blobs(6000, 11)
    fitted.conformalize(X_cal, y_cal)
    sets = fitted.predict_set(X_test, level, conditional="class")
    for k in range(3):
        n_cal, n_test = int(np.sum(y_cal == k)), int(np.sum(y_test == k))
        coverage = sets[y_test == k, k].mean()
        spread = 4 * math.sqrt(level * (1 - level) * (1 / n_cal + 1 / n_test))
        assert level - spread < coverage < level + 1 / (n_cal + 1) + spread
    for k in range(3):
        alone = GPClassifier.__new__(GPClassifier)          # the same model, calibrated on class k's rows only
        alone.__dict__.update(fitted.__dict__)
        alone.conformalize(X_cal[y_cal == k], y_cal[y_cal == k])
        np.testing.assert_array_equal(sets[:, k], alone.predict_set(X_test, level)[:, k])


def test_class_conditional_sets_survive_a_model_file_and_older_files_say_what_to_do(tmp_path):
    X, y = blobs(600, 12)
    clf = GPClassifier(method="sep", batch_size=64, early_stopping=True, max_iter=20, random_state=0).fit(X, y)
    clf.save(tmp_path / "m.agp")
    loaded = GPClassifier.load(tmp_path / "m.agp")
    np.testing.assert_array_equal(loaded.conformity_classes_, clf.conformity_classes_)
    np.testing.assert_array_equal(loaded.predict_set(X[:50], 0.9, conditional="class"),
                                  clf.predict_set(X[:50], 0.9, conditional="class"))
    del loaded.conformity_classes_                                # a file written before the classes were kept
    with pytest.raises(ValueError, match="call conformalize"):
        loaded.predict_set(X[:5], conditional="class")


def test_non_empty_sets_add_the_most_probable_class_to_the_empty_ones_and_keep_the_coverage(fitted):
    """Issue 74: at a level below the model's accuracy some sets are empty (documented); with
    ``non_empty=True`` those hold their most probable class, the others are unchanged, and the
    coverage on fresh rows does not fall."""
    X_cal, y_cal = blobs(500, 1)
    X_test, y_test = blobs(4000, 2)
    fitted.conformalize(X_cal, y_cal)
    plain, filled = fitted.predict_set(X_test, 0.6), fitted.predict_set(X_test, 0.6, non_empty=True)
    empty = ~plain.any(1)
    assert empty.sum() > 20 and filled.any(1).all()
    np.testing.assert_array_equal(filled[~empty], plain[~empty])
    np.testing.assert_array_equal(filled[empty].sum(1), 1)
    top = np.argmax(fitted.predict_proba(X_test[empty]), 1)
    assert filled[empty][np.arange(empty.sum()), top].all()
    rows = np.arange(len(y_test))
    assert filled[rows, y_test].mean() >= plain[rows, y_test].mean()
    with pytest.raises(ValueError, match="non_empty must be True or False"):
        fitted.predict_set(X_test[:3], 0.6, non_empty="yes")
