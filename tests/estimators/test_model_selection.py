"""``method="auto"``: validated model selection over a portfolio of candidates. The scores are
checked against a second computation of the same cross-validation, the budget with a fake
clock, the rows read against the training rows, and the choice through model files and
checkpoints."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from alphagp import GPClassifier
from alphagp.estimators import classifier_family, held_out_schemes, model_selection
from alphagp.estimators.model_selection import Candidate
from alphagp.metrics import negative_log_likelihood

from conftest import Interrupt, fake_fit_result, interrupt_at

#: a portfolio of quick fits; "flat" cannot learn (a fixed, enormous lengthscale), so it must lose
QUICK = (
    Candidate("sep", {"method": "sep", "batch_size": 40, "inducing_init": "kmeans", "early_stopping": True,
                      "max_iter": 4}),
    Candidate("flat", {"method": "pep", "max_iter": 2, "optimize_hyperparameters": False,
                       "kernel_params": {"lengthscale": 1e4}}),
    Candidate("pep", {"method": "pep", "max_iter": 8}),
    Candidate("vi", {"method": "vi", "max_iter": 8}, max_rows=150),
)


@pytest.fixture
def quick_portfolio(monkeypatch):
    monkeypatch.setattr(model_selection, "PORTFOLIO", QUICK)


def _select(estimator, X, *args, **kwargs):
    """:func:`~alphagp.estimators.model_selection.select` of ``estimator``'s values and fit."""
    return model_selection.select(model_selection.selector_of(estimator, X.shape[1]), X, *args, **kwargs)


def _problem(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(n) > 0, "a", "b")
    y[X[:, 1] > 0.8] = "c"
    return X, y


def test_selection_keeps_the_candidate_with_the_best_cross_validated_nll(quick_portfolio):
    X, y = _problem()
    clf = GPClassifier(n_inducing=6, cv=3, random_state=0).fit(X, y)
    results = clf.cv_results_
    assert clf.selection_scheme_ == "cv" and results["candidate"] == ["sep", "flat", "pep", "vi"]
    # the same folds and fits computed again, outside the estimator
    seed = results["params"][0]["random_state"]
    folds = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y))
    labels = np.unique(y)
    for i, params in enumerate(results["params"]):
        params = {k: v for k, v in params.items() if k not in ("checkpoint", "verbose")}
        nll = [negative_log_likelihood(GPClassifier(n_inducing=6, **params).fit(X[tr], y[tr]).predict_proba(X[te]),
                                       np.searchsorted(labels, y[te])) for tr, te in folds]
        scored = [results[f"split{k}_test_nll"][i] for k in range(3)]
        raced = int(np.sum(np.isfinite(scored)))             # racing drops a candidate clearly behind
        np.testing.assert_allclose(scored[:raced], nll[:raced], rtol=1e-10)
        assert results["mean_test_nll"][i] == pytest.approx(np.mean(nll[:raced]), rel=1e-10)
        assert results["n_test_splits"][i] == raced
    best = int(np.nanargmin(results["mean_test_nll"]))
    assert results["rank_test_nll"][best] == 1 and clf.candidate_ == results["candidate"][best]
    assert results["rank_test_nll"][1] == 4                      # "flat" learns nothing and ranks last
    assert results["split0_test_nll"][1] > np.log(3) - 0.2
    # the winner refitted on all rows
    winner = {k: v for k, v in results["params"][best].items() if k not in ("checkpoint", "verbose")}
    refit = GPClassifier(n_inducing=6, **winner).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X[:20]), refit.predict_proba(X[:20]))
    assert clf.method_ == winner["method"] and list(clf.classes_) == ["a", "b", "c"]


def test_selection_reads_only_training_rows_and_scores_each_fold_on_rows_it_did_not_fit(quick_portfolio,
                                                                                        monkeypatch):
    X, y = _problem()
    index = {row.tobytes(): i for i, row in enumerate(X)}
    fitted, fitted_by, scored = [], [], []
    real_fit, real_proba = GPClassifier._fit_result, classifier_family.class_probabilities

    def spy_fit(self, params, X_, *args, **kwargs):        # every fit, candidates' and final, runs through it
        fitted.append({index[row.tobytes()] for row in np.asarray(X_)})     # KeyError: a row not in X
        fitted_by.append(repr({k: v for k, v in params.items() if k != "max_time"}))
        return real_fit(self, params, X_, *args, **kwargs)

    def spy_proba(predictor, X_, *args):
        rows = {index[row.tobytes()] for row in np.asarray(X_)}
        if isinstance(X_, np.ndarray):       # the selection's scoring (early stopping passes a lazy view)
            scored.append((rows, fitted[-1], fitted_by[-1]))
        else:
            assert rows <= fitted[-1]        # early stopping holds out rows of the fold's training rows
        return real_proba(predictor, X_, *args)

    monkeypatch.setattr(GPClassifier, "_fit_result", spy_fit)
    monkeypatch.setattr(held_out_schemes, "class_probabilities", spy_proba)
    monkeypatch.setattr(classifier_family, "class_probabilities", spy_proba)
    clf = GPClassifier(n_inducing=6, cv=3, random_state=0).fit(X, y)
    folds = [sum(np.isfinite(clf.cv_results_[f"split{k}_test_nll"][i]) for k in range(3)) for i in range(4)]
    assert len(scored) == sum(folds) and all(rows and not rows & fit_rows for rows, fit_rows, _ in scored)
    # each candidate scored on every fold scores every training row once (racing may stop one early)
    by_candidate: dict = {}
    for rows, _, candidate in scored:
        by_candidate.setdefault(candidate, []).append(rows)
    assert sorted(len(v) for v in by_candidate.values()) == sorted(f for f in folds if f)
    for held in by_candidate.values():
        if len(held) == 3:
            assert set().union(*held) == set(range(len(X))) and sum(map(len, held)) == len(X)
    assert sum(f == 3 for f in folds) >= 1


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("overrun", [1.0, 3.0])
def test_the_selection_stays_within_max_time(quick_portfolio, monkeypatch, overrun):
    """Each fit gets an equal share of the time left (the final fit counted); fits that overrun
    their share leave the later candidates unscored, ranked last."""
    X, y = _problem()
    clock, shares = FakeClock(), []

    def fake_fit(self, params, X_, y_idx, classes, weight=None, callbacks=None, start=None, max_time=None, own=True):
        shares.append(max_time)
        clock.now += max_time * overrun
        return fake_fit_result()

    monkeypatch.setattr(GPClassifier, "_fit_result", fake_fit)
    monkeypatch.setattr(held_out_schemes, "class_probabilities", lambda _p, X_, _n: np.full((len(X_), 3), 1 / 3))
    est = GPClassifier(cv=2, max_time=70.0, random_state=0)
    y_idx = np.searchsorted(np.unique(y), y)
    selection = _select(est, X, y, y_idx, clock=clock)
    assert all(s > 0 for s in shares)
    if overrun == 1.0:     # 4 candidates x 2 folds + the final fit: 70 s in 9 equal shares
        assert len(shares) == 8 and sum(shares) == pytest.approx(70.0 * 8 / 9)
        assert all(np.isfinite(selection.cv_results["mean_test_nll"]))
    else:
        assert sum(shares[:-1]) < 70.0 and len(shares) < 8
        unscored = np.isnan(selection.cv_results["mean_test_nll"])
        assert unscored[-1] and selection.cv_results["rank_test_nll"][-1] == 4
        assert not unscored[0] and selection.candidate.name != "vi"


def test_one_split_from_cv_rows_on_keeps_the_winners_validated_fit(quick_portfolio, monkeypatch):
    monkeypatch.setattr(held_out_schemes, "CV_ROWS", 100)
    X, y = _problem(200)
    clf = GPClassifier(n_inducing=6, random_state=0).fit(X, y)
    results = clf.cv_results_
    assert clf.selection_scheme_ == "split" and results["candidate"] == ["sep", "flat", "pep"]   # vi: below 150
    assert clf.early_stopping_ is True and clf.model_.n_data == 200 - 20
    # the score of each candidate is the held-out NLL of the state it returned
    held = GPClassifier(**{k: v for k, v in results["params"][0].items() if k not in ("checkpoint", "verbose")},
                        n_inducing=6).fit(X, y)
    assert results["mean_test_nll"][0] == pytest.approx(min(held.validation_scores_), rel=1e-12)
    assert clf.validation_scores_[clf.best_iteration_ - 1] == pytest.approx(min(results["mean_test_nll"]), rel=1e-12)


def test_explicit_parameters_override_the_candidates_and_filter_them(quick_portfolio):
    X, y = _problem()
    clf = GPClassifier(n_inducing=5, max_iter=3, random_state=0).fit(X, y)
    assert clf.n_inducing_ == 5 and all(h["epoch"] <= 3 for h in clf.history_)
    assert all("max_iter" not in p and "n_inducing" not in p for p in clf.cv_results_["params"])
    # vi takes no alpha: an explicit alpha leaves it out
    clf = GPClassifier(n_inducing=5, alpha=0.3, random_state=0).fit(X, y)
    assert "vi" not in clf.cv_results_["candidate"] and clf.alpha_ == 0.3
    # explicit mini-batches leave out the batch-only candidates (pep keeps per-point sites and takes them)
    clf = GPClassifier(n_inducing=5, batch_size=50, max_iter=2, random_state=0)
    assert [c.name for c, _ in model_selection.candidates_for(model_selection.selector_of(clf, X.shape[1]), len(y), (*QUICK, Candidate(
        "label_regression", {"method": "label_regression"})))] == ["sep", "flat", "pep", "vi"]
    # sep has the Heaviside likelihood, which takes no epsilon
    with pytest.raises(ValueError, match="no candidate method"):
        _select(GPClassifier(epsilon=0.01), X, y, np.searchsorted(np.unique(y), y),
                               portfolio=(QUICK[0],))


def test_a_class_of_one_row_fits_the_first_candidate_unscored(quick_portfolio):
    X, y = _problem()
    y = y.copy()
    y[0] = "z"
    clf = GPClassifier(n_inducing=6, random_state=0).fit(X, y)
    assert clf.selection_scheme_ == "none" and clf.candidate_ == "sep" and clf.early_stopping_ is False
    assert np.isnan(clf.cv_results_["mean_test_nll"][0])


def test_the_choice_survives_model_files_and_checkpoints(quick_portfolio, tmp_path):
    X, y = _problem()
    params = dict(n_inducing=6, random_state=0)
    whole = GPClassifier(**params).fit(X, y)
    whole.save(tmp_path / "m.agp")
    loaded = GPClassifier.load(tmp_path / "m.agp")
    assert (loaded.candidate_, loaded.selection_scheme_, loaded.fit_plan_) == \
        (whole.candidate_, whole.selection_scheme_, whole.fit_plan_)
    assert loaded.cv_results_["candidate"] == whole.cv_results_["candidate"]
    np.testing.assert_array_equal(loaded.cv_results_["mean_test_nll"], whole.cv_results_["mean_test_nll"])
    np.testing.assert_array_equal(loaded.predict_proba(X[:30]), whole.predict_proba(X[:30]))
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Interrupt):
        GPClassifier(**params, checkpoint=path).fit(X, y, callbacks=[interrupt_at(2)])
    with pytest.warns(UserWarning, match="checkpoint"):
        resumed = GPClassifier(**params, checkpoint=path).fit(X, y)
    assert resumed.candidate_ == whole.candidate_
    np.testing.assert_array_equal(resumed.cv_results_["mean_test_nll"], whole.cv_results_["mean_test_nll"])
    np.testing.assert_array_equal(resumed.predict_proba(X[:30]), whole.predict_proba(X[:30]))


@pytest.mark.parametrize("keep", [True, False])
def test_one_split_leaves_no_share_for_a_final_fit_it_will_not_make(quick_portfolio, monkeypatch, keep):
    monkeypatch.setattr(held_out_schemes, "CV_ROWS", 100)
    X, y = _problem(200)
    clock, shares = FakeClock(), []

    def fake_fit(self, params, X_, y_idx, classes, weight=None, callbacks=None, start=None, max_time=None, own=True):
        shares.append(max_time)
        clock.now += max_time
        return fake_fit_result(1.0)

    monkeypatch.setattr(GPClassifier, "_fit_result", fake_fit)
    selection = _select(GPClassifier(max_time=60.0, random_state=0), X, y,
                                       np.searchsorted(np.unique(y), y), keep_split_fit=keep, clock=clock)
    assert selection.scheme == "split" and len(shares) == 3          # sep, flat, pep (vi: below 150 rows)
    assert sum(shares) == pytest.approx(60.0 if keep else 45.0)


def test_callbacks_see_the_final_fit_so_far(quick_portfolio):
    from alphagp.training import MetricsRecorder
    X, y = _problem()
    clf = GPClassifier(n_inducing=6, random_state=0)
    recorder = MetricsRecorder(X[:30], y[:30], every=1)
    clf.fit(X, y, callbacks=[recorder])
    assert len(recorder.rows) == clf.n_iter_ and clf.get_params()["method"] == "auto"
    assert all(np.isfinite(r["nll"]) for r in recorder.rows)
    # an explicit refit keeps nothing of the selection
    assert not hasattr(clf.set_params(method="pep", max_iter=2).fit(X, y), "cv_results_")


def test_a_candidate_that_fails_numerically_ranks_last_and_all_failing_is_an_error(quick_portfolio, monkeypatch):
    X, y = _problem()
    real_fit = GPClassifier._fit_result

    def failing_pep(self, params, X_, y_, *args, **kwargs):
        if params["method"] == "pep" and params["max_iter"] == 8 and len(y_) < len(y):    # the "pep" candidate's folds
            raise FloatingPointError("the training objective became non-finite")
        return real_fit(self, params, X_, y_, *args, **kwargs)

    monkeypatch.setattr(GPClassifier, "_fit_result", failing_pep)
    clf = GPClassifier(n_inducing=6, random_state=0).fit(X, y)
    results = clf.cv_results_
    assert np.isnan(results["mean_test_nll"][2]) and results["rank_test_nll"][2] == 4 and clf.candidate_ != "pep"

    def failing(self, *args, **kwargs):
        raise FloatingPointError("non-finite")

    monkeypatch.setattr(GPClassifier, "_fit_result", failing)
    with pytest.raises(FloatingPointError, match="every candidate failed numerically"):
        _select(GPClassifier(random_state=0), X, y, np.searchsorted(np.unique(y), y))


def test_racing_drops_a_candidate_clearly_behind_and_keeps_one_within_the_margin(quick_portfolio, monkeypatch):
    """Scripted held-out NLLs, fold by fold: after the first (every candidate's first fit), "pep"
    leads (0.20 on every fold); "sep" (0.30) and "flat" (1.10) are more than the margin behind and
    are not fitted again; "vi" stays within it (0.21) and is scored on every fold."""
    X, y = _problem()
    script = {"sep": 0.30, "flat": 1.10, "pep": 0.20, "vi": 0.21}
    fits = []

    def name(params):
        return "flat" if params["max_iter"] == 2 else params["method"]

    def fake_fit(self, params, X_, y_idx, classes, weight=None, callbacks=None, start=None, max_time=None, own=True):
        fits.append(name(params))
        return fake_fit_result(scripted=script[name(params)])

    monkeypatch.setattr(GPClassifier, "_fit_result", fake_fit)
    monkeypatch.setattr(held_out_schemes, "class_probabilities",
                        lambda predictor, X_, _n: np.full((len(X_), 3), predictor.model.scripted))
    monkeypatch.setattr(held_out_schemes, "negative_log_likelihood", lambda proba, y_, w=None: float(proba[0, 0]))
    y_idx = np.searchsorted(np.unique(y), y)
    _select(GPClassifier(cv=3, random_state=0), X, y, y_idx, clock=FakeClock())
    assert fits == ["sep", "flat", "pep", "vi"] * 3          # folds of 40 rows: too few to race on (issue 79)
    fits.clear()
    monkeypatch.setattr(model_selection, "RACE_ROWS", 40)
    selection = _select(GPClassifier(cv=3, random_state=0), X, y, y_idx, clock=FakeClock())
    assert fits == ["sep", "flat", "pep", "vi"] + ["pep", "vi"] * 2
    results = selection.cv_results
    assert selection.candidate.name == "pep" and results["rank_test_nll"][2] == 1
    assert np.isnan(results["split1_test_nll"][1]) and results["split0_test_nll"][1] == 1.10
    assert np.isnan(results["split1_test_nll"][0]) and results["split0_test_nll"][0] == 0.30
    assert results["mean_test_nll"][3] == pytest.approx(0.21) and results["n_test_splits"] == [1, 1, 3, 3]
    # issue 80: a raced-out candidate's mean is that of the splits it was scored on, not NaN
    assert results["mean_test_nll"][0] == pytest.approx(0.30) and results["mean_test_nll"][1] == pytest.approx(1.10)
    assert model_selection.behind([0.2 * 1.09], [0.2, 0.5]) is False
    assert model_selection.behind([0.2 * 1.11], [0.2, 0.5]) is True


def test_a_candidate_alone_at_its_size_gets_the_whole_budget(monkeypatch):
    """Candidates are tried only at the rows they suit (``min_rows``, ``max_rows``); where one
    candidate alone suits the data on one split, it gets all of ``max_time`` (its validated fit is
    the final one, so no share is kept back)."""
    monkeypatch.setattr(held_out_schemes, "CV_ROWS", 100)
    monkeypatch.setattr(model_selection, "PORTFOLIO", (
        Candidate("small", {"method": "sep", "batch_size": 40}, max_rows=150),
        Candidate("large", {"method": "sep", "batch_size": 100, "n_inducing": 20}, min_rows=150)))
    X, y = _problem(200)
    clock, fits = FakeClock(), []

    def fake_fit(self, params, X_, y_idx, classes, weight=None, callbacks=None, start=None, max_time=None, own=True):
        fits.append((params["method"], params["n_inducing"], params["batch_size"], max_time))
        clock.now += max_time
        return fake_fit_result()

    monkeypatch.setattr(GPClassifier, "_fit_result", fake_fit)
    selection = _select(GPClassifier(max_time=600.0, random_state=0), X, y,
                                       np.searchsorted(np.unique(y), y), clock=clock)
    assert selection.candidate.name == "large" and selection.scheme == "split"
    assert fits == [("sep", 20, 100, 600.0)]


def test_wide_data_start_every_candidate_from_the_fixed_kernel_unless_the_user_asks(monkeypatch):
    monkeypatch.setattr(model_selection, "START_FEATURES", 2)
    monkeypatch.setattr(model_selection, "PORTFOLIO", (
        Candidate("pep", {"method": "pep", "max_iter": 2, "kernel_init": "regression"}),))
    X, y = _problem()
    y_idx = np.searchsorted(np.unique(y), y)
    wide = _select(GPClassifier(n_inducing=4, random_state=0), X, y, y_idx)
    assert wide.kernel_starts == {} and wide.params["kernel_init"] == "fixed"
    asked = _select(GPClassifier(n_inducing=4, random_state=0, kernel_init="regression"), X, y, y_idx)
    assert "regression" in asked.kernel_starts and "kernel_init" not in asked.params      # the user's value applies
    monkeypatch.setattr(model_selection, "START_FEATURES", 3)
    narrow = _select(GPClassifier(n_inducing=4, random_state=0), X, y, y_idx)
    assert "regression" in narrow.kernel_starts and narrow.params["kernel_init"] == "regression"


def test_the_inducing_clip_is_said_once_of_the_rows_given_and_not_for_auto():
    """Issue 60, item 15: on 58 rows the folds' clips of n_inducing were said a dozen times, for a
    parameter left at "auto"; now "auto" clips silently and an explicit value is warned once."""
    import warnings
    X, y = _problem()
    X, y = X[:58], y[:58]
    for n_inducing, expected in (("auto", 0), (100, 1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf = GPClassifier(n_inducing=n_inducing, max_iter=3, random_state=0).fit(X, y)
        said = [w for w in caught if "is larger than the" in str(w.message)]
        assert len(said) == expected and clf.n_inducing_ <= 58
        assert all("58 training rows" in str(w.message) for w in said)


@pytest.mark.parametrize("method", ["pep", "auto"])
def test_alpha_auto_trains_within_max_time(monkeypatch, method):
    """alpha="auto" is candidates of the one selection (issue 68): the alpha grid's fits, alone or
    every free-alpha candidate's under method="auto", and the final fit share the one budget, so
    the whole fit trains for at most max_time (a fake clock advanced by each fit's whole share)."""
    X, y = _problem()
    clock, shares = FakeClock(), []

    def fake_fit(self, params, X_, y_idx, classes, weight=None, callbacks=None, start=None, max_time=None, own=True):
        shares.append((params["method"], params["alpha"], max_time))
        clock.now += max_time
        return fake_fit_result()

    monkeypatch.setattr(GPClassifier, "_fit_result", fake_fit)
    monkeypatch.setattr(held_out_schemes, "class_probabilities", lambda _p, X_, _n: np.full((len(X_), 3), 1 / 3))
    monkeypatch.setattr(model_selection.time, "perf_counter", clock)
    clf = GPClassifier(method=method, alpha="auto", alpha_grid=[0.25, 0.5, 1.0], cv=2, max_time=40.0, verbose=True,
                       random_state=0).fit(X, y)
    grid = {a for _, a, _ in shares}
    assert grid == {0.25, 0.5, 1.0} and clf.selection_scheme_ == "cv"
    assert sum(t for _, _, t in shares) <= 40.0 * (1 + 1e-9) and clock.now <= 40.0 * (1 + 1e-9)
    methods = {m for m, _, _ in shares}
    assert methods == ({"pep"} if method == "pep" else {"sep", "exact_pep"})     # the free-alpha candidates
    assert len(shares) == 3 * len(methods) * 2 + 1                         # every (alpha, fold), then the refit


# ---------------------------------------------------------------------- issue 73: a selection that does not
# leak and never loses to the class frequencies
CLOSED = (Candidate("dirichlet", {"method": "dirichlet", "kernel_init": "dirichlet"}),
          Candidate("exact_ep", {"method": "exact_ep", "kernel_init": "exact_ep"}),
          model_selection.FREQUENCIES)


def test_a_count_weighted_table_scores_as_its_rows_repeated(monkeypatch):
    """Integer weights are copies of their rows, split across the folds (a row of weight 3 may be
    fitted with two copies and scored on one): every candidate's fold scores on the weighted table
    equal those on the table with its rows repeated, fold by fold."""
    monkeypatch.setattr(model_selection, "PORTFOLIO", (   # float64 throughout (the Dirichlet start searches in float32)
        Candidate("dirichlet", {"method": "dirichlet", "kernel_init": "fixed", "optimize_hyperparameters": False}),
        *CLOSED[1:]))
    X, y = _problem(45, seed=3)
    w = np.random.default_rng(4).integers(1, 4, len(y)).astype(float)
    y_idx = np.searchsorted(np.unique(y), y)
    weighted = _select(GPClassifier(random_state=0), X, y, y_idx, weight=w, race=False)
    repeated = _select(GPClassifier(random_state=0), np.repeat(X, w.astype(int), 0),
                                      np.repeat(y, w.astype(int)), np.repeat(y_idx, w.astype(int)), race=False)
    splits = [k for k in weighted.cv_results if k.startswith("split")]
    assert splits == [k for k in repeated.cv_results if k.startswith("split")]
    for k in splits:
        np.testing.assert_allclose(weighted.cv_results[k], repeated.cv_results[k], rtol=1e-8)


def test_the_folds_kernel_starts_see_only_their_training_rows(monkeypatch):
    from alphagp.estimators import model_selection as ms
    seen = []
    real = ms.fit_kernel_start

    def recording(X, y_idx, *args, **kwargs):
        seen.append(len(y_idx))
        return real(X, y_idx, *args, **kwargs)

    monkeypatch.setattr(ms, "fit_kernel_start", recording)
    monkeypatch.setattr(model_selection, "PORTFOLIO", CLOSED[:1] + (model_selection.FREQUENCIES,))
    X, y = _problem(150)
    selection = _select(GPClassifier(cv=3, random_state=0), X, y, np.searchsorted(np.unique(y), y))
    assert len(seen) == 3 and all(n in (100, 101) for n in seen)       # one start per fold, on its 2/3 of the rows
    assert selection.kernel_starts["dirichlet"].rows in (100, 101)


def test_the_class_frequencies_are_kept_where_nothing_beats_them():
    """A tiny table whose features are noise: the selection keeps the class frequencies, says so, and
    the model predicts them."""
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((58, 4)), rng.choice(["a", "b", "c"], 58, p=[0.6, 0.25, 0.15])
    with pytest.warns(UserWarning, match="the model predicts the class frequencies"):
        clf = GPClassifier(random_state=0).fit(X, y)
    assert clf.method_ == "class_frequencies" and clf.candidate_ == "class_frequencies"
    counts = np.array([np.sum(y == c) for c in clf.classes_]) + 0.5
    np.testing.assert_allclose(clf.predict_proba(X[:3]), np.tile(counts / counts.sum(), (3, 1)), rtol=1e-12)
    results = clf.cv_results_
    assert np.nanmin(results["mean_test_nll"]) == results["mean_test_nll"][results["candidate"].index("class_frequencies")]


def test_a_closed_form_chosen_on_one_split_is_refitted_on_every_row(monkeypatch):
    monkeypatch.setattr(held_out_schemes, "CV_ROWS", 100)
    monkeypatch.setattr(model_selection, "PORTFOLIO", CLOSED[:1])
    X, y = _problem(200)
    clf = GPClassifier(random_state=0).fit(X, y)
    assert clf.selection_scheme_ == "split" and clf.method_ == "dirichlet"
    assert clf.model_.n_data == 200 and clf.kernel_start_.rows == 200


def test_a_verbose_selection_says_its_progress_after_every_fold(quick_portfolio, capsys):
    """Issue 74, item 13: fits of a minute printed nothing until the end; each fold now says what it
    scored, what is still in the race and the seconds the folds left may take."""
    X, y = _problem()
    GPClassifier(n_inducing=6, cv=3, random_state=0, verbose=True).fit(X, y)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if ": fold " in line]
    assert [line.split(": fold ")[1].split(":")[0] for line in lines] == ["1 of 3", "2 of 3", "3 of 3"]
    assert all("still in the race; about" in line and "s of folds left" in line for line in lines)
    assert lines[-1].endswith("about 0 s of folds left")


def test_a_candidate_that_fails_is_left_out_with_its_reason_and_the_fit_goes_on(quick_portfolio, monkeypatch):
    """Issue 79 item 4 (issue 80 item 3): a candidate whose fit raises a numerical error on some rows
    is recorded in ``cv_results_["failure"]`` and left out; the fit ends with the others' best. Where
    the winner then fails on every row, the next candidate by rank is fitted, with a warning."""
    from alphagp.numerics import CholeskyError
    X, y = _problem()
    real = GPClassifier._fit_result

    def failing_pep(self, params, X_, *args, **kwargs):
        if params["method"] == "pep" and params["max_iter"] == 8:
            raise CholeskyError("a factor that is not positive definite")
        return real(self, params, X_, *args, **kwargs)

    monkeypatch.setattr(GPClassifier, "_fit_result", failing_pep)
    clf = GPClassifier(n_inducing=6, cv=3, random_state=0).fit(X, y)
    results = clf.cv_results_
    i = results["candidate"].index("pep")
    assert "CholeskyError: a factor that is not positive definite" in results["failure"][i]
    assert np.isnan(results["mean_test_nll"][i]) and clf.candidate_ != "pep"
    assert [f for j, f in enumerate(results["failure"]) if j != i] == [None] * (len(results["failure"]) - 1)

    chosen = clf.candidate_

    def failing_on_every_row(self, params, X_, *args, **kwargs):
        if len(X_) == len(X) and params["method"] == clf.cv_results_["params"][
                clf.cv_results_["candidate"].index(chosen)]["method"]:
            raise FloatingPointError("a non-finite objective")
        return failing_pep(self, params, X_, *args, **kwargs)

    monkeypatch.setattr(GPClassifier, "_fit_result", failing_on_every_row)
    with pytest.warns(UserWarning, match=f"the chosen {chosen} failed on every training row"):
        again = GPClassifier(n_inducing=6, cv=3, random_state=0).fit(X, y)
    assert again.candidate_ not in (chosen, "pep") and np.all(np.isfinite(again.predict_proba(X)))


def test_the_closed_form_chooses_its_point_by_its_own_leave_one_out_in_each_fold(tmp_path):
    """Issue 79 item 3: below CV_ROWS rows the closed form's candidate fits every point of its grid
    at the fold's kernel start and keeps the one of lowest leave-one-out NLL on the fold's training
    rows (each point's fit checked independently); the final fit takes the point chosen most often."""
    from alphagp.estimators.model_selection import CLOSED_FORM_BY_LOO, fit_candidate, leave_one_out_nll
    X, y = _problem(90, seed=2)
    est = GPClassifier(random_state=0)
    y_idx = np.searchsorted(np.unique(y), y)
    classes = np.unique(y)
    start = model_selection.shared_kernel_starts(model_selection.selector_of(est, X.shape[1]), X, y_idx, {"dirichlet"})
    params = {**est.get_params(), **CLOSED_FORM_BY_LOO.params, "checkpoint": None, "verbose": False}
    kept = fit_candidate(model_selection.selector_of(est, X.shape[1]), CLOSED_FORM_BY_LOO, params, X, y_idx, classes, start=start)
    grid = CLOSED_FORM_BY_LOO.loo_grid
    by_point = {}
    for eps in grid["alpha_eps"]:
        for scale in grid["noise_scale"]:
            one = est._fit_result({**params, "method_params": {"alpha_eps": eps, "noise_scale": scale}}, X, y_idx,
                                  classes, start=start, own=False)
            by_point[(eps, scale)] = leave_one_out_nll(one)
    best = min(by_point, key=by_point.get)
    assert (kept.plan.method_params["alpha_eps"], kept.plan.method_params["noise_scale"]) == best
    assert leave_one_out_nll(kept) == pytest.approx(by_point[best], rel=1e-12)
    assert len(set(by_point.values())) > 1                          # the grid's points differ

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(model_selection, "PORTFOLIO", (CLOSED_FORM_BY_LOO,))
    try:
        clf = GPClassifier(cv=3, random_state=0).fit(X, y)
    finally:
        monkeypatch.undo()
    folds = clf.cv_results_["loo_choices"][0]
    assert len(folds) == sum(k.startswith("split") for k in clf.cv_results_)       # 3 folds, 3 times (90 rows)
    majority = max(folds, key=folds.count)
    assert {k: clf.fit_plan_.method_params[k] for k in majority} == majority
    path = tmp_path / "m.safetensors"
    clf.save(path)
    assert GPClassifier.load(path).cv_results_["loo_choices"] == clf.cv_results_["loo_choices"]


def test_a_shared_kernel_start_that_fails_ends_no_fit(monkeypatch):
    """Issue 79 item 4: a shared start's search that fails numerically on a split is left out; the
    candidates that start from it search their own start in their fit, and the fit ends."""
    from alphagp.numerics import CholeskyError
    monkeypatch.setattr(model_selection, "PORTFOLIO", CLOSED[:1] + (model_selection.FREQUENCIES,))

    def failing(*args, **kwargs):
        raise CholeskyError("a factor that is not positive definite")

    monkeypatch.setattr(model_selection, "fit_kernel_start", failing)
    X, y = _problem(120)
    clf = GPClassifier(cv=3, random_state=0).fit(X, y)
    assert clf.cv_results_["failure"] == [None, None] and clf.kernel_start_ is not None
    assert np.all(np.isfinite(clf.predict_proba(X)))
