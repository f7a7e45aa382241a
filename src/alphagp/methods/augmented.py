"""Conjugate multi-class GP classification with the logistic-softmax likelihood (Galy-Fajou et al.,
UAI 2019): closed-form stochastic variational inference (Algorithm 1), class subsampling
(Algorithm 2) and a Gibbs sampler of the augmented model (section 4.3).

q(u^c) is Gaussian per class and kept, as in the EP methods, as the prior times a factor whose
u-space natural parameters are the buffers ``site_precision`` and ``site_natural``
(:class:`~.base.StoredQ`). One step on a batch B (``local_update``):

1. q's marginals of f_i^c (FITC variance included) at the current kernel;
2. the optimal local factors (eq. 12-14, :func:`~.augmentation.local_updates`);
3. the CAVI optimum of q(u) given them, from the batch scaled by N / |B| (eq. 15-16): in whitened
   coordinates precision I + (N/|B|) Psi diag(theta) Psi' and natural mean (N/|B|) Psi (y - gamma) / 2;
   eq. 15 as printed has Sigma^{-1} where Sigma belongs;
4. a natural-gradient step: the factor's natural parameters move to (1 - rho_t) old + rho_t
   optimum (Hoffman et al. 2013), rho_t = (delay + t)^(-forgetting) on mini-batches (Robbins-Monro,
   the authors' defaults 1 and 0.51), rho = 1 (plain CAVI) when the batch is all the data;
5. the returned objective is the augmented ELBO at q before the step (the local factors of
   step 2 are optimal for it and held fixed), so the trainer's optimiser takes a gradient step
   in the kernel hyper-parameters and inducing inputs (Algorithm 1, line 22) from the same
   marginals.

With ``class_batch_size`` K < C (Algorithm 2), each step draws K classes, computes the kernel
quantities, local factors and updates of those classes only (a step costs the same for any C),
scales their terms by C / K and uses eq. 17 for alpha.
"""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from torch.nn.functional import one_hot

from ..constraints import Interval
from ..gaussians import whitened_kl
from ..likelihoods.softmax import LogisticSoftmaxLikelihood
from ..numerics import stable_cholesky, step_generator
from ..objective import ObjectiveTerms
from .base import Capabilities, SparseGPMethod, StoredQ, whitened_sites
from .draws import KeptDraws
from .polya_gamma import augmented_point_terms, local_updates
from .projection import projected_marginals


class AugmentedVI(StoredQ, SparseGPMethod):
    """Closed-form stochastic VI of the augmented logistic-softmax model (see the module docstring).

    Parameters
    ----------
    inducing_points
        ``[C, M, D]`` or ``[1, M, D]`` (shared); kernel: a :class:`~alphagp.kernels.Kernel`.
    n_data
        N.
    step_delay, step_forgetting
        the natural-gradient step rho_t = (step_delay + t)^(-step_forgetting)
        on mini-batches (delay > 0, forgetting in (0.5, 1]).
    class_batch_size
        classes per step (Algorithm 2); ``None`` uses all.
    likelihood
        the logistic-softmax likelihood; its ``n_predictive_samples`` quasi-Monte Carlo
        points give the predictive (section 4.2).
    seed
        seed of the class subsets (the registry passes it to the likelihood's predictive points too).
    """

    # data-parallel: a step's closed-form sums over the batch are all-reduced (the class split is
    # not offered: each point's local factors couple all its classes)
    CAPABILITIES = Capabilities(batch_optimizer="adam", data_parallel=True, sample_weight=True, streaming=True)
    REFUSES: ClassVar[dict[str, str]] = dict.fromkeys(
        ("alpha", "epsilon", "damping"), "the logistic-softmax model is fitted by closed-form variational updates")
    OWN_PARAMETERS: ClassVar[dict] = {"step_delay": [Interval(Real, 0, None, closed="neither")],
                                      "step_forgetting": [Interval(Real, 0.5, 1, closed="right")],
                                      "class_batch_size": [Interval(Integral, 1, None, closed="left"), None],
                                      "seed": [Interval(Integral, 0, None, closed="left")]}

    def __init__(self, inducing_points, kernel, likelihood: LogisticSoftmaxLikelihood, n_data: int,
                 step_delay: float = 1.0, step_forgetting: float = 0.51, class_batch_size: int | None = None,
                 seed: int = 0):
        super().__init__(inducing_points, kernel, likelihood)
        if not step_delay > 0 or not 0.5 < step_forgetting <= 1.0:
            raise ValueError(f"need step_delay > 0 and step_forgetting in (0.5, 1], got {step_delay}, {step_forgetting}")
        C = self.n_classes
        if class_batch_size is not None and not 1 <= class_batch_size <= C:
            raise ValueError(f"class_batch_size must lie in [1, {C}] or be None, got {class_batch_size}")
        self.n_data = int(n_data)
        self.step_delay, self.step_forgetting = float(step_delay), float(step_forgetting)
        self.class_batch_size = None if class_batch_size in (None, C) else int(class_batch_size)
        self.seed = int(seed)
        self._register_stored_q(C, inducing_points.shape[1], inducing_points.dtype)
        self.register_buffer("n_steps", torch.zeros((), dtype=torch.long))

    # ------------------------------------------------------------------ pieces of a step
    def step_size(self, full_batch: bool) -> float:
        """rho of the next step: 1 on the whole data set, else (delay + t)^(-forgetting), t = 1, 2, ..."""
        if full_batch:
            return 1.0
        return (self.step_delay + float(self.n_steps) + 1.0) ** (-self.step_forgetting)

    def _class_subset(self) -> torch.Tensor | None:
        """The classes of the next step (sorted), or ``None`` for all; drawn from (seed, step)."""
        if self.class_batch_size is None:
            return None
        g = step_generator(self.seed, int(self.n_steps))
        subset = torch.randperm(self.n_classes, generator=g)[:self.class_batch_size].sort().values
        return subset.to(self.site_natural.device)

    def _q(self, L, classes):
        """Whitened natural parameters (B ``[K, M, M]``, b ``[K, M]``) of q for ``classes`` (None: all)."""
        precision, natural = self.site_precision, self.site_natural
        if classes is not None:
            precision, natural = precision[classes], natural[classes]
        return whitened_sites(L, precision, natural)

    def _onehot(self, y, classes):
        onehot = one_hot(y, self.n_classes).to(self.site_natural.dtype)
        return onehot if classes is None else onehot[:, classes]

    def _elbo(self, L, Psi, s, y, idx, classes, step: bool = False):
        """Augmented ELBO of the batch scaled to the data set, at the current q, with the local
        factors optimal for it and held fixed; with ``step``, also the closed-form step on q
        (module docstring, steps 1-4) from the same marginals and local factors."""
        Bm, b = self._q(L, classes)
        mean, var, _ = projected_marginals(Bm, b, Psi)
        second = mean.square() + var + s
        onehot = self._onehot(y, classes)
        local = local_updates(mean.T.detach(), second.T.detach(), onehot, self.n_classes)
        if step:
            self._global_step(L.detach(), Psi.detach(), onehot, local, idx, classes)
        data = self._weighted(augmented_point_terms(mean.T, second.T, onehot, local, self.n_classes), idx).sum()
        return ObjectiveTerms(-(self.n_classes / Bm.shape[0] * whitened_kl(Bm, b).sum()), data)

    def _objective(self, L, Psi, s, y, idx):
        return self._elbo(L, Psi, s, y, idx, None)

    @torch.no_grad()
    def _global_step(self, L, Psi, onehot, local, idx, classes) -> None:
        """The factor's natural parameters move to (1 - rho) old + rho CAVI optimum (eq. 15-16)."""
        scale = self._data_scale(idx)
        # sums over the global batch, each point's statistics counted w_i times
        gram = self.reducer.sum_(self._scaled_gram(Psi, self._weighted(local.theta, idx)))
        vec = self.reducer.sum_(self._weighted_sum(Psi, self._weighted(onehot - local.gamma, idx)))
        precision, natural = self._to_u_space(L, scale * gram, 0.5 * scale * vec)
        rho = self.step_size(self.reducer.batch_size(idx.numel()) == self.n_data)
        # new tensors, not in-place writes: the old ones are saved for the ELBO's backward pass
        for name, new in (("site_precision", precision), ("site_natural", natural)):
            old = getattr(self, name)
            if classes is None:
                setattr(self, name, (1.0 - rho) * old + rho * new)
            else:
                setattr(self, name, old.index_copy(0, classes, (1.0 - rho) * old[classes] + rho * new))

    @torch.no_grad()
    def _choose_start(self, X, y, idx) -> None:
        """Start q where the augmented ELBO of the first batch is higher: at the prior N(0, K) or at
        N(0, I) in u-space (the authors' package's start). The joint CAVI can have several fixed
        points when the kernel amplitude is large, and the prior start then lands in a worse one
        (Wine at amplitude 50: ELBO -157.4 against -154.7, test NLL 0.51 against 0.19); at small
        amplitudes both reach the same fixed point and the prior's bound is the higher one."""
        L, Psi, s = self._whitened_kernel(X)
        at_prior = self._batch_elbo(self._elbo(L, Psi, s, y, idx, None), idx)
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        identity = eye - torch.cholesky_inverse(L)                       # u-space factor: q precision I
        self.site_precision, prior_precision = identity.clone(), self.site_precision
        if not self._batch_elbo(self._elbo(L, Psi, s, y, idx, None), idx) > at_prior:
            self.site_precision = prior_precision

    def _batch_elbo(self, terms, idx) -> float:
        """The ELBO of the global batch of which ``idx`` is this process's share, scaled to the
        data set (the same value, hence the same choice, in every process)."""
        data = self.reducer.sum_(terms.data.detach().reshape(1).clone())
        return float(terms.shared + self._data_scale(idx) * data[0])

    def local_update(self, X, y, idx):
        """One closed-form step on the batch. Returns the ELBO at q before the step (the local
        factors of the step are optimal for it), whose gradient moves the kernel and inducing inputs:
        one evaluation of q's marginals serves both. The first step of a fit first chooses q's start
        (:meth:`_choose_start`)."""
        if int(self.n_steps) == 0:
            self._choose_start(X, y, idx)
        classes = self._class_subset()
        objective = self._elbo(*self._whitened_kernel(X, classes), y, idx, classes, step=True)
        self.n_steps += 1
        return objective


class AugmentedGibbs(KeptDraws, AugmentedVI):
    """Hyper-parameters from :class:`AugmentedVI`, then Gibbs sampling of the augmented model's
    exact posterior (section 4.3) at them.

    With the kernel, the inducing inputs and the FITC variances s fixed (f_i^c = psi_i^c' w^c + e_i^c,
    e ~ N(0, s), w^c ~ N(0, I); with the inducing inputs at the training inputs this is the full GP),
    one sweep draws two blocks exactly:

    1. (lambda, n, omega) | f: lambda_i ~ Ga(1, sum_c sigma(f_i^c)) (the Gamma augmentation with
       n summed out), n_i^c ~ Po(lambda_i sigma(-f_i^c)), omega_i^c ~ PG(y_i^c + n_i^c, abs(f_i^c));
    2. (w, f) | (n, omega): w^c from GP regression with precisions omega / (1 + s omega) and
       natural means kappa / (1 + s omega), kappa = (y - n) / 2 (e summed out), then
       f_i^c ~ N((h / s + kappa) / (1 / s + omega), 1 / (1 / s + omega)) with h = psi' w.

    Polya-Gamma draws come from the ``polyagamma`` package. Kept draws of w predict by averaging
    the logistic-softmax over them and over 16 quasi-Monte Carlo points of the FITC noise each.

    Parameters
    ----------
    n_samples, burn_in, thin
        Draws kept, sweeps discarded first, every thin-th sweep kept; the sampler's seed is ``seed``.
    **kwargs
        :class:`AugmentedVI`'s arguments.
    """

    #: the sampler draws from the unweighted posterior, so it takes no sample weights
    CAPABILITIES = replace(AugmentedVI.CAPABILITIES, sample_weight=False, streaming=False)

    def __init__(self, inducing_points, kernel, likelihood, n_data, n_samples: int = 1000, burn_in: int = 200,
                 thin: int = 2, **kwargs):
        super().__init__(inducing_points, kernel, likelihood, n_data, **kwargs)
        self._register_draws(n_samples, burn_in, thin, self.n_classes, inducing_points.shape[1], inducing_points.dtype)
        self.noise_likelihood = LogisticSoftmaxLikelihood(n_predictive_samples=16, seed=self.seed)

    def _draw_likelihood(self):
        return self.noise_likelihood

    @torch.no_grad()
    def after_fit(self, X, y) -> None:
        """Run the sampler on the training data ``X`` ``[N, D]`` (as the model sees it), ``y`` ``[N]``."""
        from polyagamma import random_polyagamma

        dtype, device = self.samples.dtype, self.samples.device
        X = torch.as_tensor(np.asarray(X), dtype=dtype, device=device)
        y = torch.as_tensor(np.asarray(y), dtype=torch.long, device=device)
        L, Psi, s = self._whitened_kernel(X)
        C, M, N = Psi.shape
        rng = np.random.default_rng(self.seed)
        onehot = one_hot(y, C).T.to(dtype).cpu().numpy()                          # [C, N]
        f = projected_marginals(*self._q(L, None), Psi)[0]                        # start at q's mean
        eye = torch.eye(M, dtype=dtype, device=device)
        for kept in self._sweeps():
            f_np = f.cpu().numpy()
            lam = rng.standard_exponential(N) / (1.0 / (1.0 + np.exp(-f_np))).sum(0)
            n = rng.poisson(lam * (1.0 / (1.0 + np.exp(f_np))))
            shape = onehot + n
            omega_np = np.zeros_like(f_np)
            positive = shape > 0
            omega_np[positive] = random_polyagamma(shape[positive], np.abs(f_np[positive]), random_state=rng)
            omega = torch.as_tensor(omega_np, dtype=dtype, device=device)
            kappa = torch.as_tensor(0.5 * (onehot - n), dtype=dtype, device=device)
            denom = 1.0 + s * omega
            chol = stable_cholesky(eye + (Psi * (omega / denom)[:, None, :]) @ Psi.mT)
            w_mean = torch.cholesky_solve((Psi @ (kappa / denom)[..., None]), chol)[..., 0]
            noise = torch.as_tensor(rng.standard_normal((C, M, 1)), dtype=dtype, device=device)
            w = w_mean + torch.linalg.solve_triangular(chol.mT, noise, upper=True)[..., 0]
            h = (w[:, None, :] @ Psi)[:, 0]
            precision = 1.0 / s + omega
            f_noise = torch.as_tensor(rng.standard_normal((C, N)), dtype=dtype, device=device)
            f = (h / s + kappa) / precision + f_noise / precision.sqrt()
            if kept is not None:
                self.samples[kept] = w
        self.sampled.fill_(True)

    def diagnostics(self) -> dict:
        return {**super().diagnostics(), **self._draw_diagnostics()}
