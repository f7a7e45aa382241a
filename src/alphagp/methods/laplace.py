"""Laplace approximation with the softmax likelihood (the alpha paper's Laplace baseline, Appendix C).

As in the paper, the hyper-parameters (kernel, inducing points) come from an EP fit (REP,
alpha = 1: the training epochs are :class:`~.pep.PowerEP`'s); :meth:`LaplaceSoftmax.after_fit`
then finds the mode of

    log p(w | y) = -|w|^2 / 2 + sum_i log softmax(h_i)_{y_i} + const,   h_i^c = psi_i^c' w^c,

over the whitened inducing values of all classes jointly, by Newton's method with step halving
(Rasmussen & Williams, section 3.5, in the inducing-point parameterisation), and approximates
the posterior by N(w_hat, H^{-1}) with H = I + sum_i Psi_i (diag(pi_i) - pi_i pi_i') Psi_i'
(C M x C M: the softmax couples the classes). The FITC variance s enters only the predictive:
f* ~ N(Psi*' w_hat, Psi*' H^{-1} Psi* + diag(s*)), and E[softmax(f*)] is a Monte Carlo average over
``n_predictive_samples`` draws with a fixed seed.
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch

from ..constraints import Interval
from ..numerics import rows_per_block, stable_cholesky, triangular_inverse
from .pep import PowerEP


class LaplaceSoftmax(PowerEP):
    """REP training of the hyper-parameters, then the Laplace approximation of the softmax model.

    Parameters
    ----------
    newton_iterations, newton_tol
        Newton's method stops when the largest gradient entry is below ``newton_tol`` (or after
        ``newton_iterations``).
    n_predictive_samples, seed
        Monte Carlo of the predictive.
    **kwargs
        :class:`~.pep.PowerEP`'s arguments.
    """

    #: the EP stage could split its rows, but Newton's method after it needs all rows in one process
    CAPABILITIES = replace(PowerEP.CAPABILITIES, data_parallel=False, sample_weight=False)
    OWN_PARAMETERS: ClassVar[dict] = {"newton_iterations": [Interval(Integral, 1, None, closed="left")],
                                      "newton_tol": [Interval(Real, 0, None, closed="neither")],
                                      "n_predictive_samples": [Interval(Integral, 1, None, closed="left")],
                                      "seed": [Interval(Integral, 0, None, closed="left")]}

    def __init__(self, inducing_points, kernel, likelihood, n_data, alpha=1.0, damping=0.5, site_storage=True,
                 newton_iterations: int = 100, newton_tol: float = 1e-8, n_predictive_samples: int = 2000,
                 seed: int = 0):
        super().__init__(inducing_points, kernel, likelihood, n_data, alpha=alpha, damping=damping,
                         site_storage=site_storage)
        C, M = self.n_classes, inducing_points.shape[1]
        self.newton_iterations, self.newton_tol = int(newton_iterations), float(newton_tol)
        self.n_predictive_samples, self.seed = int(n_predictive_samples), int(seed)
        self.register_buffer("mode", torch.zeros(C, M, dtype=inducing_points.dtype))
        self.register_buffer("hessian", torch.eye(C * M, dtype=inducing_points.dtype))
        self.register_buffer("newton_steps", torch.zeros((), dtype=torch.long))

    @staticmethod
    def log_posterior(w, Psi, y):
        """log p(w | y) up to a constant, ``w`` ``[C, M]``, ``Psi`` ``[C, M, N]``."""
        h = (w[:, None, :] @ Psi)[:, 0].T                                          # [N, C]
        return -0.5 * (w * w).sum() + torch.log_softmax(h, -1).gather(1, y[:, None]).sum()

    def _gradient_and_hessian(self, w, Psi, y):
        C, M, _ = Psi.shape
        h = (w[:, None, :] @ Psi)[:, 0].T
        pi = torch.softmax(h, -1)                                                  # [N, C]
        resid = torch.nn.functional.one_hot(y, C).to(w.dtype) - pi
        grad = -w + (Psi @ resid.T[..., None])[..., 0]
        W = torch.diag_embed(pi) - pi[:, :, None] * pi[:, None, :]                 # [N, C, C]
        H = torch.einsum("amn,nab,bkn->ambk", Psi, W, Psi).reshape(C * M, C * M)
        return grad, H + torch.eye(C * M, dtype=w.dtype, device=w.device)

    @torch.no_grad()
    def after_fit(self, X, y) -> None:
        """Newton's method for the mode at the fitted hyper-parameters; keeps the mode and Hessian."""
        X = torch.as_tensor(np.asarray(X), dtype=self.mode.dtype, device=self.mode.device)
        y = torch.as_tensor(np.asarray(y), dtype=torch.long, device=self.mode.device)
        _, Psi, _ = self._whitened_kernel(X)
        w = torch.zeros_like(self.mode)
        value = self.log_posterior(w, Psi, y)
        for step in range(self.newton_iterations):
            grad, H = self._gradient_and_hessian(w, Psi, y)
            if grad.abs().max() < self.newton_tol:
                break
            direction = torch.cholesky_solve(grad.reshape(-1, 1), stable_cholesky(H)).reshape(w.shape)
            t = 1.0
            while t > 1e-10:    # the log posterior is concave: halve until it rises
                candidate = w + t * direction
                new_value = self.log_posterior(candidate, Psi, y)
                if new_value >= value:
                    break
                t *= 0.5
            w, value = candidate, new_value
            self.newton_steps.fill_(step + 1)
        self.mode.copy_(w)
        self.hessian.copy_(self._gradient_and_hessian(w, Psi, y)[1])

    def _predictive(self, X):
        """Mean ``[N, C]`` and covariance ``[N, C, C]`` of f(x*) under the Laplace posterior."""
        _, Psi, s = self._whitened_kernel(X)
        C, M, _ = Psi.shape
        L_inv = triangular_inverse(stable_cholesky(self.hessian))
        G = torch.stack([L_inv[:, c * M:(c + 1) * M] @ Psi[c] for c in range(C)], 1)   # [CM, C, N]
        mean = (self.mode[:, None, :] @ Psi)[:, 0].T
        cov = torch.einsum("kan,kbn->nab", G, G) + torch.diag_embed(s.T)
        return mean, cov

    @torch.no_grad()
    def predict_f(self, X):
        mean, cov = self._predictive(X)
        return mean, torch.diagonal(cov, dim1=-2, dim2=-1)

    @torch.no_grad()
    def predict_proba(self, X) -> torch.Tensor:
        """``[N, C]`` E[softmax(f*)] by Monte Carlo over the C-dimensional Gaussian predictive, in
        blocks of rows whose temporaries (``[CM, C, rows]``, ``[rows, C, C]``, ``[rows, S, C]``)
        stay within :data:`~alphagp.numerics.QUADRATURE_BLOCK_BYTES`, whatever C."""
        C, M, S = self.n_classes, self.inducing_points.shape[1], self.n_predictive_samples
        g = torch.Generator().manual_seed(self.seed)
        eps = torch.randn(S, C, dtype=X.dtype, generator=g).to(X.device)
        out = torch.empty(X.shape[0], C, dtype=X.dtype, device=X.device)
        rows = rows_per_block((C * M * C + 2 * C * C + 2 * S * C) * X.element_size())
        for r in range(0, X.shape[0], rows):
            mean, cov = self._predictive(X[r:r + rows])
            chol = torch.linalg.cholesky(cov)                                      # [rows, C, C]
            f = mean[:, None, :] + torch.einsum("nab,sb->nsa", chol, eps)         # [rows, S, C]
            out[r:r + rows] = torch.softmax(f, -1).mean(1)
        return out

    def diagnostics(self) -> dict:
        return {**super().diagnostics(), "newton_steps": int(self.newton_steps)}
