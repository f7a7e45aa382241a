"""Kept posterior draws of the whitened inducing values, shared by the Gibbs samplers.

A sampler method keeps ``n_samples`` draws of w ``[C, M]`` (after ``burn_in`` sweeps, every
``thin``-th) in the buffer ``samples`` and predicts by averaging over them: the latent means and
variances of f(x) (FITC variance included), and the class probabilities of each draw's
f(x) = psi' w + e, e ~ N(0, s), by the likelihood ``_draw_likelihood()`` returns, averaged.
"""

from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np
import torch

from ..constraints import Interval
from ..diagnostics import effective_sample_size


class KeptDraws:
    """Mixin for :class:`~.base.SparseGPMethod` subclasses that sample the posterior of w."""

    OWN_PARAMETERS: ClassVar[dict] = {"n_samples": [Interval(Integral, 2, None, closed="left")],
                                      "burn_in": [Interval(Integral, 0, None, closed="left")],
                                      "thin": [Interval(Integral, 1, None, closed="left")]}

    def _register_draws(self, n_samples: int, burn_in: int, thin: int, C: int, M: int, dtype) -> None:
        if n_samples < 2 or burn_in < 0 or thin < 1:
            raise ValueError(f"need n_samples >= 2, burn_in >= 0, thin >= 1; got {n_samples}, {burn_in}, {thin}")
        self.n_samples, self.burn_in, self.thin = int(n_samples), int(burn_in), int(thin)
        self.register_buffer("samples", torch.zeros(self.n_samples, C, M, dtype=dtype))
        self.register_buffer("sampled", torch.zeros((), dtype=torch.bool))

    def _draw_config(self) -> dict:
        return {"n_samples": self.n_samples, "burn_in": self.burn_in, "thin": self.thin}

    def _sweeps(self):
        """For every sweep of the chain, the index in ``samples`` its draw goes to, or None."""
        for sweep in range(self.burn_in + self.n_samples * self.thin):
            after = sweep - self.burn_in
            yield after // self.thin if after >= 0 and after % self.thin == 0 else None

    def _draw_likelihood(self):
        """The likelihood whose ``predict_proba(mean, var)`` averages over a draw's FITC noise."""
        return self.likelihood

    def _require_samples(self) -> None:
        if not bool(self.sampled):
            raise RuntimeError("the Gibbs sampler has not run yet (GPClassifier.fit runs it after training)")

    @torch.no_grad()
    def predict_f(self, X):
        """Posterior mean and variance ``[N, C]`` of f(x) over the kept draws (FITC noise included)."""
        self._require_samples()
        _, Psi, s = self._whitened_kernel(X)
        h = torch.einsum("scm,cmn->snc", self.samples, Psi)                      # [S, N, C]
        return h.mean(0), h.var(0) + s.T

    @torch.no_grad()
    def predict_proba(self, X, chunk: int = 64) -> torch.Tensor:
        """``[N, C]`` class probabilities averaged over the kept draws."""
        self._require_samples()
        _, Psi, s = self._whitened_kernel(X)
        likelihood, C = self._draw_likelihood(), self.n_classes
        total = torch.zeros(X.shape[0], C, dtype=Psi.dtype, device=Psi.device)
        for start in range(0, self.n_samples, chunk):
            h = torch.einsum("scm,cmn->snc", self.samples[start:start + chunk], Psi)
            probs = likelihood.predict_proba(h.reshape(-1, C), s.T.expand_as(h).reshape(-1, C))
            total += probs.reshape(h.shape).sum(0)
        return total / self.n_samples

    def _draw_diagnostics(self) -> dict:
        """The chain's settings and the effective sample sizes of the coordinates of w (empty before sampling)."""
        if not bool(self.sampled):
            return {}
        ess = effective_sample_size(self.samples.reshape(self.n_samples, -1).cpu().numpy())
        return {**self._draw_config(), "ess_min": float(ess.min()), "ess_median": float(np.median(ess))}
