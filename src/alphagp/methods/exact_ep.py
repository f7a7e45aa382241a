"""Exact EP: expectation propagation on a full GP (no inducing points) with the Heaviside
likelihood's pair factors, binary (probit) and multi-class (scalable EP's model, eq. 1-2, with
every training row), its kernel by type-II maximum likelihood of EP's own evidence.

The posterior of the P = N (C - 1) differences d_p = f^{y_i} - f^k of the training rows is
parallel damped power EP (:mod:`alphagp.pair_ep`): with alpha = 1 EP, below power EP (only the
cavity changes: Theta^alpha = Theta). A step runs EP to its fixed point at the current kernel,
started from the sites the last step left, and returns the log evidence (Rasmussen & Williams eq.
3.65), whose gradient in the kernel is the one at the fixed point with the sites held (eq. 5.27):
no gradient passes through the sweeps. The kernel comes from its own start, the same EP's
evidence maximised by scipy's L-BFGS-B over the amplitude and one lengthscale or one per feature
(``kernel_init="exact_ep"``, :func:`alphagp.pair_ep.search_kernel`), so a fit takes one step;
with ``kernel_init="fixed"`` the trainer's L-BFGS learns it from the fixed start instead.

Predictions (:meth:`ExactEP.predict_proba`): the posterior of f(x*) is Gaussian, jointly over the
C classes, with means k' a and covariances from the sites; the label is the arg-max of f(x*)
(its noise included), so P(y* = c) is the probability that f^c(x*) exceeds every other class's,
an orthant probability of the C - 1 differences: Phi(mean / sd) for two classes, the
Geweke-Hajivassiliou-Keane estimator over fixed scrambled Sobol draws beyond (deterministic). The
classes' marginals alone would not do: the sites fix only differences between classes, so each
f^c keeps its prior variance while the differences are certain.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from ..constraints import StrOptions
from ..numerics import factorisation_rate, log_ndtr
from ..objective import ObjectiveTerms
from ..pair_ep import (
    Sites,
    evidence_sensitivity,
    expectation_propagation,
    log_evidence,
    noise_term,
    pair_covariance,
    pair_layout,
    pair_noise,
    posterior,
    predictive_weights,
)
from .base import MIN_VARIANCE, Capabilities, SparseGPMethod

#: scrambled Sobol draws of the multi-class predictive's orthant probabilities
PREDICTIVE_DRAWS = 512
#: the rows the method is meant for (it has no sparse form, so it conditions on every row beyond
#: too, at a cost that grows as (N (C - 1))^3 a sweep)
EXACT_ROWS = 5000


def largest_probability(mean: torch.Tensor, cov: torch.Tensor, n_draws: int = PREDICTIVE_DRAWS,
                        seed: int = 0) -> torch.Tensor:
    """``[n, C]`` P(f^c is the largest) for f ~ N(``mean`` ``[n, C]``, ``cov`` ``[n, C, C]``): for
    each c the orthant probability that the C - 1 differences f^c - f^k are positive, by the
    Geweke-Hajivassiliou-Keane recursion (each difference drawn from its normal truncated to the
    positive side given the ones before, the product of the truncations' masses averaged) over
    ``n_draws`` scrambled Sobol points of seed ``seed``; exact for two classes. Rows are then
    normalised to sum to one."""
    n, C = mean.shape
    dtype, device = mean.dtype, mean.device
    eye = torch.eye(C - 1, dtype=dtype, device=device)
    draws = 1 if C == 2 else n_draws
    u = torch.full((1, C - 1), 0.5, dtype=dtype) if C == 2 else \
        torch.quasirandom.SobolEngine(C - 1, scramble=True, seed=seed).draw(draws, dtype=dtype)
    u = u.to(device).clamp(1e-12, 1 - 1e-12)
    normal = torch.distributions.Normal(torch.zeros((), dtype=dtype, device=device),
                                        torch.ones((), dtype=dtype, device=device))
    out = torch.empty(n, C, dtype=dtype, device=device)
    for c in range(C):
        A = torch.zeros(C - 1, C, dtype=dtype, device=device)
        A[:, c] = 1.0
        A[torch.arange(C - 1), [k for k in range(C) if k != c]] = -1.0
        mu = mean @ A.T                                                    # [n, C-1]
        omega = A @ cov @ A.T
        L = torch.linalg.cholesky_ex(omega + 1e-12 * omega.diagonal(dim1=-2, dim2=-1).mean(-1)[:, None, None]
                                     * eye)[0]
        log_mass = torch.zeros(n, draws, dtype=dtype, device=device)
        z = torch.zeros(n, draws, C - 1, dtype=dtype, device=device)
        for j in range(C - 1):
            shift = mu[:, j, None] + (z[:, :, :j] * L[:, None, j, :j]).sum(-1)        # [n, S]
            bound = -shift / L[:, j, j, None]                # the difference is positive: z_j > bound
            log_mass = log_mass + log_ndtr(-bound)
            if j + 1 < C - 1:
                low = torch.special.ndtr(bound)
                z[:, :, j] = normal.icdf((low + u[None, :, j] * (1.0 - low)).clamp(1e-300, 1.0 - 1e-16))
        out[:, c] = (torch.logsumexp(log_mass, 1) - math.log(draws)).exp()
    return out / out.sum(1, keepdim=True)


class ExactEP(SparseGPMethod):
    """Exact (power) EP on a full GP with the Heaviside likelihood's pair factors (module
    docstring): every training row conditions the posterior.

    Parameters
    ----------
    inducing_points
        ``[1 or C, N, D]``: replaced by the training rows at the fit (every set the same rows).
    kernel
        a :class:`~alphagp.kernels.Kernel`, shared by the classes (its own start searches one) or
        one per class; its additive noise is the latent functions' noise, whose ratio to the
        amplitude sets the step likelihood's sharpness.
    likelihood
        the Heaviside likelihood (the registry gives it).
    n_data
        N, the training rows.
    alpha
        the power of power EP (1: EP).
    lengthscales
        how the kernel's own start searches the lengthscales: ``"one"`` shared by every feature,
        or ``"ard"`` one per feature (from the one-lengthscale optimum); ``method="auto"``
        chooses between them on held-out rows (one per feature overfits where the features are
        many and the rows few).
    exact
        must be true (the planner's: the rows fit); the method has no inducing-point form.
    """

    CAPABILITIES = Capabilities(batch_optimizer="lbfgs", mini_batches=False, sample_weight=True,
                                exact_rows=EXACT_ROWS, closed_form=True, exact_gradient=False, sparse=False)
    #: the kernel from its own evidence, one kernel and the rows themselves for all classes
    AUTO_SETTINGS: ClassVar[dict] = {"kernel_init": "exact_ep", "shared_hyperparameters": True}
    OWN_PARAMETERS: ClassVar[dict] = {"lengthscales": [StrOptions({"one", "ard"})]}
    REFUSES: ClassVar[dict[str, str]] = {
        "epsilon": "exact EP's likelihood is the exact arg-max (Heaviside) with latent noise: it has no labelling-"
                   "error probability",
        "damping": "exact EP damps its parallel updates itself (from 1, by 0.7 whenever a sweep moves the marginals "
                   "more than the one before)"}

    #: [P, P] matrices over the pair factors a fit holds at its peak (G and its gradient, B's factor, the
    #: marginals' solve, R and the evidence's sensitivity)
    FACTOR_COPIES: ClassVar[int] = 8

    @classmethod
    def working_bytes(cls, n_rows: int, n_classes: int, _n_inducing: int, itemsize: int, _exact: bool) -> int:
        """The [P, P] matrices over the P = N (C - 1) pair factors."""
        factors = n_rows * (n_classes - 1)
        return cls.FACTOR_COPIES * factors * factors * itemsize

    @classmethod
    def minimum_seconds(cls, n_rows: int, n_classes: int) -> float:
        """P^3 floating-point operations for P = N (C - 1) pair factors at this process's
        factorisation rate (:func:`~alphagp.numerics.factorisation_rate`): one sweep alone
        factorises B and solves with it (about 4/3 P^3), the evidence's gradient inverts it (2/3 P^3)."""
        factors = n_rows * (n_classes - 1)
        return float(factors) ** 3 / factorisation_rate()

    def __init__(self, inducing_points: torch.Tensor, kernel, likelihood, n_data: int, alpha: float = 1.0,
                 lengthscales: str = "one", exact: bool = True):
        super().__init__(inducing_points, kernel, likelihood)
        if not exact:
            raise ValueError(f"exact EP conditions on every training row and has no inducing-point form; with "
                             f"{n_data} rows use n_inducing='auto' (every row), or method='ep' or 'dirichlet' for "
                             "inducing points")
        C, dtype = self.n_classes, inducing_points.dtype
        self.n_data, self.alpha, self.lengthscales, self.exact = int(n_data), float(alpha), str(lengthscales), True
        P = self.n_data * (C - 1)
        self.register_buffer("labels", torch.zeros(self.n_data, dtype=torch.long))
        self.register_buffer("row_weight", torch.ones(self.n_data, dtype=dtype))
        self.register_buffer("site_tau", torch.zeros(P, dtype=dtype))
        self.register_buffer("site_nu", torch.zeros(P, dtype=dtype))
        self.register_buffer("ep_sweeps", torch.zeros((), dtype=torch.long))
        self._cache: tuple | None = None

    def holds_a_fit(self) -> bool:
        """Whether its sites are set: the kernel start's search leaves its optimum's sites, labels
        and row weights, from which the model predicts as after a step."""
        return bool(torch.any(self.site_tau != 0))

    def state_problems(self) -> list[str]:
        """Labels that are class indices, row weights that are finite and non-negative (not all
        zero), site precisions that are non-negative and a sweep count that is not negative: the
        state every fit leaves (an edited file's other values would fail in PyTorch at the first
        prediction, or predict from sites no fit gave)."""
        problems = []
        labels, C = self.labels, self.n_classes
        if bool(torch.any((labels < 0) | (labels >= C))):
            problems.append(f"labels from {int(labels.min())} to {int(labels.max())}, not class indices 0 to {C - 1}")
        w = self.row_weight
        if not bool(torch.all(torch.isfinite(w) & (w >= 0))) or not bool(torch.any(w > 0)):
            problems.append(f"row weights from {float(w.min()):g} to {float(w.max()):g}, not finite, non-negative "
                            "and some positive")
        if bool(torch.any(self.site_tau < 0)):
            problems.append(f"site precisions down to {float(self.site_tau.min()):g}; EP keeps them non-negative")
        if int(self.ep_sweeps) < 0:
            problems.append(f"a sweep count of {int(self.ep_sweeps)}")
        return problems

    # ------------------------------------------------------------------ the model's pieces
    def _layout(self, y: torch.Tensor):
        return pair_layout(y, self.n_classes, self.inducing_points.dtype)

    def _covariance(self, X: torch.Tensor, layout) -> torch.Tensor:
        """G ``[P, P]`` of the rows ``X`` ``[N, D]`` at the current kernel (differentiable)."""
        return pair_covariance(self.kernel.cross(X, X, expand=False), layout)

    def _factor_weight(self, layout, weight: torch.Tensor | None) -> torch.Tensor | None:
        return None if weight is None else weight[layout.row]

    def _rows_weight(self, idx: torch.Tensor) -> torch.Tensor | None:
        return None if self.sample_weight is None else self.sample_weight[idx.to(self.sample_weight.device)]

    def _require_all_rows(self, X: torch.Tensor, idx: torch.Tensor) -> None:
        if self.reducer.batch_size(idx.numel()) != self.n_data or X.shape[0] != self.inducing_points.shape[1]:
            raise ValueError(f"exact EP conditions on every training row at once: built for "
                             f"{self.inducing_points.shape[1]} rows, given {X.shape[0]} (it is batch only)")

    # ------------------------------------------------------------------ the objective
    def _evidence(self, X, y, weight, sites: Sites | None):
        layout = self._layout(y)
        G = self._covariance(X, layout)
        noise = pair_noise(self.kernel.noise, layout)
        w = self._factor_weight(layout, weight)
        tilted = self.likelihood.pair_factor_tilted
        ep = expectation_propagation(G, noise, tilted, sites, w, self.alpha)
        value = log_evidence(ep.posterior, ep.sites, noise, tilted, w, self.alpha)
        if not math.isfinite(value):
            raise FloatingPointError("exact EP's log evidence is not finite at this kernel")
        surrogate = (evidence_sensitivity(G.detach(), ep.posterior) * G).sum() + noise_term(
            ep.posterior, ep.sites, noise, tilted, w, self.alpha)
        # the value, with the gradient of the evidence at the fixed point (the sites held)
        return surrogate - surrogate.detach() + value, ep

    def _objective(self, X, y, idx):
        sites = Sites(self.site_tau, self.site_nu) if bool(torch.equal(y, self.labels)) else None
        return ObjectiveTerms.batch_only(self._evidence(X, y, self._rows_weight(idx), sites)[0])

    def objective(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """EP's log evidence of all ``N`` rows at the current kernel (EP run to its fixed point from
        the stored sites)."""
        self._require_all_rows(X, idx)
        return self._objective(X, y, idx).total(self.n_data, idx.numel())

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """EP to its fixed point at the current kernel from the stored sites (kept for prediction),
        and its log evidence (module docstring)."""
        self._require_all_rows(X, idx)
        weight = self._rows_weight(idx)
        same = bool(torch.equal(y, self.labels)) and bool(torch.equal(X, self.inducing_points[0]))
        value, ep = self._evidence(X, y, weight, Sites(self.site_tau, self.site_nu) if same else None)
        with torch.no_grad():
            self.inducing_points.copy_(X[None].expand_as(self.inducing_points))
            self.labels.copy_(y)
            self.row_weight.copy_(torch.ones_like(self.row_weight) if weight is None else weight)
            self.site_tau.copy_(ep.sites.tau)
            self.site_nu.copy_(ep.sites.nu)
            self.ep_sweeps += ep.sweeps
            self.n_improper_cavities += ep.n_improper
        self._cache = None
        return ObjectiveTerms.batch_only(value)

    # ------------------------------------------------------------------ prediction
    def _version(self) -> tuple:
        return tuple(t._version for t in (*self.parameters(), *self.buffers()))

    def _posterior(self):
        """``(layout, posterior, a)`` at the stored sites (cached until a parameter or buffer changes)."""
        key = self._version()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        with torch.no_grad():
            layout = self._layout(self.labels)
            G = self._covariance(self.inducing_points[0], layout)
            weight = None if bool(torch.all(self.row_weight == 1)) else self._factor_weight(layout, self.row_weight)
            q = posterior(G, Sites(self.site_tau, self.site_nu), weight)
            value = (layout, q, predictive_weights(G, q))
        self._cache = (key, value)
        return value

    @torch.no_grad()
    def predict_joint(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The posterior of f(x) at rows ``X`` ``[n, D]`` (standardised), its noise included: means
        ``[n, C]`` and covariances between the classes ``[n, C, C]``."""
        layout, q, a = self._posterior()
        K = self.kernel.cross(X, self.inducing_points[0], expand=False)[:, :, layout.row]    # [G, n, P]
        C = self.n_classes
        means, halves = [], []
        for c in range(C):
            k = K[c if K.shape[0] > 1 else 0] * layout.E[:, c]
            means.append(k @ a)
            halves.append(torch.linalg.solve_triangular(q.L, q.sqrt_s[:, None] * k.T, upper=False))   # [P, n]
        V = torch.stack(halves)                                                            # [C, P, n]
        prior = self.kernel.diag(X).expand(C, -1)                                         # [C, n]
        cov = torch.diag_embed(prior.T) - torch.einsum("cpn,dpn->ncd", V, V)
        return torch.stack(means, 1), cov

    @torch.no_grad()
    def predict_f(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginal means and variances ``[n, C]`` of f(x), noise included (each class's alone: the
        sites fix only differences between classes, so a class's own variance stays near its
        prior's; :meth:`predict_proba` reads the joint)."""
        mean, cov = self.predict_joint(X)
        return mean, cov.diagonal(dim1=-2, dim2=-1).clamp_min(MIN_VARIANCE)

    @torch.no_grad()
    def predict_proba(self, X: torch.Tensor) -> torch.Tensor:
        """``[n, C]`` P(f^c(x) is the largest) under the joint posterior (module docstring)."""
        return largest_probability(*self.predict_joint(X))

    @torch.no_grad()
    def leave_one_out(self):
        """EP's leave-one-out predictive from the cavities (Opper & Winther 2000; Vehtari et al. 2016,
        JMLR 17(103), section 3.2): ``(proba [N, C], y [N], weight [N])``, the class probabilities of
        each training row given the others, with its class index and weight, in the order of the rows.

        q's joint marginal of g_i ``[C]`` at row i (mean m, covariance S: :meth:`predict_joint` less
        the noise) loses the row's C - 1 sites, each entering w_i times on its difference
        d_p = E_p g_i (:mod:`alphagp.pair_ep`): the cavity has precision S^-1 - E' diag(w tau) E and
        natural mean S^-1 m - E' w nu, and the label's probability under it is the arg-max's of
        f_i = g_i + noise, as :meth:`predict_proba` maps a test row's. The sites are held (the kernel
        too), so it approximates refits without each row; a row whose cavity is not positive
        definite keeps q's marginal (counted in ``n_improper_cavities``)."""
        X = self.inducing_points[0]
        mean, cov = self.predict_joint(X)                                          # [N, C], [N, C, C]
        C, N = self.n_classes, X.shape[0]
        noise = self.kernel.noise.expand(C)
        S = cov - torch.diag(noise)
        layout = self._layout(self.labels)
        tau = (self.row_weight[layout.row] * self.site_tau).reshape(N, C - 1)
        nu = (self.row_weight[layout.row] * self.site_nu).reshape(N, C - 1)
        E = layout.E.reshape(N, C - 1, C)
        S_inv = torch.linalg.inv(S)
        precision = S_inv - torch.einsum("npc,np,npd->ncd", E, tau, E)
        natural = (S_inv @ mean[..., None])[..., 0] - torch.einsum("npc,np->nc", E, nu)
        proper = torch.linalg.eigvalsh(0.5 * (precision + precision.mT))[:, 0] > 0
        safe = torch.where(proper[:, None, None], precision, S_inv)
        cavity_cov = torch.linalg.inv(safe)
        cavity_mean = torch.where(proper[:, None], (cavity_cov @ natural[..., None])[..., 0], mean)
        cavity_cov = torch.where(proper[:, None, None], cavity_cov, S)
        self.n_improper_cavities += int((~proper).sum())
        proba = largest_probability(cavity_mean, 0.5 * (cavity_cov + cavity_cov.mT) + torch.diag(noise))
        return proba, self.labels, self.row_weight

    def diagnostics(self) -> dict:
        return {**super().diagnostics(), "ep_sweeps": int(self.ep_sweeps)}
