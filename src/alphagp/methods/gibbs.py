"""Gibbs sampling of the sparse multi-class model (the MCMC baseline of the alpha paper, Appendix C).

The hyper-parameters (kernel and inducing points) are those of a power-EP fit at alpha = 1
(REP: the training epochs are :class:`~.pep.PowerEP`'s, as in the paper, "we first obtain the
model hyper-parameters using EP"). With them fixed, :meth:`GibbsSampler.after_fit` draws from
the posterior of the model

    w^c ~ N(0, I) (whitened inducing values),  f_i^c = psi_i^c' w^c + e_i^c,  e_i^c ~ N(0, s_i^c),
    z_i ~ Bernoulli(epsilon),  y_i = argmax_c f_i^c if z_i = 0, uniform over the C classes if z_i = 1,

which is the robust-max likelihood (eq. 2) with the label-error indicator z made explicit. One
sweep draws every conditional exactly:

1. z_i | f_i: 1 if y_i is not the argmax of f_i; otherwise 1 with probability
   (epsilon / C) / (1 - epsilon + epsilon / C);
2. f_i^c | w, z_i, f_i^{-c}: N(h_i^c, s_i^c), truncated (for z_i = 0) above the other classes'
   values for c = y_i and below f_i^{y_i} otherwise (inverse-CDF draws, all points at once);
3. w^c | f^c: Gaussian with precision I + Psi_c diag(1 / s_c) Psi_c' (GP regression on f^c).

Kept draws of w (after ``burn_in`` sweeps, every ``thin``-th) predict by averaging
p(y* | w) = (1 - epsilon) P(f*^c largest | w) + epsilon / C over them. ``diagnostics()`` reports
the effective sample size of every coordinate of w and of the training log-likelihood trace.
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral
from typing import ClassVar

import numpy as np
import torch

from ..constraints import Interval
from ..diagnostics import effective_sample_size
from ..likelihoods import RobustMaxLikelihood
from ..numerics import stable_cholesky
from .draws import KeptDraws
from .pep import PowerEP


def _truncated_normal(mean, sd, lower, upper, generator):
    """Inverse-CDF draws of N(mean, sd^2) restricted to [lower, upper], elementwise.

    Intervals above the mean are flipped into the lower tail, where the CDF is carried in log
    space (``log_ndtr``; ``ndtr`` itself underflows below about -8 and ``Normal.icdf`` returns
    -inf below 1e-17): p = Phi(hi) (r + u (1 - r)) with r = Phi(lo) / Phi(hi), then ``ndtri``.
    """
    a, b = (lower - mean) / sd, (upper - mean) / sd
    flip = a > 0
    lo, hi = torch.where(flip, -b, a), torch.where(flip, -a, b)
    log_hi = torch.special.log_ndtr(hi)
    r = torch.exp(torch.special.log_ndtr(lo) - log_hi)
    u = torch.rand(mean.shape, dtype=mean.dtype, generator=generator).to(mean.device)  # CPU stream on any device
    log_p = log_hi + torch.log(r + u * (1.0 - r))
    z = torch.special.ndtri(torch.exp(log_p).clamp(1e-300, 1.0 - 1e-16))
    z = torch.minimum(torch.maximum(torch.where(flip, -z, z), a), b)
    return mean + sd * z


class GibbsSampler(KeptDraws, PowerEP):
    """REP training of the hyper-parameters, then Gibbs sampling of the posterior.

    Beyond :class:`~.pep.PowerEP`'s parameters:

    Parameters
    ----------
    n_samples, burn_in, thin
        Draws kept, sweeps discarded first, every thin-th sweep kept.
    seed
        seed of the sampler.
    """

    #: the EP stage could split its rows, but the sampler after it needs all rows in one process
    CAPABILITIES = replace(PowerEP.CAPABILITIES, data_parallel=False, sample_weight=False)
    TRAINING_STATE = PowerEP.TRAINING_STATE
    OWN_PARAMETERS: ClassVar[dict] = {"seed": [Interval(Integral, 0, None, closed="left")]}

    def __init__(self, inducing_points, kernel, likelihood: RobustMaxLikelihood, n_data, alpha=1.0, damping=0.5,
                 site_storage=True, n_samples: int = 1000, burn_in: int = 1000, thin: int = 5, seed: int = 0):
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha=alpha, damping=damping,
                         site_storage=site_storage)
        self._register_draws(n_samples, burn_in, thin, self.n_classes, inducing_points.shape[1], inducing_points.dtype)
        self.seed = int(seed)
        self.register_buffer("log_lik_trace", torch.zeros(self.n_samples, dtype=inducing_points.dtype))

    @torch.no_grad()
    def after_fit(self, X, y) -> None:
        """Run the sampler at the fitted hyper-parameters on the training data ``X`` ``[N, D]``, ``y`` ``[N]``."""
        device = self.samples.device
        X = torch.as_tensor(np.asarray(X), dtype=self.samples.dtype, device=device)
        y = torch.as_tensor(np.asarray(y), dtype=torch.long, device=device)
        _, Psi, s = self._whitened_kernel(X)                                            # [C, M, N], [C, N]
        C, M, N = Psi.shape
        g = torch.Generator().manual_seed(self.seed)  # on the CPU: the same draws on every device
        eps = self.likelihood.epsilon
        p_error_if_right = (eps / C) / (1.0 - eps + eps / C)
        # w^c | f^c: precision I + Psi diag(1/s) Psi'; mean = precision^-1 Psi (f / s)
        chol = stable_cholesky(torch.eye(M, dtype=Psi.dtype, device=device) + (Psi / s[:, None, :]) @ Psi.mT)
        onehot = torch.nn.functional.one_hot(y, C).bool()
        rows = torch.arange(N, device=device)
        sd = torch.sqrt(s.T)                                                      # [N, C]
        f = torch.where(onehot, 1.0, -1.0).to(Psi.dtype)                          # consistent with y
        w = torch.zeros(C, M, dtype=Psi.dtype, device=device)
        log_a, log_b = self.likelihood.log_levels(C)
        for kept in self._sweeps():
            right = f.argmax(1) == y
            z = ~right | (torch.rand(N, generator=g, dtype=Psi.dtype).to(device) < p_error_if_right)
            h = (w[:, None, :] @ Psi)[:, 0].T                                     # [N, C]
            for c in range(C):
                others = torch.where(torch.arange(C, device=device)[None, :] == c, -torch.inf, f).amax(1)
                lower = torch.where(y == c, others, -torch.inf)
                upper = torch.where(y == c, torch.inf, f[rows, y])
                lower, upper = torch.where(z, -torch.inf, lower), torch.where(z, torch.inf, upper)
                f[:, c] = _truncated_normal(h[:, c], sd[:, c], lower, upper, g)
            rhs = (Psi @ (f.T / s)[..., None])[..., 0]
            mean = torch.cholesky_solve(rhs[..., None], chol)[..., 0]
            noise = torch.randn(C, M, 1, dtype=Psi.dtype, generator=g).to(device)
            w = mean + torch.linalg.solve_triangular(chol.mT, noise, upper=True)[..., 0]
            if kept is not None:
                self.samples[kept] = w
                self.log_lik_trace[kept] = torch.where(right, log_a, log_b).sum()
        self.sampled.fill_(True)

    def diagnostics(self) -> dict:
        """Counters of the EP training plus the chain's effective sample sizes."""
        out = {**super().diagnostics(), **self._draw_diagnostics()}
        if bool(self.sampled):
            out["ess_log_likelihood"] = float(effective_sample_size(self.log_lik_trace.cpu().numpy())[0])
        return out
