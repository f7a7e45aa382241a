"""The augmented logistic-softmax model: closed-form local updates and the augmented ELBO.

Logistic-softmax paper, section 3.2 and Appendix A.1-A.2. With a Gamma variable lambda_i (flat
prior), Poisson counts n_i^c | lambda_i ~ Po(lambda_i) and Polya-Gamma variables
omega_i^c ~ PG(y_i^c + n_i^c, 0) (y_i^c the one-hot label), the likelihood becomes (eq. 9)

    p(y_i | f_i, lambda_i, n_i, omega_i) = prod_c 2^{-(y_i^c + n_i^c)} exp((y_i^c - n_i^c) f_i^c / 2 - (f_i^c)^2 omega_i^c / 2),

Gaussian in f. Mean-field q(u) q(lambda) q(n, omega) with q(lambda_i) = Ga(alpha_i, beta_i),
q(n_i^c) = Po(gamma_i^c), q(omega_i^c | n_i^c) = PG(y_i^c + n_i^c, b_i^c) has the optimal local
factors (eq. 12-14, given q's marginals m = E[f], E[f^2] of each f_i^c)

    b = sqrt(E[f^2]),
    gamma^c = exp(psi(alpha)) exp(-m^c / 2) / (2 beta cosh(b^c / 2)),   alpha = 1 + sum_c gamma^c,  beta = C,
    theta^c = E[omega^c] = (y^c + gamma^c) tanh(b^c / 2) / (2 b^c).

Eq. 12 as printed omits the 1/2 of 2^{-n}; it is needed for sigma(-f)^n (and the authors' package
has it). alpha and gamma depend on each other (the paper alternates them, five times): with
T = sum_c gamma^c / exp(psi(alpha)) < 1, ``local_updates`` solves alpha = 1 + T exp(psi(alpha)) by
Newton's method to convergence (about four steps from alpha = (1 - T/2) / (1 - T)).
Overflow guard (Appendix A.2): gamma is evaluated in log space, log cosh(x) = |x| + log1p(exp(-2|x|))
- log 2, which is exact where the paper's guard neglects the variance term.

The augmented ELBO, per point (with E[f^2] = m^2 + v and beta = C):

    sum_c [ -(y^c + gamma^c) (log 2 + log cosh(b^c / 2)) + (y^c - gamma^c) m^c / 2 - theta^c (E[(f^c)^2] - (b^c)^2) / 2
            + gamma^c (psi(alpha) - log beta) - gamma^c log gamma^c + gamma^c ]
    - log C + log Gamma(alpha) + (1 - alpha) psi(alpha)

(the Poisson, Polya-Gamma and Gamma terms of E[log p] - E[log q]; the flat prior of lambda adds
nothing), minus KL[q(u) || p(u)]. Each local update above is a stationary point of it, and in
q(u) with the locals fixed it is a Gaussian log-likelihood with precisions theta and natural
means (y - gamma) / 2, which gives the global update (eq. 15-16).

Class subsampling (Appendix A.3, eq. 17): with a subset K of the classes, alpha uses
(C / |K|) sum_{c in K} gamma^c and the class terms are scaled by C / |K|, unbiased for the sums
over all classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_LOG2 = math.log(2.0)


def log_cosh_half(b: torch.Tensor) -> torch.Tensor:
    """log cosh(b / 2), finite for every finite b."""
    x = 0.5 * b.abs()
    return x + torch.log1p(torch.exp(-2.0 * x)) - _LOG2


def tanh_half_over_twice(b: torch.Tensor) -> torch.Tensor:
    """tanh(b / 2) / (2 b), the Polya-Gamma mean per unit shape: 1/4 at b = 0."""
    small = b.abs() < 1e-4
    safe = torch.where(small, torch.ones_like(b), b)
    return torch.where(small, 0.25 - b * b / 48.0, torch.tanh(0.5 * safe) / (2.0 * safe))


@dataclass
class LocalVariables:
    """Optimal local factors of one batch: ``alpha`` ``[B]`` (q(lambda) = Ga(alpha, C)), ``gamma``,
    ``b``, ``theta`` ``[B, K]`` (Poisson means, Polya-Gamma tilts, E[omega])."""

    alpha: torch.Tensor
    gamma: torch.Tensor
    b: torch.Tensor
    theta: torch.Tensor


@torch.no_grad()
def local_updates(mean: torch.Tensor, second_moment: torch.Tensor, onehot: torch.Tensor, n_classes: int,
                  tol: float = 1e-12, max_iter: int = 50) -> LocalVariables:
    """Eq. 12-14 (eq. 17 with class subsampling) for q's marginals of one batch.

    Parameters
    ----------
    mean, second_moment
        E[f] and E[f^2] ``[B, K]`` of the K classes in the batch (all C, or
        a subset for class subsampling).
    onehot
        ``[B, K]`` one-hot labels restricted to those classes.
    n_classes
        C, the number of all classes (beta = C; alpha scales the subset's sum by C / K).
    tol, max_iter
        Newton's method for the alpha-gamma fixed point (the paper's inner loop)
        stops when alpha changes by less than ``tol * alpha``.
    """
    scale = n_classes / mean.shape[-1]
    b = second_moment.clamp_min(0.0).sqrt()
    log_a = -math.log(2.0 * n_classes) - 0.5 * mean - log_cosh_half(b)        # log gamma - psi(alpha)
    total = scale * torch.exp(log_a).sum(-1)                                    # T < C / K * (1 / C) * K = 1
    # alpha = 1 + T exp(psi(alpha)) by Newton's method, from the root of exp(psi(a)) ~ a - 1/2
    alpha = (1.0 - 0.5 * total) / (1.0 - total)
    for _ in range(max_iter):
        e_psi = torch.exp(torch.special.digamma(alpha))
        step = (alpha - 1.0 - total * e_psi) / (1.0 - total * e_psi * torch.special.polygamma(1, alpha))
        alpha = (alpha - step).clamp_min(1.0)
        if bool((step.abs() <= tol * alpha).all()):
            break
    gamma = torch.exp(torch.special.digamma(alpha)[:, None] + log_a)
    theta = (onehot + gamma) * tanh_half_over_twice(b)
    return LocalVariables(alpha, gamma, b, theta)


def augmented_point_terms(mean: torch.Tensor, second_moment: torch.Tensor, onehot: torch.Tensor,
                          local: LocalVariables, n_classes: int) -> torch.Tensor:
    """``[B]`` the augmented ELBO's terms of each point (module docstring), with the class terms
    scaled by C / K for a subset of K classes; differentiable in ``mean``, ``second_moment`` and
    the local variables."""
    scale = n_classes / mean.shape[-1]
    alpha, gamma, b, theta = local.alpha, local.gamma, local.b, local.theta
    digamma = torch.special.digamma(alpha)[:, None]
    per_class = (-(onehot + gamma) * (_LOG2 + log_cosh_half(b)) + 0.5 * (onehot - gamma) * mean
                 - 0.5 * theta * (second_moment - b * b)
                 + gamma * (digamma - math.log(n_classes)) - torch.special.xlogy(gamma, gamma) + gamma)
    per_point = -math.log(n_classes) + torch.lgamma(alpha) + (1.0 - alpha) * torch.special.digamma(alpha)
    return per_point + scale * per_class.sum(-1)
