"""The contract every registered likelihood must keep, checked against Monte Carlo estimates.

``tests/likelihoods/test_likelihood_contracts.py`` runs each ``check_*`` function over every entry of
:data:`alphagp.likelihoods.LIKELIHOODS` and fails when a likelihood class of the package is not
registered, so a new likelihood is checked without an edit to the tests. Every quantity of
:class:`~alphagp.likelihoods.base.Likelihood` is compared with a plain Monte Carlo average of its
own :meth:`~alphagp.likelihoods.base.Likelihood.log_prob` over draws f ~ N(mean, diag(var))
(``N_DRAWS`` draws, fixed seed; tolerances of five standard errors plus the quadrature or
quasi-Monte Carlo error ``APPROXIMATION``):

* :func:`check_log_expected_power`: exp of log E[p^alpha] at alpha = 1 and 0.5;
* :func:`check_expected_log_lik`: E[log p], or a ``ValueError`` where it is -inf;
* :func:`check_tilted_derivatives`: the tilted means and variances (alpha paper A.14-A.15) they give;
* :func:`check_predict_proba`: E[p(y = c | f)] for every class, rows summing to one;
* :func:`check_config_round_trip`: ``type(lik)(**lik.config())`` computes the same values.
"""

from __future__ import annotations

import numpy as np
import torch

from ..likelihoods import CategoricalLikelihood, Likelihood

N_POINTS = 4
N_DRAWS = 200_000
APPROXIMATION = 3e-3


def example(likelihood: Likelihood, seed: int = 0):
    """``(mean, var, y)`` of ``N_POINTS`` points: 3 classes (or the likelihood's fixed latent count),
    class indices for a categorical likelihood, real targets otherwise."""
    g = torch.Generator().manual_seed(seed)
    n_latent = likelihood.N_LATENT or 3
    mean = torch.randn(N_POINTS, n_latent, generator=g, dtype=torch.float64)
    var = 0.2 + torch.rand(N_POINTS, n_latent, generator=g, dtype=torch.float64)
    if isinstance(likelihood, CategoricalLikelihood):
        n_classes = 2 if likelihood.N_LATENT == 1 else n_latent
        y = torch.arange(N_POINTS) % n_classes
    else:
        y = mean[:, 0] + torch.randn(N_POINTS, generator=g, dtype=torch.float64)
    return mean, var, y


def _draws(mean, var, seed=1):
    g = torch.Generator().manual_seed(seed)
    return mean + var.sqrt() * torch.randn(N_DRAWS, *mean.shape, generator=g, dtype=mean.dtype)   # [S, N, C]


def _close(name, value, samples, what):
    """``value`` ``[...]`` within 5 standard errors (+ APPROXIMATION) of the mean of ``samples`` ``[S, ...]``."""
    estimate, se = samples.mean(0), samples.std(0) / np.sqrt(samples.shape[0])
    tolerance = 5 * se + APPROXIMATION * (1 + estimate.abs())
    assert torch.all((value - estimate).abs() <= tolerance), \
        f"{name}: {what} {value.tolist()} against Monte Carlo {estimate.tolist()} (tolerance {tolerance.tolist()})"


def check_log_expected_power(name: str, likelihood: Likelihood) -> None:
    mean, var, y = example(likelihood)
    log_p = likelihood.log_prob(_draws(mean, var), y)                            # [S, N]
    for alpha in (1.0, 0.5):
        value = torch.exp(likelihood.log_expected_power(mean, var, y, alpha))
        _close(name, value, torch.exp(alpha * log_p), f"E[p^{alpha}]")


def check_expected_log_lik(name: str, likelihood: Likelihood) -> None:
    mean, var, y = example(likelihood)
    log_p = likelihood.log_prob(_draws(mean, var), y)
    if not torch.isfinite(log_p).all():
        try:
            likelihood.expected_log_lik(mean, var, y)
        except ValueError:
            return
        raise AssertionError(f"{name}: E[log p] is -inf, and expected_log_lik gave no error")
    if likelihood.STOCHASTIC:      # enough draws that its own Monte Carlo error is small
        likelihood = type(likelihood)(**{**likelihood.config(), "n_mc_samples": N_DRAWS})
    value = likelihood.expected_log_lik(mean, var, y, generator=torch.Generator().manual_seed(2))
    _close(name, value, log_p, "E[log p]")


def check_tilted_derivatives(name: str, likelihood: Likelihood) -> None:
    mean, var, y = example(likelihood)
    f = _draws(mean, var)
    for alpha in (1.0, 0.5):
        _, g_m, g_v = likelihood.tilted_derivatives(mean, var, y, alpha)
        weights = torch.exp(alpha * likelihood.log_prob(f, y))[..., None]        # [S, N, 1]
        z = weights.mean(0)
        tilted_mean = mean + var * g_m
        tilted_var = var - var.square() * (g_m.square() - 2 * g_v)
        # ratio estimates: compare Z * moment with the Monte Carlo mean of weight * f (and f^2)
        _close(name, z * tilted_mean, weights * f, f"tilted means (alpha={alpha})")
        _close(name, z * (tilted_var + tilted_mean.square()), weights * f.square(),
               f"tilted second moments (alpha={alpha})")


def check_predict_proba(name: str, likelihood: Likelihood) -> None:
    if not isinstance(likelihood, CategoricalLikelihood):
        return
    mean, var, _ = example(likelihood)
    proba = likelihood.predict_proba(mean, var)
    n_classes = proba.shape[-1]
    assert torch.allclose(proba.sum(-1), torch.ones(len(mean), dtype=proba.dtype)), f"{name}: rows do not sum to one"
    f = _draws(mean, var)
    for c in range(n_classes):
        p_c = torch.exp(likelihood.log_prob(f, torch.full((len(mean),), c)))
        _close(name, proba[:, c], p_c, f"p(y={c})")


def check_config_round_trip(name: str, likelihood: Likelihood) -> None:
    mean, var, y = example(likelihood)
    rebuilt = type(likelihood)(**likelihood.config())
    assert torch.equal(rebuilt.log_expected_power(mean, var, y, 0.5), likelihood.log_expected_power(mean, var, y, 0.5)), \
        f"{name}: rebuilt from config() it computes other values"
