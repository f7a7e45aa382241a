import numpy as np
import torch

from alphagp.optim import SignAdaptiveSGD


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
    import pytest

    from alphagp.kernels import ARDKernel
    from alphagp.methods import ScalableEP
    from alphagp.training import Trainer
    g = np.random.default_rng(0)
    X, y = g.standard_normal((30, 2)), np.arange(30) % 3
    model = ScalableEP(torch.tensor(g.standard_normal((3, 4, 2))), ARDKernel(3, 2), n_data=30, tied=True)
    trainer = Trainer(model, max_iter=3, batch_size=10, optimizer="adam", learning_rate=0.02,
                      learning_rate_decay=0.5)
    trainer.fit(X, y)
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.02 * 0.5**3)
    with pytest.raises(ValueError, match="sign-adaptive"):
        Trainer(model, optimizer="sign-adaptive", learning_rate_decay=0.5)


def test_resumed_fit_follows_the_new_learning_rate_and_keeps_adams_state(tmp_path):
    import pytest

    from alphagp.kernels import ARDKernel
    from alphagp.methods import ScalableEP
    from alphagp.training import Trainer
    g = np.random.default_rng(0)
    X, y = g.standard_normal((30, 2)), np.arange(30) % 3
    model = ScalableEP(torch.tensor(g.standard_normal((3, 4, 2))), ARDKernel(3, 2), n_data=30, tied=True)
    path = tmp_path / "fit.ckpt"
    Trainer(model, max_iter=2, batch_size=10, optimizer="adam", learning_rate=0.02,
            learning_rate_decay=0.5, checkpoint=path).fit(X, y)
    resumed = Trainer(model, max_iter=3, batch_size=10, optimizer="adam", learning_rate=1e-3,
                      checkpoint=path)
    resumed.fit(X, y)
    assert resumed.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3)
    adam_steps = {int(s["step"]) for s in resumed.optimizer.state.values()}
    assert adam_steps == {3 * 3}  # three epochs of three batches: the saved moments were kept
