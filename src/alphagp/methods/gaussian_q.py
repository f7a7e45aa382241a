"""Methods that fit a Gaussian q(u) by gradients of an energy: sparse VI and the approximate
power-EP variants APEP, ARPEP and RPAPEP of the alpha paper (section 3.2-3.4), all with the
robust-max likelihood.

q is parameterised per class in whitened coordinates w = L^{-1} u (prior N(0, I)), so its
parameters stay well scaled when the kernel changes. Every objective is a sum over data points
(scaled by N/|B| on mini-batches) plus terms of q alone, and is maximised jointly over q,
the kernel hyper-parameters and the inducing points:

* VI (Hensman et al. 2015; EP paper eq. 14-15, alpha paper eq. 5): q = N(mu, R R') free,
  sum_i E_q[log p(y_i | f_i)] - KL[q || p].
* ARPEP (eq. 9): the same q, 1/alpha sum_i log E_q[p(y_i | f_i)^alpha] - KL[q || p].
* APEP (section 3.2): q proportional to the prior times a global factor phi with whitened
  precision R R' (so q's precision is at least the prior's) and natural mean eta; N tied
  factors phi^(1/N); the cavity removes phi^(alpha/N); energy eq. 8:
  g(q) - g(prior) + 1/alpha sum_i [log E_cav[p(y_i | f_i)^alpha] + g(cav) - g(q)].
* RPAPEP (section 3.4): q = N(mu, R R') free, the prior as an (N+1)-th factor, all tied, so
  the cavity is q^(1 - alpha/(N+1)); energy eq. 10: g(q) + 1/alpha sum_{i=1}^{N+1} log Z_i with
  the prior's term log Z_{N+1} = g(cav + alpha prior) - alpha g(prior) - g(q) in closed form.

As alpha -> 0, ARPEP's, APEP's and RPAPEP's energies tend to the VI bound (checked in the tests);
the g terms are log-normalisers, written relative to N(0, I) (their constants cancel).
"""

from __future__ import annotations

import math
from dataclasses import replace
from numbers import Real
from typing import ClassVar

import torch
from torch import nn

from ..constraints import Interval
from ..distributed import local_rows
from ..gaussians import tied_cavity_log_normaliser_gap, whitened_kl_from_sqrt, whitened_log_normaliser_from_cholesky
from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..numerics import stable_cholesky, step_generator, triangular_inverse
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, Capabilities, SparseGPMethod
from .projection import projected_marginals


class GaussianQMethod(SparseGPMethod):
    """Base of the gradient-fitted methods; ``local_update`` only evaluates the objective.

    Parameters
    ----------
    inducing_points
        ``[C, M, D]``; kernel: a :class:`~alphagp.kernels.Kernel`.
    likelihood
        a :class:`~alphagp.likelihoods.base.Likelihood` (the registry gives the
        robust-max one; VI also takes the Monte Carlo softmax ones).
    n_data
        N (mini-batch scaling, tied-factor counts).
    alpha
        the power (``None`` for VI, the alpha -> 0 limit).
    """

    #: the objective is a global term plus a sum over the batch, q moves by gradients, and
    #: everything but the likelihood's terms is per class
    CAPABILITIES = Capabilities(batch_optimizer="adam", data_parallel=True, class_parallel=True, sample_weight=True,
                                streaming=True)
    REFUSES: ClassVar[dict[str, str]] = {
        "damping": "it fits q by gradients and has no EP updates to damp; damping applies to the EP methods "
                   "(ep, sep, rep, pep)"}

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood: Likelihood, n_data: int,
                 alpha: float | None = 0.5):
        super().__init__(inducing_points, kernel, likelihood)
        self.alpha = None if alpha is None else float(alpha)
        self.n_data = int(n_data)
        self._init_q(self.n_classes, inducing_points.shape[1], inducing_points.dtype)

    def _init_q(self, C: int, M: int, dtype) -> None:
        """Create q's parameters for C classes of M inducing points, at the prior (or near it)."""
        raise NotImplementedError

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """No closed-form step: the batch objective's terms, for the optimiser."""
        return self._objective(*self._whitened_kernel(X), y, idx)

    def _predictive(self, mean, var, s, cavity_scale: float = 1.0):
        """The marginals the likelihood sees, ``[B, C]`` each, from q's (or its cavity's) ``mean``,
        ``var`` and the FITC variances ``s`` ``[C_own, B]``: mean and var / ``cavity_scale`` + s,
        gathered over the classes in a class split."""
        var = var.clamp_min(MIN_VARIANCE) / cavity_scale + s
        mean, var = self._all_classes(torch.stack((mean, var), 1)).unbind(1)
        return mean.T, var.T


class FreeGaussianQ(GaussianQMethod):
    """The methods whose q = N(mu, R R') is free (VI, ARPEP, RPAPEP): its parameters ``q_mean``
    ``[C, M]`` and ``q_sqrt`` ``[C, M, M]`` (lower triangle), whitened."""

    def _init_q(self, C: int, M: int, dtype) -> None:
        """q = prior: whitened mean 0, Cholesky factor I."""
        self.q_mean = nn.Parameter(torch.zeros(C, M, dtype=dtype))
        self.q_sqrt = nn.Parameter(torch.eye(M, dtype=dtype).expand(C, M, M).clone())

    def _sqrt(self) -> torch.Tensor:
        """q's Cholesky factor R ``[C_own, M, M]`` (this process's classes)."""
        return torch.tril(self._own(self.q_sqrt))

    def _latent_marginals(self, _L, Psi):
        """Means and variances ``[C, B]`` of h = psi' w under q = N(mu, R R')."""
        mean = (self._own(self.q_mean)[:, None, :] @ Psi)[:, 0]
        var = (self._sqrt().transpose(-1, -2) @ Psi).square().sum(1)
        return mean, var

    def _kl(self) -> torch.Tensor:
        """KL[q || N(0, I)] summed over (this process's) classes."""
        return whitened_kl_from_sqrt(self._own(self.q_mean), self._sqrt()).sum()


class SparseVI(FreeGaussianQ):
    """Sparse variational inference (Hensman et al. 2015), with the robust-max likelihood by default.

    Beyond :class:`GaussianQMethod`'s parameters:

    Parameters
    ----------
    likelihood
        the robust-max likelihood (1-D quadrature), or a Monte Carlo one
        (:class:`~alphagp.likelihoods.SoftmaxLikelihood`, :class:`~alphagp.likelihoods.LogisticSoftmaxLikelihood`:
        logistic-softmax paper eq. 2 and 5; the expected log-likelihood from the likelihood's
        ``n_mc_samples`` reparameterised draws per point, seeded by its ``seed`` and the step
        count, so a resumed fit draws what an uninterrupted one would; the predictive by
        quasi-Monte Carlo): the non-augmented VI of that paper's sections 5.1-5.2.
    natural_gradient_rate
        0 (default) fits q by the optimiser with the hyper-parameters;
        a rate gamma in (0, 1] instead moves q by natural-gradient steps in each
        ``local_update`` (Hensman et al. 2013; Salimbeni et al. 2018): with theta q's natural
        parameters and eta its expectation parameters (mu, S + mu mu'),
        theta <- (1 - gamma) theta + gamma (theta_prior + d E_q[sum_i log p(y_i | f_i)] / d eta),
        and the optimiser moves only the kernel and the inducing points. The expected
        log-likelihood of the robust-max likelihood is not concave, so gamma = 1 (exact for a
        conjugate likelihood) oscillates; 0.1 to 0.5 converge (tested at 0.5). A step that
        would leave q improper is halved until it does not.
    """

    REFUSES: ClassVar[dict[str, str]] = {
        **GaussianQMethod.REFUSES,
        "alpha": "it is the alpha -> 0 limit and takes no alpha; method='arpep' is the same q with the alpha-energy "
                 "of eq. 9"}
    OWN_PARAMETERS: ClassVar[dict] = {"natural_gradient_rate": [Interval(Real, 0, 1, closed="both")]}

    def __init__(self, inducing_points, kernel, likelihood, n_data, alpha=None, natural_gradient_rate: float = 0.0):
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha=alpha)
        if self.likelihood.STOCHASTIC:   # the Monte Carlo draws' step counter (checkpointed)
            self.register_buffer("n_steps", torch.zeros((), dtype=torch.long))
        if not 0.0 <= natural_gradient_rate <= 1.0:
            raise ValueError(f"natural_gradient_rate must lie in [0, 1], got {natural_gradient_rate}")
        self.natural_gradient_rate = float(natural_gradient_rate)
        if self.natural_gradient_rate > 0:
            self.q_mean.requires_grad_(False)
            self.q_sqrt.requires_grad_(False)

    @property
    def capabilities(self) -> Capabilities:
        """Not data-parallel with natural-gradient steps, which move q from the local batch alone."""
        parallel = self.natural_gradient_rate == 0
        refined = super().capabilities
        return replace(refined, data_parallel=parallel, class_parallel=parallel and refined.class_parallel)

    def _expected_log_lik(self, mean, var, s, y, idx):
        """sum_i w_i E_q[log p(y_i | f_i)] for q's marginals ``mean``, ``var`` and FITC variances ``s``
        ``[C_own, B]`` (w_i = 1 without sample weights)."""
        extra = {}
        if self.likelihood.STOCHASTIC:   # Monte Carlo draws fixed by (seed, step)
            extra["generator"] = step_generator(self.likelihood.seed, int(self.n_steps))
            extra["rows"] = local_rows(self.reducer, len(y))
        ell = self.likelihood.expected_log_lik(*self._predictive(mean, var, s), y, **extra)
        return self._weighted(ell, idx).sum()

    def _objective(self, L, Psi, s, y, idx):
        """ELBO (EP paper eq. 15): -KL[q || p] and sum_i E_q[log p(y_i | f_i)] (scaled by N/|B| in training)."""
        mean, var = self._latent_marginals(L, Psi)
        return ObjectiveTerms(-self._kl(), 0.0, self._expected_log_lik(mean, var, s, y, idx))

    def local_update(self, X, y, idx):
        L, Psi, s = self._whitened_kernel(X)
        if self.natural_gradient_rate > 0:
            self._natural_gradient_step(Psi.detach(), s.detach(), y, idx)
        objective = self._objective(L, Psi, s, y, idx)
        if hasattr(self, "n_steps"):
            self.n_steps += 1
        return objective

    @torch.no_grad()
    def _natural_gradient_step(self, Psi, s, y, idx) -> None:
        """One natural-gradient step on q (whitened, prior N(0, I)); see the class docstring."""
        gamma = self.natural_gradient_rate
        R = self._sqrt()
        mu, S = self.q_mean.clone(), R @ R.mT
        with torch.enable_grad():
            eta1 = mu.clone().requires_grad_(True)
            eta2 = (S + mu[:, :, None] * mu[:, None, :]).requires_grad_(True)
            cov = eta2 - eta1[:, :, None] * eta1[:, None, :]
            mean = (eta1[:, None, :] @ Psi)[:, 0]
            var = ((cov @ Psi) * Psi).sum(1)
            scaled = self._expected_log_lik(mean, var, s, y, idx) * self._data_scale(idx)   # N/|B| sum_i E_q[log p]
            g1, g2 = torch.autograd.grad(scaled, (eta1, eta2))
        eye = torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
        precision = torch.cholesky_inverse(stable_cholesky(S))
        while True:   # E_q[log p] is not concave for the robust-max likelihood: shorten steps that leave q improper
            new_precision = (1 - gamma) * precision + gamma * (eye - (g2 + g2.mT))     # -2 theta_2
            chol_precision, info = torch.linalg.cholesky_ex(new_precision)
            if not info.any():
                break
            gamma *= 0.5
            if gamma < 1e-8:
                raise FloatingPointError("no natural-gradient step keeps q proper")
        new_natural = (1 - gamma) * (precision @ mu[..., None])[..., 0] + gamma * g1  # theta_1
        self.q_mean.copy_(torch.cholesky_solve(new_natural[..., None], chol_precision)[..., 0])
        self.q_sqrt.copy_(torch.linalg.cholesky(torch.cholesky_inverse(chol_precision)))


class ARPEP(FreeGaussianQ):
    """Approximate reparameterised power EP (alpha paper section 3.3, eq. 9)."""

    def _objective(self, L, Psi, s, y, idx):
        mean, var = self._latent_marginals(L, Psi)
        log_z = self.likelihood.log_expected_power(*self._predictive(mean, var, s), y, self.alpha)
        return ObjectiveTerms(-self._kl(), 0.0, self._weighted(log_z, idx).sum() / self.alpha)


class RPAPEP(FreeGaussianQ):
    """Refined-prior approximate power EP (alpha paper section 3.4, eq. 10)."""

    def _objective(self, L, Psi, s, y, idx):
        a, N = self.alpha, self.n_weighted
        r = 1.0 - a / (N + 1)                                   # cavity = q^r
        R = self._sqrt()
        M = R.shape[-1]
        mean, var = self._latent_marginals(L, Psi)
        log_z = self.likelihood.log_expected_power(*self._predictive(mean, var, s, r), y, a)
        # whitened log-normalisers: g(theta) = -1/2 log|B| + 1/2 b' B^{-1} b for precision B, natural mean b
        R_inv = triangular_inverse(R)
        P = R_inv.transpose(-1, -2) @ R_inv                     # S^{-1}
        log_det_S = torch.log(torch.diagonal(R, dim1=-2, dim2=-1).square()).sum(-1)
        q_mean = self._own(self.q_mean)
        b = (P @ q_mean[..., None])[..., 0]
        quad = (q_mean * b).sum(-1)                             # mu' S^{-1} mu
        g_q = 0.5 * log_det_S + 0.5 * quad
        # g(cav) - g(q) for cav = q^r, formed directly: a difference of g's would cancel (N ~ 10^5-10^6)
        g_gap = -0.5 * M * math.log1p(-a / (N + 1)) - 0.5 * (a / (N + 1)) * quad
        eye = torch.eye(M, dtype=R.dtype, device=R.device)
        LB = stable_cholesky(r * P + a * eye)                   # cavity times prior^alpha
        c = torch.linalg.solve_triangular(LB, r * b[..., None], upper=False)[..., 0]
        g_prior_term = whitened_log_normaliser_from_cholesky(LB, c)
        shared = g_q.sum() + (N * g_gap.sum() + (g_prior_term - g_q).sum()) / a
        return ObjectiveTerms(shared, 0.0, self._weighted(log_z, idx).sum() / a)


class APEP(GaussianQMethod):
    """Approximate power EP (alpha paper section 3.2): tied factors fitted by gradients of eq. 8."""

    def _init_q(self, C: int, M: int, dtype) -> None:
        """The global factor starts near 1 (q near the prior); a zero square root would have zero gradient."""
        self.site_sqrt = nn.Parameter(0.1 * torch.eye(M, dtype=dtype).expand(C, M, M).clone())
        self.site_natural = nn.Parameter(torch.zeros(C, M, dtype=dtype))

    def _natural(self, shrink: float = 1.0):
        """Whitened natural parameters of prior * phi^shrink: (I + shrink R R', shrink eta), this
        process's classes."""
        R = torch.tril(self._own(self.site_sqrt))
        eye = torch.eye(R.shape[-1], dtype=R.dtype, device=R.device)
        return eye + shrink * (R @ R.transpose(-1, -2)), shrink * self._own(self.site_natural)

    def _latent_marginals(self, _L, Psi):
        mean, var, _ = projected_marginals(*self._natural(), Psi)
        return mean, var

    def _objective(self, _L, Psi, s, y, idx):
        a, N = self.alpha, self.n_weighted
        Bm, b = self._natural()
        LB = stable_cholesky(Bm)
        c = torch.linalg.solve_triangular(LB, b[..., None], upper=False)[..., 0]
        g_q = whitened_log_normaliser_from_cholesky(LB, c)
        mean, var, _ = projected_marginals(*self._natural(1.0 - a / N), Psi)
        log_z = self.likelihood.log_expected_power(*self._predictive(mean, var, s), y, a)
        shared = g_q.sum() + N * tied_cavity_log_normaliser_gap(Bm, b, a / N).sum() / a  # no cancellation
        return ObjectiveTerms(shared, 0.0, self._weighted(log_z, idx).sum() / a)
