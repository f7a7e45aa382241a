"""The trainer's L-BFGS (:class:`alphagp.training.optim.LBFGS`) against known minima, and its
line search's handling of failed evaluations."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from alphagp.numerics import CholeskyError
from alphagp.training.optim import LBFGS


def _run(closure_of, x0, steps=200):
    x = torch.nn.Parameter(torch.as_tensor(x0, dtype=torch.float64).clone())
    optimizer = LBFGS([x])
    closure = closure_of(x)
    losses = []
    for _ in range(steps):
        losses.append(optimizer.step(closure))
        if optimizer.converged:
            break
    return x.detach(), losses, optimizer


def _closure(x, f, calls=None):
    def closure():
        if calls is not None:
            calls.append(x.detach().clone())
        optimizer_loss = f(x)
        x.grad = None
        optimizer_loss.backward()
        return optimizer_loss.detach()
    return closure


def test_lbfgs_finds_the_minimum_of_rosenbrocks_function():
    def rosenbrock(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    x, losses, optimizer = _run(lambda x: _closure(x, rosenbrock), [-1.2, 1.0])
    assert optimizer.converged
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0], atol=1e-3)
    assert all(b <= a for a, b in itertools.pairwise(losses))          # the Armijo condition never lets it rise


def test_lbfgs_solves_a_quadratic_in_about_its_dimension_steps():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(8, 8, generator=g, dtype=torch.float64)
    H = A @ A.T + 8 * torch.eye(8, dtype=torch.float64)
    b = torch.randn(8, generator=g, dtype=torch.float64)
    x, losses, _ = _run(lambda x: _closure(x, lambda v: 0.5 * v @ H @ v - b @ v), torch.zeros(8))
    np.testing.assert_allclose(x.numpy(), torch.linalg.solve(H, b).numpy(), atol=1e-4)   # ftol 1e-7 of max(|f|, 1)
    assert len(losses) <= 30


def test_a_failed_evaluation_shortens_the_step_and_the_last_evaluation_is_at_the_parameters_left():
    """Where the objective cannot be evaluated (a Cholesky factor fails beyond x = 0.5, as a kernel
    matrix would), the line search halves the step; each step's last evaluation is at the point
    it leaves, so a closure's side effects (a stored posterior) belong to that point."""
    calls = []

    def f(x):
        if float(x.detach()[0]) > 0.5:
            raise CholeskyError("not positive definite")
        return (x[0] - 2.0) ** 2

    x = torch.nn.Parameter(torch.tensor([0.0], dtype=torch.float64))
    optimizer = LBFGS([x])
    closure = _closure(x, f, calls)
    for _ in range(20):
        optimizer.step(closure)
        assert torch.equal(calls[-1], x.detach())
        assert float(x) <= 0.5
        if optimizer.converged:
            break
    assert 0.45 < float(x) <= 0.5


def test_a_step_past_its_budget_ends_within_two_evaluations_at_the_parameters_it_started_from():
    """Issue 74: the line search read the clock only after its step, so one step could evaluate the
    objective 31 times past ``max_time``. With ``out_of_time`` true after the first trial (a
    long step that every trial overshoots: the objective is not finite beyond x = 1e-9), the step
    ends with one more evaluation, back at its start; true already, it evaluates nothing."""
    calls = []

    def f(x):
        if float(x.detach()[0]) > 1e-9:
            raise CholeskyError("not positive definite")
        return (x[0] - 2.0) ** 2

    x = torch.nn.Parameter(torch.tensor([0.0], dtype=torch.float64))
    optimizer = LBFGS([x])
    closure = _closure(x, f, calls)
    optimizer.step(closure, out_of_time=lambda: len(calls) >= 2)
    assert len(calls) == 3 and torch.equal(calls[-1], x.detach()) and float(x) == 0.0
    optimizer.step(closure, out_of_time=lambda: True)
    assert len(calls) == 3
    optimizer.step(closure)                                             # no budget: the search halves on
    assert len(calls) > 10
