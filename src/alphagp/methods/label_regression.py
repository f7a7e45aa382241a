"""Label regression baseline (alpha paper, Appendix C): sparse GP regression on one-hot labels.

Each class c regresses t_i^c = [y_i = c] on x with the FITC model of the other methods:
t_i^c = h_i^c + e_i^c, e_i^c ~ N(0, s_i^c) (the FITC correction plus the kernel's additive noise,
which is here the Gaussian likelihood's noise). The likelihood is Gaussian, so EP on the
inducing values is exact (one update reaches the fixed point): q(w^c) has precision
I + Psi_c diag(1 / s_c) Psi_c' and natural mean Psi_c (t^c / s_c) (whitened), and the objective
is the exact FITC log marginal likelihood

    log p(t^c) = g(q(w^c)) - g(N(0, I)) - sum_i [log(2 pi s_i^c) / 2 + (t_i^c)^2 / (2 s_i^c)],

summed over classes, maximised with the sign-adaptive rate of the EP methods as in the paper.
Class probabilities come from the arg-max rule on the regression's predictive marginals,
P(f*^c is the largest), like the other methods' predictions.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from ..gaussians import whitened_log_normaliser_from_cholesky
from ..kernels import Kernel
from ..likelihoods import Likelihood
from ..numerics import stable_cholesky
from ..objective import ObjectiveTerms
from .base import Capabilities, SparseGPMethod, StoredQ


class LabelRegression(StoredQ, SparseGPMethod):
    """Exact sparse GP regression on one-hot labels; batch training only.

    Parameters
    ----------
    inducing_points
        ``[C, M, D]``; kernel: a :class:`~alphagp.kernels.Kernel`; n_data: N.
    likelihood
        the classification likelihood that predicts from the regression's latent
        marginals (the registry gives the Heaviside likelihood: the largest output wins).
    """

    #: batch only: the exact sparse-GP marginal likelihood is not a sum over points
    CAPABILITIES = Capabilities(mini_batches=False)
    REFUSES: ClassVar[dict[str, str]] = dict.fromkeys(
        ("alpha", "epsilon", "damping"), "label regression is exact GP regression on one-hot labels")

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood: Likelihood, n_data: int):
        super().__init__(inducing_points, kernel, likelihood)
        C, M = self.n_classes, inducing_points.shape[1]
        self.n_data = int(n_data)
        self._register_stored_q(C, M, inducing_points.dtype)

    def _posterior(self, Psi, s, y):
        t = torch.nn.functional.one_hot(y, self.n_classes).T.to(Psi.dtype)          # [C, N]
        Bm = torch.eye(Psi.shape[1], dtype=Psi.dtype, device=Psi.device) + (Psi / s[:, None, :]) @ Psi.mT
        b = (Psi @ (t / s)[..., None])[..., 0]
        return t, Bm, b

    def _log_marginal(self, Psi, s, y, idx):
        """Exact FITC log marginal likelihood of the one-hot labels, summed over classes, and q's
        whitened natural parameters (B, b) it was computed from."""
        if idx.numel() != self.n_data:
            raise ValueError("label regression is batch only (its exact marginal likelihood is not a sum over points)")
        t, Bm, b = self._posterior(Psi, s, y)
        LB = stable_cholesky(Bm)
        c = torch.linalg.solve_triangular(LB, b[..., None], upper=False)[..., 0]
        g_q = whitened_log_normaliser_from_cholesky(LB, c)
        return g_q.sum() - (0.5 * torch.log(2 * math.pi * s) + 0.5 * t * t / s).sum(), Bm, b

    def _objective(self, _L, Psi, s, y, idx):
        return ObjectiveTerms.batch_only(self._log_marginal(Psi, s, y, idx)[0])

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """The exact posterior at the current kernel (kept for prediction) and the log marginal likelihood."""
        L, Psi, s = self._whitened_kernel(X)
        objective, Bm, b = self._log_marginal(Psi, s, y, idx)
        self._store_q(L.detach(), Bm.detach(), b.detach())
        return ObjectiveTerms.batch_only(objective)
