"""Dirichlet-based GP classification (Milios, Camoriano, Michiardi, Rosasco & Filippone, NeurIPS
2018): classification as a GP regression in closed form.

A label y_i in C classes is read as the parameter of a Dirichlet over the class probabilities,
a_ic = [y_i = c] + alpha_eps. A Dirichlet sample is normalised independent Gamma(a_ic, 1) draws,
and each Gamma is approximated by the log-normal with its mean and variance (the paper's eq. 6-7):

    log Gamma(a, 1) ~ N(t, s),   s = log(1 / a + 1),   t = log a - s / 2,

so each class c is a GP regression of the transformed labels t_ic with known heteroscedastic
noise s_ic: a row's noise is low in its own class's column (a = 1 + alpha_eps) and high in the
others (a = alpha_eps). The latent functions f_c get a constant mean m_c each and the ARD
squared-exponential kernel (shared by the classes, or one per class); a weight w divides a row's
noise by w (the row repeated w times). The class probabilities are the Dirichlet's mean,
E[softmax(f)] under the Gaussian posterior of f (the paper's eq. 8), estimated by the softmax
likelihood's randomised quasi-Monte Carlo (fixed points: deterministic predictions).

The kernel's hyper-parameters maximise the closed-form marginal likelihood (type-II maximum
likelihood, by L-BFGS: ``Capabilities`` ``batch_optimizer="lbfgs"``), the means profiled out in
closed form at every step (:mod:`alphagp.conjugate`):

* **exact**, conditioned on every training row (``exact=True``: the planner's choice while the
  rows' factors fit, :mod:`alphagp.conjugate`'s one factor and a Woodbury correction per class);
* **sparse**, Titsias' collapsed bound with M inducing inputs beyond, its sums over the rows taken
  in blocks (memory O(M^2 C + block rows x M)), the paper's large-scale route.

After the fit the posterior is kept for prediction: exactly, the training rows sorted by class
(``inducing_points``) and their weights, from which the factors are rebuilt on first use after
loading; sparsely, the rows' sums (:class:`~alphagp.conjugate.SparseStatistics`), from which q(u)
follows for any means.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace
from numbers import Real
from typing import ClassVar

import torch

from ..conjugate import (
    ExactPosterior,
    SparsePosterior,
    SparseStatistics,
    batched_exact_log_evidence,
    class_order,
    exact_log_evidence,
    noise_levels,
    transformed_labels,
    weighted_noise,
)
from ..constraints import Interval
from ..numerics import CholeskyError, stable_cholesky, triangular_inverse
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, Capabilities, SparseGPMethod

#: rows of one block of the sparse sums (their [G, M, rows] temporaries)
BLOCK_ROWS = 4096


class DirichletGP(SparseGPMethod):
    """Dirichlet-based GP classification (module docstring), exact or sparse.

    Parameters
    ----------
    inducing_points
        ``[G, M, D]`` (G = 1: one set for all classes with the shared kernel): with ``exact``, M is
        the number of training rows and the fit replaces them by the rows sorted by class.
    kernel
        a :class:`~alphagp.kernels.Kernel` for the C latent functions; its additive noise is an
        observation noise on the transformed labels beside theirs (GPyTorch's
        ``learn_additional_noise``), so the latent functions are noise-free (:meth:`predict_f`).
    likelihood
        the softmax likelihood of the predictions (the registry gives it).
    n_data
        N, the training rows.
    alpha_eps
        the Dirichlet's prior count added to every class (the paper's alpha_epsilon): smaller
        values make the transformed labels farther apart, so the fit is more confident. The
        default, 1e-3, is the grid point with the lowest held-out NLL over the study's 16 sets
        (geometric mean of its NLL over each set's best grid point, 1.23; 0.01, GPyTorch's, 1.46;
        BENCHMARKS.md, "A GP classifier in closed form"); ``method="auto"`` chooses it on held-out
        rows among 1e-2, 1e-3 and 1e-4.
    noise_scale
        a factor on the transformed labels' noise (1: the paper's). Learnt by the marginal
        likelihood it goes to 0 (the model interpolates the labels, the predictive variance
        alone carries the uncertainty), so it is a setting to choose on held-out rows.
    exact
        condition on every training row (``M == N``); else Titsias' sparse bound.
    """

    #: sparse: the rows' sums add over processes (data-parallel) and over a stream's calls
    #: (:meth:`absorb`); exact: every row conditions every prediction (:attr:`capabilities`)
    KNOWN_DEFECTS: ClassVar[dict[str, str]] = {
        "stat_log_s": "a stream's call with rows of weight 0, which alphagp 0.1.0 before issue 74's fix summed into "
                      "the log noise as infinity: the file is from that defect, and its sums cannot be rebuilt "
                      "without the stream's rows; fit the stream again"}
    CAPABILITIES = Capabilities(batch_optimizer="lbfgs", mini_batches=False, sample_weight=True, exact_rows=5000,
                                closed_form=True, data_parallel=True, streaming=True)
    #: the kernel from its own start (type-II maximum likelihood on a subsample), one kernel and one
    #: inducing set for all classes, random training rows beyond the exact rows, as many as
    #: :meth:`auto_n_inducing` says (validation NLL: on Satimage's 4,053 fit rows 0.2526 in 1.4 s,
    #: 0.2548 with k-means centres in 2.9 s; on MNIST-20000's 18,000, 0.179 in 14 s, 0.167 with
    #: k-means in 53 s and 0.151 with 2,000 random rows in 72 s: a larger random set beats k-means at
    #: its seconds)
    AUTO_SETTINGS: ClassVar[dict] = {"kernel_init": "dirichlet", "shared_hyperparameters": True,
                                     "inducing_init": "random"}
    OWN_PARAMETERS: ClassVar[dict] = {"alpha_eps": [Interval(Real, 0, 1, closed="neither")],
                                      "noise_scale": [Interval(Real, 0, None, closed="neither")]}
    REFUSES: ClassVar[dict[str, str]] = dict.fromkeys(
        ("alpha", "epsilon", "damping"), "the Dirichlet-based GP is a GP regression of transformed labels in closed "
        "form: it has no power, no labelling-error probability and no EP damping")

    #: [N, N] matrices the exact posterior holds at its peak with one kernel (K + diag(high), its factor,
    #: the solves and the gradient's; issue 73: 5,000 rows of 26 classes used 0.63 GiB, 3.4 of them,
    #: where C [N, N] matrices per class were counted: 29.1 GiB)
    EXACT_COPIES: ClassVar[int] = 5
    #: beyond the exact rows ``n_inducing="auto"`` is a share of the rows (at least :data:`SPARSE_MIN`):
    #: issue 73, a 26-class set of 14,000 rows, test NLL 0.181, 0.136 and 0.115 at M = 1,000, 2,000 and
    #: 3,000; MNIST 3.19 % error at M = 4,000 against 4.61 % at 1,000 (BENCHMARKS.md)
    SPARSE_SHARE, SPARSE_MIN = 4, 1000
    #: the share of half this machine's memory the [C, M, M] matrices of an "auto" M may take (the
    #: rest for the rows, the features and the inducing inputs)
    MEMORY_SHARE = 0.8
    #: seconds per flop of the sparse fit's 2 N M^2 + C M^3 (measured on this project's CPU machine,
    #: one thread: MNIST's 54,000 rows, 10 classes, M = 4,000, 252 s); with ``max_time`` the "auto" M
    #: keeps the fit's estimate within it, the predictive of a tenth of the rows held out to score it
    #: (2 C M^2 flops a row) counted in
    SECONDS_PER_FLOP = 1.06e-10
    #: the rows held out to score a fit, as a share of the fitted (``validation_fraction``'s default)
    SCORED_SHARE = 0.1

    @classmethod
    def working_bytes(cls, n_rows: int, n_classes: int, n_inducing: int, itemsize: int, exact: bool) -> int:
        """The exact posterior's [N, N] matrices (one factor shared by the classes); the sparse one's
        [C, M, M]."""
        if exact:
            return cls.EXACT_COPIES * n_rows * n_rows * itemsize
        return super().working_bytes(n_rows, n_classes, n_inducing, itemsize, exact)

    @classmethod
    def auto_n_inducing(cls, n_rows: int, n_classes: int, itemsize: int, max_time: float | None) -> int:
        """Every row (the exact posterior, beyond ``Capabilities.exact_rows``) where its [N, N]
        matrices take at most :attr:`MEMORY_SHARE` of half this machine's memory and, with
        ``max_time``, its N^3 flops fit it; else a quarter of the rows, at least 1,000 (class
        attributes), as many as that memory holds and, with ``max_time``, as the time model allows."""
        from ..data import physical_memory_bytes
        memory = cls.MEMORY_SHARE * physical_memory_bytes() / 2
        if cls.working_bytes(n_rows, n_classes, n_rows, itemsize, True) <= memory and (
                max_time is None or cls.SECONDS_PER_FLOP * n_rows**3 <= max_time):
            return n_rows
        m = max(cls.SPARSE_MIN, n_rows // cls.SPARSE_SHARE)
        m = min(m, int(math.sqrt(memory / (n_classes * itemsize * cls.SQUARE_COPIES))))
        if max_time is not None:
            while m > 100 and cls.SECONDS_PER_FLOP * ((2 + 2 * cls.SCORED_SHARE * n_classes) * n_rows * m * m
                                                      + n_classes * m**3) > max_time:
                m = int(0.9 * m)
        return min(m, n_rows)

    def __init__(self, inducing_points: torch.Tensor, kernel, likelihood, n_data: int, alpha_eps: float = 1e-3,
                 noise_scale: float = 1.0, exact: bool = False):
        if exact and kernel.groups != 1:
            raise ValueError("the exact Dirichlet GP conditions every class on the same training rows under one "
                             "kernel; a kernel per class (shared_hyperparameters=False) needs its sparse form: give "
                             "n_inducing below the rows, or shared_hyperparameters=True")
        super().__init__(inducing_points, kernel, likelihood)
        C, M = self.n_classes, inducing_points.shape[1]
        if exact and M != n_data:
            raise ValueError(f"an exact Dirichlet GP conditions on every training row: M={M} inducing inputs "
                             f"for N={n_data} rows")
        if exact and inducing_points.shape[0] != 1:
            raise ValueError("an exact Dirichlet GP conditions every class on the same rows: inducing_points "
                             "must have shape [1, N, D]")
        dtype = inducing_points.dtype
        self.n_data, self.alpha_eps = int(n_data), float(alpha_eps)
        self.noise_scale, self.exact = float(noise_scale), bool(exact)
        self._labels = transformed_labels(self.alpha_eps)
        if self.exact:
            self.register_buffer("row_weight", torch.ones(M, dtype=dtype))
            self.register_buffer("class_counts", torch.zeros(C, dtype=torch.long))
        else:
            G = inducing_points.shape[0]
            zeros = dict(phi=(C, M, M), a_t=(C, M), a_1=(C, M), tt=(C,), t1=(C,), s1=(C,), log_s=(C,),
                         trace=(C,), n=())
            for name, shape in zeros.items():
                self.register_buffer(f"stat_{name}", torch.zeros(shape, dtype=dtype))
            self._kernel_groups = G
        self._cache: tuple | None = None

    @property
    def capabilities(self) -> Capabilities:
        """The class's capabilities; the exact posterior neither splits its rows across processes
        nor takes a stream's rows a call at a time (it conditions on every row at once)."""
        capabilities = super().capabilities
        return replace(capabilities, data_parallel=False, streaming=False) if self.exact else capabilities

    # ------------------------------------------------------------------ the model's pieces
    def _noise(self, y: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
        """``[C, n]`` the noise of rows of class indices ``y`` ``[n]`` in every class's column: the
        transformed labels' (times ``noise_scale``) plus the kernel's additive noise (an observation
        noise learnt with the kernel, as GPyTorch's ``learn_additional_noise``), divided by the
        row's weight ``weight`` ``[n]`` (or ``None``: 1), as the row repeated that many times."""
        own = torch.nn.functional.one_hot(y, self.n_classes).T.bool()
        dtype, device = self.inducing_points.dtype, y.device
        labels = torch.where(own, torch.tensor(self._labels["s_own"], dtype=dtype, device=device),
                             torch.tensor(self._labels["s_other"], dtype=dtype, device=device))
        noise = self.noise_scale * labels + self.kernel.noise[:, None]
        if weight is None:
            return noise
        return weighted_noise(noise, weight, self.noise_scale)

    def _targets(self, y: torch.Tensor) -> torch.Tensor:
        """``[C, n]`` the transformed labels of class indices ``y`` ``[n]``."""
        own = torch.nn.functional.one_hot(y, self.n_classes).T.bool()
        dtype = self.inducing_points.dtype
        return torch.where(own, torch.tensor(self._labels["t_own"], dtype=dtype, device=y.device),
                           torch.tensor(self._labels["t_other"], dtype=dtype, device=y.device))

    def _rows_weight(self, idx: torch.Tensor) -> torch.Tensor | None:
        return None if self.sample_weight is None else self.sample_weight[idx.to(self.sample_weight.device)]

    def _train_covariance(self, X: torch.Tensor) -> torch.Tensor:
        """The noise-free K(X, X): ``[n, n]`` (one kernel) or ``[C, n, n]``."""
        K = self.kernel.cross(X, X, expand=False)
        return K[0] if K.shape[0] == 1 else K

    def state_problems(self) -> list[str]:
        """An exact model's class counts (whole, non-negative, summing to its rows) and row weights
        (positive, finite); a sparse model's row count (non-negative)."""
        if not self.exact:
            return [] if float(self.stat_n) >= 0 else [f"a negative row count {float(self.stat_n):g}"]
        counts, rows = self.class_counts, self.inducing_points.shape[1]
        problems = []
        if bool(torch.any(counts < 0)) or int(counts.sum()) != rows:
            problems.append(f"class counts {counts.tolist()} that are not non-negative numbers summing to its {rows} "
                            "rows")
        if not bool(torch.all(torch.isfinite(self.row_weight) & (self.row_weight > 0))):
            problems.append(f"row weights down to {float(self.row_weight.min()):g}, not all positive and finite")
        return problems

    # ------------------------------------------------------------------ the objective
    def _exact_objective(self, X, y, weight):
        """The exact log marginal likelihood and the rows sorted by class (order, counts)."""
        order, counts = class_order(y, self.n_classes)
        Xo, yo = X[order], y[order]
        noise = self._noise(yo, None if weight is None else weight[order])
        T = self._targets(yo)
        K = self._train_covariance(Xo)
        with self._noise_named(noise, weight):
            if K.dim() == 2:
                value = exact_log_evidence(K, *noise_levels(noise, counts), T, counts)
            else:
                value = batched_exact_log_evidence(K, noise, T)
        return value, order, counts

    @contextlib.contextmanager
    def _noise_named(self, noise: torch.Tensor, weight: torch.Tensor | None):
        """A failed factor of K + noise (``noise`` ``[C, n]``, rows weighted by ``weight``) said in the
        terms the user set: ``noise_scale`` and the row weights, the noise's two sources."""
        try:
            yield
        except CholeskyError as err:
            spread = "" if weight is None else (f"; row weights from {float(weight.min()):.3g} to "
                                                f"{float(weight.max()):.3g} divide it")
            raise CholeskyError(f"the Dirichlet GP's covariance plus its label noise (noise_scale={self.noise_scale:g}: "
                                f"noise from {float(noise.min()):.3g} to {float(noise.max()):.3g}{spread}) is not "
                                "positive definite in this float precision: use a larger noise_scale, row weights "
                                "nearer 1, or dtype='float64'") from err

    def _sparse_statistics(self, X, y, weight) -> SparseStatistics:
        """The rows' sums (:class:`~alphagp.conjugate.SparseStatistics`) at the current kernel and
        inducing inputs, over blocks of :data:`BLOCK_ROWS` rows."""
        total = None
        Z = self.inducing_points
        L_inv = triangular_inverse(self._inducing_factor())
        for start in range(0, X.shape[0], BLOCK_ROWS):
            rows = slice(start, start + BLOCK_ROWS)
            Xb, yb = X[rows], y[rows]
            A = L_inv @ self.kernel.inducing_covariances(Z, Xb, expand=False)[1]          # [G, M, b]
            residual_var = (self.kernel.prior_variance(Xb)[:A.shape[0]] - A.square().sum(1)).clamp_min(0.0)
            noise = self._noise(yb, None if weight is None else weight[rows])
            part = SparseStatistics.of_rows(A, residual_var, self._targets(yb), noise, yb)
            total = part if total is None else total.add_(part)
        return SparseStatistics(**{k: self.reducer.sum_rows(v) for k, v in total.tensors().items()})

    def _inducing_factor(self) -> torch.Tensor:
        """chol(K_uu + 1e-6 a I) ``[G, M, M]`` of the inducing inputs (sparse)."""
        Z = self.inducing_points
        Kuu = self.kernel.inducing_covariances(Z, Z[0, :1], expand=False)[0]
        jitter = 1e-6 * self.kernel.amplitude[:, None, None]
        return stable_cholesky(Kuu + jitter * torch.eye(Z.shape[1], dtype=Z.dtype, device=Z.device))

    def _objective(self, X, y, idx):
        weight = self._rows_weight(idx)
        if self.exact:
            return ObjectiveTerms.batch_only(self._exact_objective(X, y, weight)[0])
        return ObjectiveTerms.batch_only(self._sparse_statistics(X, y, weight).log_evidence())

    def objective(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The log marginal likelihood (exact) or Titsias' bound (sparse) of all ``N`` rows."""
        self._require_all_rows(idx)
        return self._objective(X, y, idx).total(self.n_data, idx.numel())

    def _require_all_rows(self, idx: torch.Tensor) -> None:
        if self.reducer.batch_size(idx.numel()) != self.n_data:
            raise ValueError("the Dirichlet GP is batch only: its marginal likelihood is not a sum over rows")

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """The closed-form posterior of all rows at the current hyper-parameters (kept for
        prediction) and its log marginal likelihood (exact) or bound (sparse)."""
        self._require_all_rows(idx)
        weight = self._rows_weight(idx)
        if self.exact:
            value, order, counts = self._exact_objective(X, y, weight)
            with torch.no_grad():
                self.inducing_points.copy_(X[order][None])
                self.row_weight.copy_(torch.ones_like(self.row_weight) if weight is None else weight[order])
                self.class_counts.copy_(torch.as_tensor(counts, device=self.class_counts.device))
        else:
            stats = self._sparse_statistics(X, y, weight)
            value = stats.log_evidence()
            with torch.no_grad():
                for name, tensor in stats.tensors().items():
                    getattr(self, f"stat_{name}").copy_(tensor)
        self._cache = None
        return ObjectiveTerms.batch_only(value)

    @torch.no_grad()
    def absorb(self, X: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None) -> None:
        """Add rows ``X`` ``[B, D]`` (standardised) with class indices ``y`` ``[B]`` and weights
        ``weight`` ``[B]`` (or ``None``) to the sparse posterior at the current kernel and inducing
        inputs (a stream's call, ``partial_fit``): their sums join the rows' sums, so the posterior
        after every call is the one of all rows so far, as a fit on them with this kernel gives.
        Rows of weight 0 are left out (their likelihood to the power 0 is 1; their noise would be
        infinite), as ``fit`` leaves them out."""
        if self.exact:
            raise ValueError("the exact Dirichlet GP conditions on every row at once and cannot take rows a call at "
                             "a time; fit it with fewer inducing points than rows (n_inducing) to stream")
        if weight is not None:
            kept = weight > 0
            X, y, weight = X[kept], y[kept], weight[kept]
            if not len(y):
                return
        stats = self._sparse_statistics(X, y, weight)
        for name, tensor in stats.tensors().items():
            getattr(self, f"stat_{name}").add_(tensor)
        self._cache = None

    # ------------------------------------------------------------------ prediction
    @property
    def means(self) -> torch.Tensor:
        """The latent functions' constant means ``[C]`` (profiled: the generalised least-squares
        means of the transformed labels at the current kernel)."""
        return self._posterior()[0]

    def _version(self) -> tuple:
        return tuple(t._version for t in (*self.parameters(), *self.buffers()))

    def _posterior(self):
        """``(means, posterior)``: the profiled constant means ``[C]`` and the exact posterior's
        factors (:class:`~alphagp.conjugate.ExactPosterior`) or the sparse q(u)'s whitened precision
        and natural mean, at the current state (cached until a parameter or buffer changes)."""
        key = self._version()
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        with torch.no_grad():
            if self.exact:
                Z = self.inducing_points[0]
                counts = self.class_counts.tolist()
                y = torch.repeat_interleave(torch.arange(self.n_classes, device=Z.device), self.class_counts)
                noise = self._noise(y, self.row_weight)
                with self._noise_named(noise, self.row_weight):
                    posterior = ExactPosterior(self._train_covariance(Z), self._targets(y), counts, noise)
            else:
                stats = SparseStatistics(**{name: getattr(self, f"stat_{name}") for name in
                                            ("phi", "a_t", "a_1", "tt", "t1", "s1", "log_s", "trace", "n")})
                posterior = SparsePosterior(stats, self._inducing_factor())
        self._cache = (key, (posterior.mean, posterior))
        return posterior.mean, posterior

    @torch.no_grad()
    def leave_one_out(self):
        """The exact posterior's leave-one-out predictive ``[n, C]`` of the rows it holds (sorted by
        class), with their class indices and weights (ones where unweighted): the latent means and
        variances given the other rows (:meth:`~alphagp.conjugate.ExactPosterior.leave_one_out`, the
        means re-profiled without the row, the kernel fixed) through the softmax predictive, as
        :meth:`predict_proba` maps a test row's; ``None`` for the sparse form."""
        if not self.exact:
            return None
        _, posterior = self._posterior()
        mean, var = posterior.leave_one_out()
        y = torch.repeat_interleave(torch.arange(self.n_classes, device=mean.device), self.class_counts)
        return self.likelihood.predict_proba(mean.T, var.clamp_min(MIN_VARIANCE).T), y, self.row_weight

    @torch.no_grad()
    def predict_f(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginal means and variances ``[N, C]`` of the latent functions at ``X``; the kernel's
        additive noise is an observation noise here (class docstring), so it is not in them."""
        _, posterior = self._posterior()
        prior_var = self.kernel.prior_variance(X)
        if self.exact:
            Kxs = self.kernel.cross(self.inducing_points[0], X, expand=False)       # [G, n, b]
            mean, var = posterior.marginals(Kxs[0] if Kxs.shape[0] == 1 else Kxs, prior_var)
        else:
            mean, var = posterior.marginals(self.kernel.inducing_covariances(self.inducing_points, X,
                                                                             expand=False)[1], prior_var)
        return mean.T, var.clamp_min(MIN_VARIANCE).T

