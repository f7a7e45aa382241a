"""Validated early stopping keeps the best state; ``max_time`` stops within one step of the budget
(a fake clock, no timed asserts); both survive checkpoints, model files and data-parallel fits."""

import numpy as np
import pytest
import torch

from alphagp import GPClassifier
from alphagp.objective import ObjectiveTerms
from alphagp.training import Trainer

from conftest import Interrupt, interrupt_at


class Counting(torch.nn.Module):
    """A method whose state is the number of steps it has taken; each step advances ``clock``."""

    def __init__(self, clock=None):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.float64))
        self.weight = torch.nn.Parameter(torch.zeros((), dtype=torch.float64), requires_grad=False)
        self.clock = clock

    def local_update(self, X, y, idx):
        self.steps += 1
        if self.clock is not None:
            self.clock.now += 1.0
        return ObjectiveTerms.batch_only(self.steps + self.weight)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _scripted_validation(method, scores):
    """Scores by epoch (one step an epoch: the epoch is ``method.steps``)."""
    return lambda: scores[int(method.steps) - 1]


def test_validation_stops_after_the_patience_and_restores_the_best_state():
    scores = [5.0, 4.0, 3.0, 3.5, 2.99, 3.6, 3.7, 3.8, 1.0]
    method = Counting()
    state = Trainer(method, max_iter=len(scores), validation=_scripted_validation(method, scores), tol=0.01,
                    n_iter_no_change=3).fit(np.zeros((4, 1)), np.zeros(4, dtype=int))
    # 2.99 is the best score but not better than 3.0 by tol * 3.0: epochs 4-6 count as no improvement
    assert state.epoch == 6 and state.stopped_by == "validation"
    assert state.best_epoch == 5 and state.validation_scores == scores[:6]
    assert float(method.steps) == 5.0                         # the state of epoch 5, not of the last epoch
    assert [h["validation"] for h in state.history] == scores[:6]


def test_validation_at_max_iter_still_returns_the_best_state():
    scores = [3.0, 2.0, 2.5]
    method = Counting()
    state = Trainer(method, max_iter=3, validation=_scripted_validation(method, scores)).fit(
        np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert state.epoch == 3 and not state.stop and float(method.steps) == 2.0


def test_max_time_stops_before_a_step_that_would_pass_the_budget():
    """Issue 80: a fit stops after the step whose successor, as long, would end past ``max_time``
    (it stopped after the step that passed it: a step over)."""
    clock = FakeClock()
    method = Counting(clock)
    # 4 steps an epoch, one (fake) second a step: a 6th step would end at 6 s, past the budget of 5.5 s
    state = Trainer(method, max_iter=10, batch_size=1, max_time=5.5, clock=clock).fit(
        np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert float(method.steps) == 5 and state.stopped_by == "max_time"
    assert state.epoch == 2 and state.history[-1]["rows"] == 1
    assert state.train_seconds == pytest.approx(5.0)
    assert state.objective == pytest.approx(5.0)      # the mean of the processed batches' estimates: one


def test_a_resumed_fit_gets_its_own_time_budget(tmp_path):
    clock = FakeClock()
    method = Counting(clock)
    path = tmp_path / "fit.ckpt"
    Trainer(method, max_iter=10, max_time=2.5, clock=clock, checkpoint=path).fit(np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert float(method.steps) == 2
    with pytest.warns(UserWarning, match="resuming"):
        state = Trainer(method, max_iter=10, max_time=2.5, clock=clock, checkpoint=path).fit(
            np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert float(method.steps) == 4 and state.epoch == 4


@pytest.mark.parametrize("holds_a_fit, spent, steps", [(True, 3.0, 0), (False, 3.0, 2), (True, 2.0, 3)])
def test_a_model_its_build_fitted_takes_no_step_where_less_than_the_build_took_is_left(holds_a_fit, spent, steps):
    """Issue 80: exact EP's kernel search leaves the model fitted (its sites); where the budget left
    (5 s less ``spent``) is less than the build took, the trainer takes no step (one would cost
    about what the search's evaluations did); a model that needs its steps takes them as before."""
    clock = FakeClock()
    method = Counting(clock)
    method.holds_a_fit = lambda: holds_a_fit
    state = Trainer(method, max_iter=10, max_time=5.0, clock=clock, spent=spent).fit(np.zeros((4, 1)),
                                                                                       np.zeros(4, dtype=int))
    assert float(method.steps) == steps and state.epoch == steps and state.stopped_by == "max_time"


def test_max_time_must_be_positive():
    with pytest.raises(ValueError, match="max_time"):
        Trainer(Counting(), max_time=0)


# ---------------------------------------------------------------------- estimators
def _noisy_problem(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = (X[:, 0] + 0.8 * rng.standard_normal(n) > 0).astype(int) + (X[:, 1] > 0.8)
    return X, y


OVERFIT = dict(method="vi", n_inducing=40, batch_size=50, max_iter=40, learning_rate=0.05, early_stopping=True,
               n_iter_no_change=100, random_state=0)


def test_a_real_fit_keeps_the_state_of_the_best_validation_nll():
    from sklearn.model_selection import train_test_split

    from alphagp.metrics import negative_log_likelihood
    X, y = _noisy_problem()
    clf = GPClassifier(**OVERFIT).fit(X, y)
    scores = clf.validation_scores_
    assert len(scores) == clf.n_iter_ == 40
    assert clf.best_iteration_ == int(np.argmin(scores)) + 1 < 40      # the held-out NLL turned up
    assert scores[-1] > min(scores) + 1e-3
    _, X_val, _, y_val = train_test_split(X, y, test_size=0.1, stratify=y, random_state=0)
    held_out = negative_log_likelihood(clf.predict_proba(X_val), np.searchsorted(clf.classes_, y_val))
    assert held_out == pytest.approx(min(scores), rel=1e-12)          # the model is the best epoch's


def test_early_stopping_auto_is_off_for_small_data_and_the_split_is_stratified():
    X, y = _noisy_problem()
    clf = GPClassifier(method="vi", n_inducing=10, max_iter=2, batch_size=100, random_state=0).fit(X, y)
    assert clf.validation_scores_ is None and clf.best_iteration_ is None
    with pytest.raises(ValueError, match="early stopping holds out"):
        y_one = y.copy()
        y_one[0] = 7                                                  # a class of one row cannot be stratified
        GPClassifier(method="vi", max_iter=1, early_stopping=True).fit(X, y_one)


def test_validated_fits_resume_and_save_their_best_state(tmp_path):
    X, y = _noisy_problem()
    params = {**OVERFIT, "max_iter": 12, "n_iter_no_change": 4}
    whole = GPClassifier(**params).fit(X, y)
    path = tmp_path / "fit.ckpt"
    with pytest.raises(Interrupt):
        GPClassifier(**params, checkpoint=path).fit(X, y, callbacks=[interrupt_at(5)])
    with pytest.warns(UserWarning, match="checkpoint"):
        resumed = GPClassifier(**params, checkpoint=path).fit(X, y)
    assert resumed.best_iteration_ == whole.best_iteration_ and resumed.validation_scores_ == whole.validation_scores_
    np.testing.assert_array_equal(resumed.predict_proba(X), whole.predict_proba(X))
    whole.save(tmp_path / "m.agp")
    loaded = GPClassifier.load(tmp_path / "m.agp")
    assert loaded.best_iteration_ == whole.best_iteration_ and loaded.validation_scores_ == whole.validation_scores_


@pytest.mark.parametrize("family", ["regressor", "classifier"])
def test_deep_gps_validate_and_keep_their_best_state(family):
    from alphagp import DeepGPClassifier, DeepGPRegressor
    X, y = _noisy_problem(300)
    cls, target = (DeepGPRegressor, X[:, 0] * X[:, 1]) if family == "regressor" else (DeepGPClassifier, y)
    model = cls(n_layers=2, n_inducing=8, n_samples=3, n_predict_samples=10, batch_size=50, max_iter=6,
                learning_rate=0.02, early_stopping=True, random_state=0).fit(X, target)
    assert len(model.validation_scores_) == 6 and model.best_iteration_ == int(np.argmin(model.validation_scores_)) + 1
    assert np.all(np.isfinite(model.validation_scores_))


# ---------------------------------------------------------------------- method="auto"
# (model selection itself: tests/estimators/test_model_selection.py)
def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)


def test_an_explicit_method_keeps_its_settings():
    X, y = _rows(300)
    explicit = GPClassifier(method="ep", max_iter=2, random_state=0).fit(X, y)
    assert (explicit.batch_size_, explicit.inducing_init_, explicit.early_stopping_) == (None, "random", False)
    assert not hasattr(explicit, "cv_results_")


def test_auto_with_method_params_is_a_clear_error():
    X, y = _rows(100)
    with pytest.raises(ValueError, match="method_params belong to a chosen method"):
        GPClassifier(method_params={"seed": 1}).fit(X, y)
    with pytest.raises(ValueError, match="'method' parameter"):
        GPClassifier(method="magic").fit(X, y)


class RateRecording(torch.nn.Module):
    """A method with one trainable weight that records the optimiser's rate at each step (the rate
    the step is taken with); each step advances ``clock`` by a second."""

    def __init__(self, clock=None):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
        self.clock, self.trainer, self.rates = clock, None, []

    def local_update(self, X, y, idx):
        self.rates.append(self.trainer.optimizer.param_groups[0]["lr"])
        if self.clock is not None:
            self.clock.now += 1.0
        return ObjectiveTerms.batch_only(-self.weight.square())


def _cosine(rate, done):
    return 0.5 * rate * (1.0 + np.cos(np.pi * np.asarray(done)))


def test_cosine_schedule_follows_the_share_of_max_iter_done_step_by_step():
    method = RateRecording()
    method.trainer = Trainer(method, max_iter=2, batch_size=1, optimizer="adam", learning_rate=0.04,
                             learning_rate_decay="cosine")
    method.trainer.fit(np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert np.allclose(method.rates, _cosine(0.04, np.arange(8) / 8))


def test_cosine_schedule_follows_the_share_of_max_time_when_that_is_further():
    clock = FakeClock()
    method = RateRecording(clock)
    method.trainer = Trainer(method, max_iter=100, batch_size=1, optimizer="adam", learning_rate=0.04,
                             learning_rate_decay="cosine", max_time=4.0, clock=clock)
    state = method.trainer.fit(np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert state.stopped_by == "max_time"
    assert np.allclose(method.rates, _cosine(0.04, np.arange(4) / 4))


def test_cosine_schedule_is_a_parameter_of_the_estimators_and_the_command_line():
    from alphagp.cli import _learning_rate_decay
    assert _learning_rate_decay("Cosine") == "cosine" and _learning_rate_decay("0.5") == 0.5
    with pytest.raises(ValueError, match="'cosine'"):
        Trainer(Counting(), learning_rate_decay="linear")
    X, y = np.random.default_rng(0).standard_normal((60, 2)), np.arange(60) % 2
    clf = GPClassifier(method="sep", n_inducing=5, batch_size=20, max_iter=3, learning_rate_decay="cosine",
                       random_state=0).fit(X, y)
    assert clf.n_iter_ == 3


def test_a_checkpointed_fit_resumes_with_a_new_time_budget(tmp_path):
    """max_time is part of the schedule: a resumed fit may be given another budget."""
    from alphagp.training import CheckpointResumed
    X, y = np.random.default_rng(0).standard_normal((60, 2)), np.arange(60) % 2
    params = dict(method="sep", n_inducing=5, batch_size=20, random_state=0, checkpoint=tmp_path / "fit.ckpt")
    GPClassifier(max_iter=2, max_time=100, **params).fit(X, y)
    with pytest.warns(CheckpointResumed, match="from epoch 2 of 4"):
        resumed = GPClassifier(max_iter=4, max_time=200, **params).fit(X, y)
    assert resumed.n_iter_ == 4


def test_a_budget_that_cannot_hold_exact_eps_least_work_is_refused_before_the_fit():
    """Issue 80: ``GPClassifier(method="exact_ep", max_time=1)`` on 2,000 rows of 5 classes was still
    fitting at 120 s: one sweep over its 8,000 pair factors takes far longer than the budget. The
    plan's check refuses it in one line, from the method's ``minimum_seconds`` (its pair factors
    cubed at this machine's factorisation rate); a budget that holds it fits."""
    from alphagp.methods.exact_ep import ExactEP
    from alphagp.numerics import factorisation_rate
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((2000, 20)), rng.integers(0, 5, 2000)
    least = 8000.0**3 / factorisation_rate()
    assert ExactEP.minimum_seconds(2000, 5) == pytest.approx(least)
    with pytest.raises(ValueError, match=r"method='exact_ep' on 2000 rows of 5 classes needs at least about .* s on "
                                         r"this machine before it has a model, more than max_time=1;"):
        GPClassifier(method="exact_ep", max_time=1).fit(X, y)
    small = GPClassifier(method="exact_ep", max_time=60, random_state=0).fit(X[:40], y[:40])
    assert np.all(np.isfinite(small.predict_proba(X[:5])))
