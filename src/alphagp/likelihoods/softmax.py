"""Softmax and logistic-softmax likelihoods, whose expectations under Gaussians have no closed form.

    softmax (logistic-softmax paper eq. 2):           p(y = k | f) = exp(f^k) / sum_c exp(f^c)
    logistic-softmax (eq. 5):                         p(y = k | f) = sigma(f^k) / sum_c sigma(f^c)

with sigma the logistic function; the logistic-softmax is the softmax of log sigma(f), and for
C = 2 it is the binary logistic likelihood. Expectations under independent Gaussians
f^c ~ N(mean_c, var_c) are C-dimensional integrals, estimated by sampling:

* ``expected_log_lik`` (the data term of variational inference, section 5.1 "VI"): Monte Carlo
  with reparameterised draws f = mean + sqrt(var) eps, so it is differentiable in the means and
  variances and unbiased for every draw count;
* ``predict_proba`` (section 4.2 "Predictions"): randomised quasi-Monte Carlo, the same
  scrambled Sobol points mapped through the normal quantile for every test point (Owen 1998;
  Buchholz et al. 2018), so predictions are deterministic and converge faster than plain MC.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from numbers import Integral
from typing import ClassVar

import torch
from torch.nn.functional import logsigmoid

from ..constraints import Interval
from ..numerics import rows_per_block
from .base import CategoricalLikelihood

_PREDICT_CHUNK = 256


def normal_qmc_draws(n: int, dim: int, seed: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """``[n, dim]`` standard normal quasi-random points: scrambled Sobol mapped by the normal quantile."""
    engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
    u = engine.draw(n, dtype=torch.float64).clamp(1e-12, 1.0 - 1e-12)
    return torch.special.ndtri(u).to(dtype=dtype, device=device)


class MonteCarloLikelihood(CategoricalLikelihood):
    """A categorical likelihood given by log-probabilities ``log_link(f)`` ``[..., C]``.

    Parameters
    ----------
    n_mc_samples
        Monte Carlo draws per point in ``expected_log_lik``.
    n_predictive_samples
        quasi-Monte Carlo points in ``predict_proba`` and ``log_expected_power``.
    seed
        the seed of a method's Monte Carlo draws and the scrambling seed of the predictive points.
    """

    STOCHASTIC = True
    PARAMETERS: ClassVar[dict] = {"n_mc_samples": [Interval(Integral, 1, None, closed="left")],
                                  "n_predictive_samples": [Interval(Integral, 1, None, closed="left")],
                                  "seed": [Interval(Integral, 0, None, closed="left")]}

    def __init__(self, n_mc_samples: int = 50, n_predictive_samples: int = 1024, seed: int = 0):
        if n_mc_samples < 1 or n_predictive_samples < 1:
            raise ValueError(f"need at least one sample, got n_mc_samples={n_mc_samples}, "
                             f"n_predictive_samples={n_predictive_samples}")
        self.n_mc_samples = int(n_mc_samples)
        self.n_predictive_samples = int(n_predictive_samples)
        self.seed = int(seed)

    @abstractmethod
    def log_link(self, f: torch.Tensor) -> torch.Tensor:
        """``[..., C]`` log p(y = c | f) for latent values ``f`` ``[..., C]``."""

    def log_prob(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``[..., N]`` log p(y | f) for ``f`` ``[..., N, C]`` and labels ``y`` ``[N]``."""
        log_p = self.log_link(f)
        return log_p.gather(-1, y.expand(*log_p.shape[:-1])[..., None])[..., 0]

    def expected_log_lik(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                         generator: torch.Generator | None = None,
                         rows: tuple[int, slice] | None = None) -> torch.Tensor:
        """Unbiased Monte Carlo estimate of E[log p(y | f)] ``[N]`` under f ~ N(mean, diag(var)) ``[N, C]``,
        differentiable in ``mean`` and ``var`` (reparameterised draws from ``generator``, on the CPU).
        ``rows``: ``(n, part)``: draw for ``n`` rows and use those of ``part`` (a process's share of a
        batch split across processes then sees the draws of one process)."""
        n, part = rows if rows is not None else (mean.shape[0], slice(None))
        eps = torch.randn(self.n_mc_samples, n, mean.shape[-1], dtype=mean.dtype, generator=generator)[:, part]
        eps = eps.to(mean.device)
        f = mean + var.sqrt() * eps
        return self.log_prob(f, y).mean(0)

    def _predictive_draws(self, mean: torch.Tensor) -> torch.Tensor:
        return normal_qmc_draws(self.n_predictive_samples, mean.shape[-1], self.seed, mean.dtype, mean.device)

    def log_expected_power(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                           alpha: float) -> torch.Tensor:
        """log E[p(y | f)^alpha] ``[N]`` by randomised quasi-Monte Carlo over the predictive points
        (deterministic, differentiable, consistent but biased for few points: log of a mean)."""
        f = mean + var.sqrt() * self._predictive_draws(mean)[:, None, :]             # [S, N, C]
        return torch.logsumexp(alpha * self.log_prob(f, y), 0) - math.log(f.shape[0])

    def predict_proba(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[N, C]`` E[p(y = c | f)] under f ~ N(mean, diag(var)) by randomised quasi-Monte Carlo."""
        eps = self._predictive_draws(mean)
        sd = var.sqrt()
        total = torch.zeros_like(mean)
        rows = rows_per_block(_PREDICT_CHUNK * mean.shape[-1] * mean.element_size() * 3)  # [S, rows, C] blocks
        for r in range(0, len(mean), rows):
            m, v = mean[r:r + rows], sd[r:r + rows]
            for start in range(0, len(eps), _PREDICT_CHUNK):
                e = eps[start:start + _PREDICT_CHUNK, None, :]                  # [S, 1, C]
                total[r:r + rows] += torch.exp(self.log_link(m + v * e)).sum(0)
        proba = total / len(eps)
        return proba / proba.sum(-1, keepdim=True)


class SoftmaxLikelihood(MonteCarloLikelihood):
    """p(y = k | f) = softmax(f)_k (eq. 2)."""

    def log_link(self, f):
        return torch.log_softmax(f, -1)


class LogisticSoftmaxLikelihood(MonteCarloLikelihood):
    """p(y = k | f) = sigma(f^k) / sum_c sigma(f^c) (eq. 5), i.e. softmax(log sigma(f))."""

    def log_link(self, f):
        return torch.log_softmax(logsigmoid(f), -1)
