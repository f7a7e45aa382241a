import numpy as np
import pytest
import torch

from alphagp.objective import ObjectiveTerms
from alphagp.training.optim import SignAdaptiveSGD


def test_sign_adaptive_rule_grows_and_halves_the_rate():
    p = torch.nn.Parameter(torch.tensor([10.0, 1.0]))
    opt = SignAdaptiveSGD([p], lr=0.1)
    grads = [torch.tensor([1.0, 1.0]), torch.tensor([1.0, -1.0]), torch.tensor([1.0, -1.0])]
    expected_rates = [[0.1, 0.1], [0.102, 0.05], [0.10404, 0.051]]
    for g, rate in zip(grads, expected_rates):
        p.grad = g.clone()
        before = p.detach().clone()
        opt.step()
        assert torch.allclose(before - p.detach(), torch.tensor(rate) * g)


def test_sign_adaptive_rate_grows_geometrically_up_to_its_cap():
    """1.02^t times the initial rate while the sign holds, never more than max_growth times it."""
    p = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    opt = SignAdaptiveSGD([p], lr=0.1, max_growth=20.0, max_step=10.0)
    steps = []
    for _ in range(400):
        p.grad = torch.ones(1, dtype=torch.float64)
        before = p.detach().clone()
        opt.step()
        steps.append(float(before - p.detach()))
    expected = np.minimum(0.1 * 1.02 ** np.arange(400), 0.1 * 20.0)
    np.testing.assert_allclose(steps, expected, rtol=1e-9)
    with pytest.raises(ValueError, match="max_growth"):
        SignAdaptiveSGD([p], lr=0.1, max_growth=0.5)


def test_one_sign_adaptive_step_moves_an_element_by_at_most_max_step():
    """A gradient of 1e6 (scikit-learn's class-weight check gives rows weights of 1,000 against
    1e-4) moves an element by max_step, not rate x gradient; a small one as before."""
    p = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    opt = SignAdaptiveSGD([p], lr=0.01, max_step=0.5)
    p.grad = torch.tensor([1e6, -1e6, 2.0], dtype=torch.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [-0.5, 0.5, -0.02], rtol=1e-12)


def test_the_plain_optimisers_state_dict_has_torch_optims_layout_and_round_trips():
    """state_dict as torch.optim.SGD lays it out (indices for parameters); loading it into a fresh
    optimiser over parameters of another dtype casts the floating state, as torch.optim does."""
    params = [torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)), torch.nn.Parameter(torch.ones(3))]
    opt = SignAdaptiveSGD(params, lr=0.1)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    reference = torch.optim.SGD(params, lr=0.1).state_dict()
    saved = opt.state_dict()
    assert sorted(saved) == sorted(reference) and saved["param_groups"][0]["params"] == [0, 1]
    other = [torch.nn.Parameter(torch.zeros(2, dtype=torch.float32)), torch.nn.Parameter(torch.ones(3))]
    fresh = SignAdaptiveSGD(other, lr=0.5)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == 0.1 and fresh.state[other[0]]["rate"].dtype == torch.float32
    np.testing.assert_allclose(fresh.state[other[1]]["rate"].numpy(), opt.state[params[1]]["rate"].numpy())
    with pytest.raises(ValueError, match="another number"):
        SignAdaptiveSGD(other[:1], lr=0.1).load_state_dict(saved)


def test_sign_adaptive_minimises_a_quadratic():
    p = torch.nn.Parameter(torch.tensor([3.0, -2.0]))
    opt = SignAdaptiveSGD([p], lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        (p**2 * torch.tensor([1.0, 10.0])).sum().backward()
        opt.step()
    assert torch.allclose(p.detach(), torch.zeros(2), atol=1e-3)


def test_memory_mapped_training_equals_in_memory(tmp_path):
    from alphagp import GPClassifier
    from alphagp.data import load_bundled
    X, y = load_bundled("new_thyroid")
    mm = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64, shape=X.shape)
    mm[:] = X
    mm.flush()
    params = dict(method="sep", n_inducing=8, max_iter=4, batch_size=40, random_state=0, standardize=False)
    a = GPClassifier(**params).fit(X, y)
    b = GPClassifier(**params).fit(np.load(tmp_path / "X.npy", mmap_mode="r"), y)
    assert np.allclose(a.predict_proba(X), b.predict_proba(X))


def test_learning_rate_decays_exponentially_per_epoch_and_only_for_adam():
    from alphagp.kernels import ARDKernel
    from alphagp.likelihoods import HeavisideLikelihood
    from alphagp.methods import SEP
    from alphagp.training import Trainer
    g = np.random.default_rng(0)
    X, y = g.standard_normal((30, 2)), np.arange(30) % 3
    model = SEP(torch.tensor(g.standard_normal((3, 4, 2))), ARDKernel(3, 2), HeavisideLikelihood(), n_data=30)
    trainer = Trainer(model, max_iter=3, batch_size=10, optimizer="adam", learning_rate=0.02,
                      learning_rate_decay=0.5)
    trainer.fit(X, y)
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.02 * 0.5**3)
    with pytest.raises(ValueError, match="sign-adaptive"):
        Trainer(model, optimizer="sign-adaptive", learning_rate_decay=0.5)


def test_resumed_fit_follows_the_new_learning_rate_and_keeps_adams_state(tmp_path):
    from alphagp.kernels import ARDKernel
    from alphagp.likelihoods import HeavisideLikelihood
    from alphagp.methods import SEP
    from alphagp.training import Trainer
    g = np.random.default_rng(0)
    X, y = g.standard_normal((30, 2)), np.arange(30) % 3
    model = SEP(torch.tensor(g.standard_normal((3, 4, 2))), ARDKernel(3, 2), HeavisideLikelihood(), n_data=30)
    path = tmp_path / "fit.ckpt"
    Trainer(model, max_iter=2, batch_size=10, optimizer="adam", learning_rate=0.02,
            learning_rate_decay=0.5, checkpoint=path).fit(X, y)
    resumed = Trainer(model, max_iter=3, batch_size=10, optimizer="adam", learning_rate=1e-3,
                      checkpoint=path)
    from alphagp.training import CheckpointResumed
    with pytest.warns(CheckpointResumed, match="from epoch 2 of 3"):
        resumed.fit(X, y)
    assert resumed.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3)
    adam_steps = {int(s["step"]) for s in resumed.optimizer.state.values()}
    assert adam_steps == {3 * 3}  # three epochs of three batches: the saved moments were kept


class ScriptedObjective(torch.nn.Module):
    """A method whose batch objective follows a script, one value per epoch (full batch)."""

    def __init__(self, values, trainable=True):
        super().__init__()
        self.values = list(values)
        self.register_buffer("scale", torch.ones((), dtype=torch.float64))
        self.weight = torch.nn.Parameter(torch.zeros((), dtype=torch.float64), requires_grad=trainable)
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def local_update(self, X, y, idx):
        value = self.values[min(int(self.calls), len(self.values) - 1)]
        self.calls += 1
        return ObjectiveTerms.batch_only(value + self.weight)  # a gradient of 1: every optimiser step moves the weight


def _fit_scripted(values, **kwargs):
    from alphagp.training import Trainer
    trainer = Trainer(ScriptedObjective(values, trainable=False), max_iter=len(values), **kwargs)
    return trainer.fit(np.zeros((4, 1)), np.zeros(4, dtype=int))


def test_early_stopping_keeps_going_while_the_objective_rises_by_more_than_tol():
    # the run reported in the issue: -96, -59, -55 stopped at epoch 3 with patience 3
    from sklearn.exceptions import ConvergenceWarning
    rising = [-96.0, -59.0, -55.0, -52.0, -50.0, -48.5, -47.0, -46.0]
    with pytest.warns(ConvergenceWarning):
        state = _fit_scripted(rising, tol=1e-3, n_iter_no_change=3)
    assert state.epoch == len(rising)
    assert state.epochs_without_improvement == 0


def test_early_stopping_stops_once_the_objective_has_flattened():
    # improvements below tol * |best| = 0.05 from epoch 4 on: patience 3 ends the fit at epoch 6
    values = [-96.0, -59.0, -55.0, -54.99, -54.98, -54.97, -54.96, -54.95, -54.94]
    state = _fit_scripted(values, tol=1e-3, n_iter_no_change=3)
    assert state.epoch == 6
    assert state.stop


def test_max_iter_reached_while_still_rising_warns_convergence(recwarn):
    from sklearn.exceptions import ConvergenceWarning
    rising = [-96.0, -59.0, -55.0, -52.0, -50.0]
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        _fit_scripted(rising, tol=1e-3, n_iter_no_change=3)
    # flat at the end (last epoch within tol of the best, patience not yet used up): converged enough
    _fit_scripted([-96.0, -59.0, -55.0, -54.99], tol=1e-3, n_iter_no_change=3)
    _fit_scripted(rising, tol=None)                      # no tol: no yardstick, no warning
    _fit_scripted([-96.0, -59.0, -55.0, -54.99, -54.98, -54.97], tol=1e-3, n_iter_no_change=3)   # stopped early
    assert not [w for w in recwarn if issubclass(w.category, ConvergenceWarning)]


def test_no_early_stopping_without_tol():
    values = [-10.0] * 8
    assert _fit_scripted(values, tol=None, n_iter_no_change=2).epoch == 8


def test_a_non_finite_objective_stops_before_the_optimiser_step():
    from alphagp.training import Trainer
    method = ScriptedObjective([-5.0, float("nan")])
    trainer = Trainer(method, max_iter=2, optimizer="sign-adaptive", learning_rate=0.5)
    after_first_epoch = []
    trainer.callbacks.append(lambda state: after_first_epoch.append(method.weight.item()))
    with pytest.raises(FloatingPointError, match="objective became non-finite at epoch 2"):
        trainer.fit(np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert after_first_epoch[0] > 0                        # the first step did move the weight
    assert method.weight.item() == after_first_epoch[0]    # the NaN epoch did not


def test_a_non_finite_gradient_stops_before_the_optimiser_step():
    from alphagp.training import Trainer

    class InfiniteGradient(ScriptedObjective):
        def local_update(self, X, y, idx):
            return ObjectiveTerms.batch_only(torch.sqrt(self.weight))  # d sqrt(w) / dw is infinite at w = 0

    method = InfiniteGradient([0.0])
    trainer = Trainer(method, max_iter=1, optimizer="adam", learning_rate=0.5)
    with pytest.raises(FloatingPointError, match="gradient"):
        trainer.fit(np.zeros((4, 1)), np.zeros(4, dtype=int))
    assert method.weight.item() == 0.0


def test_progress_off_a_terminal_is_plain_lines():
    import io

    from alphagp.training.progress import _LineProgress
    stream = io.StringIO()
    bar = _LineProgress(total=10, initial=0, interval=0.0, stream=stream)
    for epoch in range(10):
        bar.update(1)
        bar.set_postfix(epoch=epoch + 1)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    # every line carries the values of the epoch its step ended; close() does not repeat the last
    assert lines == [f"training: step {k}/10 epoch={k}" for k in range(1, 11)]


def test_progress_line_shows_the_held_out_nll_and_the_time_budget(thyroid, capsys):
    """The last progress line of a fit with a validation split and a time budget carries the
    latest and the best held-out NLL of ``validation_scores_`` and the seconds used of ``max_time``."""
    from alphagp import GPClassifier
    X, y = thyroid
    clf = GPClassifier(method="sep", n_inducing=5, batch_size=50, max_iter=4, max_time=600,
                       early_stopping=True, verbose=True, random_state=0).fit(X, y)
    line = [s for s in capsys.readouterr().err.splitlines() if s.startswith("training: step")][-1]
    values = dict(item.split("=") for item in line.split()[3:])
    assert int(values["epoch"]) == clf.n_iter_ == len(clf.validation_scores_)
    assert float(values["held_out_nll"]) == pytest.approx(clf.validation_scores_[-1], rel=1e-3)
    assert float(values["best"]) == pytest.approx(min(clf.validation_scores_), rel=1e-3)
    used, budget = values["seconds"].split("/")
    assert float(budget) == 600 and 0 <= float(used) <= clf.history_[-1]["train_seconds"] + 1


def test_auto_progress_shows_only_once_a_fit_has_run_its_delay(thyroid, capsys, monkeypatch):
    """Issue 79 item 5: ``verbose="auto"``, the default, prints no line of what a fit does and no
    progress on a fit shorter than ``AUTO_DELAY``; past it (the delay set to 0 here), the
    selection's and the training's progress lines go to standard error; ``verbose=False`` prints
    nothing at any length."""
    import io

    from alphagp import GPClassifier
    from alphagp.training import progress as progress_module
    from alphagp.training.progress import _LineProgress
    quiet = io.StringIO()
    bar = _LineProgress(total=3, initial=0, interval=0.0, stream=quiet, delay=3600.0)
    for _ in range(3):
        bar.update(1)
    bar.close()
    assert quiet.getvalue() == ""
    X, y = thyroid
    params = dict(n_inducing=5, max_iter=3, cv=2, random_state=0)
    assert GPClassifier().verbose == "auto"
    monkeypatch.setattr(progress_module, "AUTO_DELAY", 3600.0)      # a fit shorter than the delay, on any machine
    GPClassifier(**params).fit(X, y)
    out = capsys.readouterr()
    assert out.out == "" and "step" not in out.err
    monkeypatch.setattr(progress_module, "AUTO_DELAY", 0.0)
    GPClassifier(**params).fit(X, y)
    err = capsys.readouterr().err
    assert "method='auto': candidate fits: step" in err and "training: step" in err
    GPClassifier(**params, verbose=False).fit(X, y)
    assert capsys.readouterr().err.count("step") == 0


@pytest.mark.parametrize("fused", [True, False])
def test_adam_steps_as_torch_optims_adam_and_takes_its_state(fused):
    """The trainer's Adam (PyTorch's update through its functional form, without torch.optim's
    first-use import) moves parameters as ``torch.optim.Adam`` does, bit for bit, and a state saved
    by either continues in the other identically (checkpoints written before issue 80 resume)."""
    from alphagp.training.optim import Adam
    torch.manual_seed(0)
    start = [torch.randn(3, 4, dtype=torch.float64), torch.randn(5, dtype=torch.float64)]
    grads = [[torch.randn_like(p) for p in start] for _ in range(6)]

    def run(make, steps, state=None):
        params = [torch.nn.Parameter(p.clone()) for p in start]
        opt = make(params)
        if state is not None:
            opt.load_state_dict(state)
        for g in steps:
            for p, gp in zip(params, g):
                p.grad = gp.clone()
            opt.step()
        return params, opt.state_dict()

    ours, reference = (lambda ps: Adam(ps, lr=0.05, fused=fused)), (lambda ps: torch.optim.Adam(ps, lr=0.05, fused=fused))
    mine, _ = run(ours, grads)
    theirs, theirs_half = run(reference, grads), run(reference, grads[:3])[1]
    for a, b in zip(mine, theirs[0]):
        assert torch.equal(a, b)
    # resumed from the other's state after 3 steps: their parameters after 3, then 3 more here
    params = [torch.nn.Parameter(p.clone()) for p in run(reference, grads[:3])[0]]
    opt = Adam(params, lr=0.05, fused=fused)
    opt.load_state_dict(theirs_half)
    for g in grads[3:]:
        for p, gp in zip(params, g):
            p.grad = gp.clone()
        opt.step()
    for a, b in zip(params, theirs[0]):
        assert torch.equal(a, b)
