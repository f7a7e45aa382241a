"""Sample and class weights (issue 46, item 1): an integer weight is the row repeated, a weight of 0
is the row removed, ``class_weight="balanced"`` is scikit-learn's matching ``sample_weight``, and
bad weights are clear errors, for every method that takes weights and both deep-GP estimators."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.class_weight import compute_sample_weight

from alphagp import DeepGPClassifier, DeepGPRegressor, GPClassifier
from alphagp.estimators import held_out_schemes, model_selection
from alphagp.likelihoods import LIKELIHOODS
from alphagp.methods import METHODS
from alphagp.metrics import negative_log_likelihood

WEIGHTED = [name for name, spec in METHODS.items() if spec.cls.CAPABILITIES.sample_weight]
UNWEIGHTED = [name for name, spec in METHODS.items() if not spec.cls.CAPABILITIES.sample_weight]


@pytest.fixture(scope="module")
def iris_rows():
    """45 rows of Iris (3 classes), integer weights 1-3 and the rows repeated by them."""
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = rng.choice(len(y), 45, replace=False)
    X, y = X[rows], y[rows]
    w = rng.integers(1, 4, len(y))
    return X, y, w, np.repeat(X, w, 0), np.repeat(y, w)


def _batch_fit(method: str, X, y, sample_weight=None, Z=None):
    """A deterministic batch fit: fixed inducing inputs (a method without them conditions on every
    row), no held-out rows."""
    sparse = METHODS[method].cls.CAPABILITIES.sparse
    clf = GPClassifier(method=method, inducing_points=Z if sparse else None, batch_size=None, max_iter=15,
                       early_stopping=False, random_state=0)
    return clf.fit(X, y, sample_weight=sample_weight)


@pytest.mark.parametrize("method", WEIGHTED)
def test_integer_weights_equal_repeated_rows(iris_rows, method):
    X, y, w, X_rep, y_rep = iris_rows
    Z = X[:6]
    weighted = _batch_fit(method, X, y, w, Z).predict_proba(X)
    repeated = _batch_fit(method, X_rep, y_rep, None, Z).predict_proba(X)
    unweighted = _batch_fit(method, X, y, None, Z).predict_proba(X)
    gap, effect = np.abs(weighted - repeated).max(), np.abs(unweighted - repeated).max()
    assert effect > 1e-3                                    # the weights matter on this problem
    if LIKELIHOODS[METHODS[method].likelihood].STOCHASTIC:
        # Monte Carlo likelihoods draw per row, so repeated rows draw differently: the weighted fit
        # stays far closer to the repeated one than the unweighted fit does (measured 5e-4 against 3e-3)
        assert gap < 0.3 * effect
    else:
        assert gap < 1e-9                                   # measured 1e-15 (EP family) to 2e-13 (vi, arpep)


@pytest.mark.parametrize("method", ["auto", "sep", "pep"])
def test_a_weight_of_zero_is_the_row_removed(iris_rows, method):
    X, y, w, _, _ = iris_rows
    w = np.where(np.arange(len(y)) % 4 == 0, 0.0, w)
    kw = dict(method=method, n_inducing=5, max_iter=10, random_state=0)
    weighted = GPClassifier(**kw).fit(X, y, sample_weight=w).predict_proba(X)
    removed = GPClassifier(**kw).fit(X[w > 0], y[w > 0], sample_weight=w[w > 0]).predict_proba(X)
    np.testing.assert_array_equal(weighted, removed)


@pytest.mark.parametrize("class_weight", ["balanced", {0: 1.0, 1: 3.0, 2: 0.5}])
def test_class_weight_equals_the_matching_sample_weight(iris_rows, class_weight):
    X, y, _, _, _ = iris_rows
    keep = np.r_[np.flatnonzero(y == 0)[:5], np.flatnonzero(y != 0)]            # imbalanced
    X, y = X[keep], y[keep]
    kw = dict(method="pep", n_inducing=5, max_iter=10, random_state=0)
    by_class = GPClassifier(class_weight=class_weight, **kw).fit(X, y).predict_proba(X)
    by_row = GPClassifier(**kw).fit(X, y, sample_weight=compute_sample_weight(class_weight, y)).predict_proba(X)
    plain = GPClassifier(**kw).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(by_class, by_row)
    assert np.abs(by_class - plain).max() > 1e-3


def test_balanced_weights_raise_the_minority_class_probability(iris_rows):
    X, y, _, _, _ = iris_rows
    keep = np.r_[np.flatnonzero(y == 0)[:3], np.flatnonzero(y == 1)]           # 3 against 15 rows
    X, y = X[keep], y[keep]
    kw = dict(method="pep", n_inducing=5, max_iter=20, random_state=0)
    plain = GPClassifier(**kw).fit(X, y).predict_proba(X)[:, 0]
    balanced = GPClassifier(class_weight="balanced", **kw).fit(X, y).predict_proba(X)[:, 0]
    assert np.all(balanced[y == 0] > plain[y == 0])


def test_model_selection_scores_the_weighted_held_out_nll(iris_rows):
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold
    X, y, w, _, _ = iris_rows
    w = w + 0.5                           # not counts, which the folds would split as copies of their rows
    est = GPClassifier(method="pep", alpha="auto", alpha_grid=[0.5, 1.0], n_inducing=5, max_iter=5, random_state=0)
    clf = clone(est).fit(X, y, sample_weight=w)
    assert clf.selection_scheme_ == "cv" and len(y) < held_out_schemes.TINY_ROWS
    seed = int(np.random.default_rng(0).integers(2**31 - 1))
    params = clf.cv_results_["params"][0]
    folds = RepeatedStratifiedKFold(n_splits=3, n_repeats=held_out_schemes.TINY_REPEATS,
                                    random_state=seed).split(np.zeros(len(y)), y)
    for k, (train, test) in enumerate(folds):
        model = clone(est).set_params(**model_selection._feasible(params, y[train], est.validation_fraction))
        model.fit(X[train], y[train], sample_weight=w[train])
        score = negative_log_likelihood(model.predict_proba(X[test]), y[test], w[test])
        assert clf.cv_results_[f"split{k}_test_nll"][0] == pytest.approx(score, rel=1e-9)
        assert score != pytest.approx(negative_log_likelihood(model.predict_proba(X[test]), y[test]), rel=1e-6)


def test_deep_gps_take_weights_as_repeated_rows(iris_rows):
    import torch
    X, y, w, X_rep, y_rep = iris_rows
    kw = dict(n_layers=1, n_inducing=6, batch_size=None, max_iter=10, early_stopping=False, random_state=0)
    weighted = DeepGPClassifier(**kw).fit(X, y, sample_weight=w)
    plain = DeepGPClassifier(**kw).fit(X, y)
    assert np.abs(weighted.predict_proba(X) - plain.predict_proba(X)).max() > 1e-3
    # the energy (eq. 15-17) with weights is the energy of the repeated rows; one layer draws nothing
    model = weighted.model_

    def energy(rows, labels, weight):
        Xs = torch.as_tensor((rows - weighted.mean_) / weighted.scale_)
        model.set_sample_weight(None if weight is None else torch.as_tensor(weight, dtype=torch.float64))
        terms = model.energy_terms(Xs, torch.as_tensor(labels), torch.Generator().manual_seed(0),
                                   torch.arange(len(labels)))
        return float(terms.shared + terms.data + terms.coupled)

    with_weights = energy(X, y, w)
    model.n_data = len(y_rep)
    assert with_weights == pytest.approx(energy(X_rep, y_rep, None), rel=1e-12)
    reg = DeepGPRegressor(**kw).fit(X[:, :3], X[:, 3], sample_weight=w)
    assert reg.y_mean_ == pytest.approx(np.mean(X_rep[:, 3]), rel=1e-12)          # weighted standardisation
    reg_plain = DeepGPRegressor(**kw).fit(X[:, :3], X[:, 3])
    assert np.abs(reg.predict(X[:, :3]) - reg_plain.predict(X[:, :3])).max() > 1e-5    # measured 7e-4
    by_class = DeepGPClassifier(class_weight="balanced", **kw).fit(X, y)
    by_row = DeepGPClassifier(**kw).fit(X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_array_equal(by_class.predict_proba(X), by_row.predict_proba(X))


@pytest.mark.parametrize(("sample_weight", "class_weight", "message"), [
    (-np.ones(45), None, "Negative values"),
    (np.r_[np.nan, np.ones(44)], None, "NaN"),
    (np.ones(44), None, "44"),
    (np.zeros(45), None, "at least one non-zero"),
    (None, {0: 1.0, 7: 2.0}, r"class_weight names classes not in y: \[7\]"),
    (None, "heaviest", "class_weight"),
    # issue 60, item 4: class weights are checked as sample weights are
    (None, {0: -1.0}, r"finite non-negative number; got \{0: -1.0\}"),
    (None, {0: float("nan")}, r"finite non-negative number; got \{0: nan\}"),
    (None, {0: float("inf")}, r"finite non-negative number; got \{0: inf\}"),
    # issue 60, item 3: weights that sum past what a fit represents are refused, naming the row
    (np.r_[np.ones(5), 1e300, np.ones(39)], None, r"sum to 1e\+300, more than 1e\+15: .*row 5's \(counted from 0\) 1e\+300"),
    (np.r_[np.ones(5), 1e20, np.ones(39)], None, r"row 5's \(counted from 0\) 1e\+20"),
])
def test_bad_weights_are_clear_errors(iris_rows, sample_weight, class_weight, message):
    X, y, _, _, _ = iris_rows
    with pytest.raises(ValueError, match=message):
        GPClassifier(n_inducing=5, max_iter=2, class_weight=class_weight).fit(X, y, sample_weight=sample_weight)


def test_a_class_whose_rows_all_weigh_zero_is_an_error(iris_rows):
    X, y, _, _, _ = iris_rows
    with pytest.raises(ValueError, match=r"every row of class \[2\] has weight 0"):
        GPClassifier(n_inducing=5, max_iter=2).fit(X, y, sample_weight=(y != 2).astype(float))


@pytest.mark.parametrize("method", UNWEIGHTED)
def test_methods_without_weights_refuse_them(iris_rows, method):
    X, y, w, _, _ = iris_rows
    with pytest.raises(ValueError, match=f"method='{method}' takes no sample weights"):
        GPClassifier(method=method, n_inducing=5, max_iter=2).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="takes no sample weights"):
        GPClassifier(method=method, n_inducing=5, max_iter=2, class_weight="balanced").fit(X, y)


def test_the_command_line_takes_a_weight_column_and_class_weights(iris_rows, tmp_path, capsys):
    import pandas as pd

    from alphagp.cli import main
    X, y, w, _, _ = iris_rows
    frame = pd.DataFrame(X, columns=list("abcd")).assign(label=y, w=w)
    path, model = tmp_path / "iris.csv", tmp_path / "m.safetensors"
    frame.to_csv(path, index=False)
    base = ["--quiet", "fit", "--data", str(path), "--target", "label", "--model", str(model), "--method", "pep",
            "--n-inducing", "5", "--max-iter", "10"]
    assert main([*base, "--weight-column", "w", "--class-weight", '{"1": 3}']) == 0
    fitted = GPClassifier.load(model)
    assert list(fitted.feature_names_in_) == list("abcd")                      # the weights are not a feature
    direct = GPClassifier(method="pep", n_inducing=5, max_iter=10, random_state=0, class_weight={1: 3.0})
    direct.fit(frame[list("abcd")], y, sample_weight=w)
    np.testing.assert_array_equal(fitted.predict_proba(frame[list("abcd")]), direct.predict_proba(frame[list("abcd")]))
    capsys.readouterr()
    for flags, message in [(["--weight-column", "v"], "'v' is not a column"),
                           (["--class-weight", '{"7": 2}'], "names classes not in the data: ['7']"),
                           (["--class-weight", "heavy"], "expected 'balanced' or a JSON object"),
                           (["--class-weight", '{"1": NaN}'], "finite non-negative numbers"),
                           (["--class-weight", '{"1": Infinity}'], "finite non-negative numbers"),
                           (["--weight-column", "w", "--method", "gibbs"], "takes no sample weights")]:
        try:
            code = main([*[f for f in base if f not in ("pep", "--method")], *flags])
        except SystemExit as stop:                          # argparse's own refusals exit
            code = stop.code
        assert code == 2
        assert message in capsys.readouterr().err


def test_a_checkpoint_refuses_a_fit_with_other_weights(iris_rows, tmp_path):
    from alphagp.training import CheckpointMismatchError
    X, y, w, _, _ = iris_rows
    kw = dict(method="pep", n_inducing=5, max_iter=3, random_state=0, checkpoint=str(tmp_path / "fit.ckpt"))
    GPClassifier(**kw).fit(X, y, sample_weight=w)
    with pytest.raises(CheckpointMismatchError, match="sample_weight_sha256"):
        GPClassifier(**{**kw, "max_iter": 6}).fit(X, y, sample_weight=w[::-1])


@pytest.mark.parametrize("scale", [1e-40, 1e-300])
def test_tiny_weights_fit_where_a_method_takes_them_and_a_candidate_that_refuses_is_left_out(scale):
    """Issue 80: weights of 1e-300, which exact EP and the class frequencies fit, ended the default's
    fit (its closed form's kernel start searched in float32, where 1e-40 is 0 and the label noise over
    it infinite); ``method="dirichlet"`` refused 1e-40 in float64. Now the start searches such
    weights in float64, and a candidate that raises is left out with its reason."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = (X[:, 0] + 0.5 * rng.standard_normal(80) > 0).astype(int)
    weight = np.full(80, scale)
    closed_form = GPClassifier(method="dirichlet", random_state=0).fit(X, y, sample_weight=weight)
    assert np.all(np.isfinite(closed_form.predict_proba(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = GPClassifier(random_state=0).fit(X, y, sample_weight=weight)
    results = default.cv_results_
    proba = default.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-12)
    for failure, nll in zip(results["failure"], results["mean_test_nll"]):
        assert (failure is None) == bool(np.isfinite(nll))      # scored, or left out with a reason
    with pytest.raises(ValueError, match="scale the weights up or fit with dtype='float64'"):
        GPClassifier(method="dirichlet", dtype="float32", random_state=0).fit(X, y, sample_weight=weight)
