"""A converged kernel before any approximation: type-II maximum likelihood of a closed-form
GP model of the labels, on a subsample of the rows, by L-BFGS-B.

The classifiers' approximations learn the kernel's hyper-parameters slowly: batch EP's
sign-adaptive steps move the lengthscales a few per cent from their start in 250 iterations
(BENCHMARKS.md, "One strong fit"), so the start is the model. This module gives every fit a start
that has converged on a closed-form surrogate, on the standardised features ``X`` ``[n, D]`` with
the ARD squared-exponential kernel (:class:`~alphagp.kernels.ARDKernel`'s form: amplitude a,
lengthscales l), its log marginal likelihood maximised over log a and log l (and, for the
regression, log s) by scipy's L-BFGS-B with the gradient from torch, on at most ``max_rows``
random rows. Two surrogates (``surrogate``):

* ``"regression"``: the one-hot encoding of the class indices, centred per class, ``Y`` ``[n, C]``,
  regressed by an exact GP with Gaussian noise s (Rasmussen & Williams, eq. 2.30),

      log p(Y | X) = sum_c [ -1/2 y_c' (a K_l + s W^-1)^-1 y_c - 1/2 log|a K_l + s W^-1| - n/2 log 2 pi ],

  with ``W`` the rows' weights (a weight w divides the row's noise variance by w, as the row
  repeated w times would). ``shared=True`` fits one kernel to all C columns (one Cholesky factor
  per evaluation); ``shared=False`` one kernel per class (a batch of C factors). Its amplitude
  and noise are in the labels' units, not the latent functions', so only the lengthscales start
  a classifier (:meth:`KernelStart.kernel_params`).
* ``"dirichlet"``: the Dirichlet-based GP classifier itself (:mod:`alphagp.methods.dirichlet`):
  the transformed labels of ``alpha_eps`` with their heteroscedastic noise (times
  ``noise_scale``), constant means profiled out, one kernel shared by the classes (one factor and
  a Woodbury correction per class, :mod:`alphagp.conjugate`). Its latent functions are class
  scores whose softmax is the predictive, so its amplitude starts a classifier too.
  ``"dirichlet_linear"`` is the same search with the kernel's linear term b x'x' beside the RBF
  (its log b searched too; :class:`~alphagp.kernels.ARDKernel`'s ``linear``).
* ``"exact_ep"``: exact EP itself (:mod:`alphagp.methods.exact_ep`), its log evidence at the EP
  fixed point with the gradient there (:func:`alphagp.pair_ep.search_kernel`), on every row
  (``max_rows`` does not apply: the method conditions on every row), one lengthscale or one per
  feature (``lengthscales``), the power ``alpha``; the latent noise held
  (:data:`alphagp.pair_ep.NOISE`), the amplitude learnt against it.

The learnt kernel starts the classifier (``kernel_init`` of :class:`~alphagp.GPClassifier`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import minimize

from .conjugate import exact_log_evidence, transformed_labels, weighted_noise
from .kernel_terms import RBF, Linear, Term, term_from_spec
from .numerics import stable_cholesky

#: rows the surrogate reads at most (a random subsample): its cost grows as their cube
MAX_ROWS = 500
#: the kernel's additive noise of a Dirichlet start, relative to its amplitude (the transformed
#: labels carry the noise; this keeps the latent functions' prior variance positive)
DIRICHLET_JITTER = 1e-6
#: bounds of the positive parameters during the search (lengthscales of standardised features)
LENGTHSCALE_BOUNDS = (1e-2, 1e3)
AMPLITUDE_BOUNDS = (1e-4, 1e3)
NOISE_BOUNDS = (1e-6, 1e2)
LINEAR_BOUNDS = (1e-6, 1e2)
#: L-BFGS-B's stopping rule: iterations, and the relative change of the objective
MAX_ITERATIONS = 200
TOLERANCE = 1e-7
#: with a fit's ``max_time``, the share of it the search may take at most
BUDGET_SHARE = 0.1


@dataclass(frozen=True)
class KernelStart:
    """What the surrogate learnt: ``lengthscale`` ``[G, D]``, ``amplitude`` ``[G]`` and ``noise``
    ``[G]`` (the regression's label noise s; the Dirichlet start's additive kernel noise) for G
    kernel groups (1 shared, else C); the maximised ``log_marginal_likelihood`` per row, the
    ``rows`` read, L-BFGS-B's ``evaluations`` and whether it ``converged``, the ``seconds``
    taken, the ``surrogate`` (:data:`SURROGATES`) and the Dirichlet start's ``alpha_eps`` and
    ``noise_scale`` (``None`` for the regression)."""

    lengthscale: np.ndarray
    amplitude: np.ndarray
    noise: np.ndarray
    log_marginal_likelihood: float
    rows: int
    evaluations: int
    converged: bool
    seconds: float
    surrogate: str = "regression"
    alpha_eps: float | None = None
    noise_scale: float | None = None
    #: the linear term's variance ``[G]`` (``None``: a start without one)
    linear: np.ndarray | None = None
    #: the user's kernel (``GPClassifier(kernel=...)``: :meth:`~alphagp.kernel_terms.Term.spec`) the
    #: search fitted, and its logs ``theta`` ``[G, P]``; ``None``: the start's own RBF form
    term: dict | None = None
    theta: np.ndarray | None = None
    #: buffers of the method the start is the kernel search of, as the search left them on its rows
    #: (exact EP's sites: the fit's EP starts there), by name; not kept in model files
    method_state: dict = field(default_factory=dict, compare=False, repr=False)

    def kernel_params(self) -> dict:
        """The classifier kernel's start as ``kernel_params`` (plain lists): the learnt lengthscales,
        and the Dirichlet start's amplitude and noise. The regression's amplitude and noise are in
        the units of the labels (a centred one-hot column has variance at most 1/4), not of the
        classifier's latent functions, so they are not carried over (on digits the regression's
        amplitude, 0.05, as the start gave a held-out NLL of 0.063 against 0.054 with the
        classifier's own start of 1; BENCHMARKS.md)."""
        if self.term is not None:                 # the user's kernel: its parameters and the noise
            return {"theta": self.theta.tolist(), "noise": self.noise.tolist()}
        return {name: getattr(self, name).tolist() for name in STARTS[self.surrogate].carries
                if getattr(self, name) is not None}

    def to_plain(self) -> dict:
        return {"lengthscale": self.lengthscale.tolist(), "amplitude": self.amplitude.tolist(),
                "noise": self.noise.tolist(), "log_marginal_likelihood": self.log_marginal_likelihood,
                "rows": self.rows, "evaluations": self.evaluations, "converged": self.converged,
                "seconds": self.seconds, "surrogate": self.surrogate, "alpha_eps": self.alpha_eps,
                "noise_scale": self.noise_scale, **({} if self.linear is None else {"linear": self.linear.tolist()}),
                **({} if self.term is None else {"term": self.term, "theta": self.theta.tolist()})}

    @classmethod
    def from_plain(cls, values: dict) -> KernelStart:
        arrays = {k: np.asarray(values[k], dtype=np.float64) for k in ("lengthscale", "amplitude", "noise")}
        surrogate = str(values.get("surrogate", "regression"))            # files before the Dirichlet start
        if surrogate not in SURROGATES:
            raise ValueError(f"unknown kernel start surrogate {surrogate!r}")
        optional = {k: None if values.get(k) is None else float(values[k]) for k in ("alpha_eps", "noise_scale")}
        linear = None if values.get("linear") is None else np.asarray(values["linear"], dtype=np.float64)
        term = values.get("term")
        if term is not None:
            term_from_spec(term)                      # a damaged description is refused here
        theta = None if term is None else np.asarray(values["theta"], dtype=np.float64)
        return cls(**arrays, linear=linear, term=term, theta=theta,
                   log_marginal_likelihood=float(values["log_marginal_likelihood"]),
                   rows=int(values["rows"]), evaluations=int(values["evaluations"]),
                   converged=bool(values["converged"]), seconds=float(values["seconds"]), surrogate=surrogate,
                   **optional)


def centred_one_hot(y_idx: np.ndarray, n_classes: int) -> np.ndarray:
    """``[n, C]`` the one-hot encoding of class indices ``y_idx`` ``[n]``, each column centred."""
    Y = np.zeros((len(y_idx), n_classes))
    Y[np.arange(len(y_idx)), y_idx] = 1.0
    return Y - Y.mean(0)


def log_marginal_likelihood(theta: torch.Tensor, X: torch.Tensor, Y: torch.Tensor,
                            weight: torch.Tensor | None = None) -> torch.Tensor:
    """The surrogate's log marginal likelihood (module docstring), summed over the C columns.

    ``theta`` ``[G, D + 2]``: per kernel group, log amplitude, the D log lengthscales and log noise
    (scikit-learn's ``ConstantKernel * RBF + WhiteKernel`` ``theta`` order); ``X`` ``[n, D]``;
    ``Y`` ``[n, C]``, with G = 1 (one kernel for every column) or G = C (column c on kernel c);
    ``weight`` ``[n]`` positive row weights or ``None``. Returns a scalar."""
    n, C = Y.shape
    log_amplitude, log_lengthscale, log_noise = theta[:, 0], theta[:, 1:-1], theta[:, -1]
    scaled = X[None] / log_lengthscale.exp()[:, None, :]                          # [G, n, D]
    sq = scaled.square().sum(-1)
    distance = (sq[:, :, None] + sq[:, None, :] - 2 * scaled @ scaled.transpose(-1, -2)).clamp_min(0)
    noise = log_noise.exp()[:, None] * (torch.ones(n, dtype=X.dtype) if weight is None else 1.0 / weight)  # [G, n]
    K = log_amplitude.exp()[:, None, None] * torch.exp(-0.5 * distance) + torch.diag_embed(noise)
    L = stable_cholesky(K)
    targets = Y.T[:, :, None] if theta.shape[0] == C else Y[None]                  # [G, n, C/G]
    alpha = torch.cholesky_solve(targets, L)
    log_det = 2 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)           # [G]
    per_group = targets.shape[-1]
    return (-0.5 * (targets * alpha).sum() - 0.5 * per_group * log_det.sum()
            - 0.5 * n * C * math.log(2 * math.pi))


def dirichlet_log_marginal_likelihood(theta: torch.Tensor, X: torch.Tensor, y_idx: torch.Tensor, n_classes: int,
                                      alpha_eps: float, noise_scale: float = 1.0,
                                      weight: torch.Tensor | None = None, term: Term | None = None) -> torch.Tensor:
    """The Dirichlet surrogate's log marginal likelihood at its profiled means (module docstring),
    summed over the C columns: ``theta`` ``[1, P]`` the logs of the shared kernel's parameters, the
    covariance ``term`` (:mod:`alphagp.kernel_terms`; default ``RBF("ard")``: the log amplitude and
    the D log lengthscales) with :data:`DIRICHLET_JITTER` on the diagonal (:meth:`~alphagp.kernel_terms.Term.jittered`), rows
    ``X`` ``[n, D]`` with class indices ``y_idx`` ``[n]`` in ``range(n_classes)``, sorted by class,
    and positive row weights ``weight`` ``[n]`` or ``None``."""
    term = RBF("ard") if term is None else term
    labels = transformed_labels(alpha_eps)
    counts = torch.bincount(y_idx, minlength=n_classes).tolist()
    K = term.jittered(theta[0], X, DIRICHLET_JITTER)
    w = torch.ones(len(X), dtype=X.dtype) if weight is None else weight
    own = torch.nn.functional.one_hot(y_idx, n_classes).T.bool()
    T = torch.where(own, torch.tensor(labels["t_own"], dtype=X.dtype), torch.tensor(labels["t_other"], dtype=X.dtype))
    levels = weighted_noise(noise_scale * torch.tensor([labels["s_other"], labels["s_own"]], dtype=X.dtype)[:, None],
                            w, noise_scale)
    return exact_log_evidence(K, levels[0], levels[1], T, counts)


def _bounds(n_features: int) -> list[tuple[float, float]]:
    """The regression's bounds: log amplitude, the log lengthscales and log noise."""
    logs = [tuple(math.log(b) for b in bounds) for bounds in (AMPLITUDE_BOUNDS, LENGTHSCALE_BOUNDS, NOISE_BOUNDS)]
    return [logs[0], *[logs[1]] * n_features, logs[2]]


def _term_values(term: Term, theta: np.ndarray, n_features: int) -> dict:
    """A start's fields for the kernel ``term`` at logs ``theta`` ``[G, P]``: its scale as amplitude,
    its first RBF part's lengthscales ``[G, D]`` (``[G, 0]`` without one), and the term and theta."""
    rows = [term.lengthscale_values(t, n_features) for t in theta]
    lengthscale = np.stack([np.zeros(0) if r is None else r for r in rows])
    amplitude = np.array([float(term.variance(torch.as_tensor(t), n_features)) for t in theta])
    return {"lengthscale": lengthscale, "amplitude": amplitude, "term": term.spec(), "theta": np.asarray(theta)}


def fit_kernel_start(X: np.ndarray, y_idx: np.ndarray, n_classes: int, *, surrogate: str = "regression",
                     shared: bool = True, **settings) -> KernelStart:
    """Type-II maximum likelihood of the start ``surrogate`` (module docstring; a name of
    :data:`STARTS`) on standardised features ``X`` ``[N, D]`` with class indices ``y_idx`` ``[N]`` in
    ``range(n_classes)``: its registered search with ``settings`` (``weight`` ``[N]``, ``rng``,
    ``max_rows``, ``initial_lengthscale``, ``max_iterations``, ``max_seconds`` and the start's own,
    :meth:`StartSpec.settings`). ``shared=False`` (a kernel per class) where the start has that form.

    Raises ``FloatingPointError`` when the search ends at a non-finite value."""
    if surrogate not in STARTS:
        raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")
    spec = STARTS[surrogate]
    if not shared and not spec.per_class:
        raise ValueError(f"the {surrogate} start fits one kernel for all classes (shared=True)")
    return spec.search(X, y_idx, n_classes, surrogate=surrogate, shared=shared, **settings)


def _weights_dtype(weight: np.ndarray, noise_scale: float, alpha_eps: float, search_dtype: torch.dtype) -> torch.dtype:
    """``search_dtype``, or float64 where the Dirichlet surrogate's label noise over the smallest of
    the row weights ``weight`` ``[n]`` would pass ``search_dtype``'s largest number (or a weight
    would round to 0 in it): the start then searches at the fit's precision instead of refusing
    weights the fit itself takes."""
    largest_noise = noise_scale * transformed_labels(alpha_eps)["s_other"]
    limit = torch.finfo(search_dtype)
    smallest = float(weight.min()) if weight.size else 1.0
    return torch.float64 if smallest < limit.tiny or largest_noise / smallest > limit.max / 1e3 else search_dtype


def _subsample(n: int, max_rows: int, rng: np.random.Generator | None) -> np.ndarray:
    """At most ``max_rows`` of the ``n`` rows, drawn by ``rng`` (default seed 0) without
    replacement, in increasing order."""
    rng = np.random.default_rng(0) if rng is None else rng
    return np.sort(rng.choice(n, size=max_rows, replace=False)) if n > max_rows else np.arange(n)


def _lbfgsb(objective, start: np.ndarray, bounds: list, groups: int, *, max_iterations: int, tolerance: float,
            max_seconds: float | None, started: float, surrogate: str):
    """scipy's L-BFGS-B from ``start`` (clipped to ``bounds``, one copy per of ``groups`` kernels) on
    ``objective`` (its value and gradient), stopping at a relative change of ``tolerance``, after
    ``max_iterations`` or at the first iteration past ``max_seconds`` since ``started``; a non-finite
    end is a ``FloatingPointError`` naming the ``surrogate``."""
    start = np.clip(start, [b[0] for b in bounds], [b[1] for b in bounds])

    def out_of_time(_point) -> None:
        if max_seconds is not None and time.perf_counter() - started > max_seconds:
            raise StopIteration

    result = minimize(objective, np.tile(start, groups), jac=True, method="L-BFGS-B", bounds=bounds * groups,
                      options={"maxiter": max_iterations, "ftol": tolerance}, callback=out_of_time)
    if not np.isfinite(result.fun):
        raise FloatingPointError(f"the kernel start's {surrogate} surrogate ended at a non-finite marginal "
                                 "likelihood; use kernel_init='fixed'")
    return result


def _weight_total(weight: np.ndarray | None, rows: np.ndarray) -> float:
    """The rows' count, or their total weight: the objective is taken per row (an integer weight is
    the row repeated) and class."""
    return float(len(rows) if weight is None else np.asarray(weight, dtype=np.float64)[rows].sum())


def _regression_search(X, y_idx: np.ndarray, n_classes: int, *, surrogate: str, shared: bool = True,
                       weight: np.ndarray | None = None, max_rows: int = MAX_ROWS,
                       rng: np.random.Generator | None = None, initial_lengthscale: float | None = None,
                       max_iterations: int = MAX_ITERATIONS, max_seconds: float | None = None,
                       tolerance: float = TOLERANCE) -> KernelStart:
    """The regression's search (module docstring) on at most ``max_rows`` rows of ``X``, drawn by
    ``rng`` without replacement, with positive row weights ``weight`` ``[N]`` or ``None`` (their
    scale is its noise's: divided by their mean), one kernel per class unless ``shared``. Starts
    from lengthscale ``initial_lengthscale`` (default sqrt(D), the fixed start of the classifiers),
    the columns' mean variance as amplitude and a tenth of it as noise; L-BFGS-B as
    :func:`_lbfgsb`, keeping the best point so far."""
    started = time.perf_counter()
    n, d = X.shape
    rows = _subsample(n, max_rows, rng)
    labels = np.asarray(y_idx)[rows]
    Xs = torch.as_tensor(np.asarray(X[rows], dtype=np.float64), dtype=torch.float64)
    Y = torch.as_tensor(centred_one_hot(labels, n_classes), dtype=torch.float64)
    w = None
    if weight is not None:
        w = np.asarray(weight, dtype=np.float64)[rows]
        w = torch.as_tensor(w / w.mean(), dtype=torch.float64)   # its noise is learnt, and takes the weights' scale
    groups = 1 if shared else n_classes
    lengthscale = math.sqrt(d) if initial_lengthscale is None else float(initial_lengthscale)
    variance = float(Y.var(0).mean()) or 1.0
    start = np.concatenate([[math.log(variance)], np.full(d, math.log(lengthscale)), [math.log(0.1 * variance)]])
    bounds = _bounds(d)
    width = len(bounds)
    scale = _weight_total(weight, rows) * n_classes

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = torch.as_tensor(flat.reshape(groups, width), dtype=torch.float64).requires_grad_(True)
        value = -log_marginal_likelihood(theta, Xs, Y, w) / scale
        (grad,) = torch.autograd.grad(value, theta)
        return float(value.detach()), grad.double().numpy().ravel()

    result = _lbfgsb(objective, start, bounds, groups, max_iterations=max_iterations, tolerance=tolerance,
                     max_seconds=max_seconds, started=started, surrogate=surrogate)
    theta = result.x.reshape(groups, width)
    return KernelStart(lengthscale=np.exp(theta[:, 1:1 + d]), amplitude=np.exp(theta[:, 0]),
                       noise=np.exp(theta[:, -1]), log_marginal_likelihood=-float(result.fun) * n_classes,
                       rows=len(rows), evaluations=int(result.nfev), converged=bool(result.success),
                       seconds=time.perf_counter() - started, surrogate=surrogate)


def _dirichlet_search(X, y_idx: np.ndarray, n_classes: int, *, surrogate: str, shared: bool = True,
                      weight: np.ndarray | None = None, max_rows: int = MAX_ROWS,
                      rng: np.random.Generator | None = None, initial_lengthscale: float | None = None,
                      max_iterations: int = MAX_ITERATIONS, max_seconds: float | None = None,
                      alpha_eps: float = 0.01, noise_scale: float = 1.0, tolerance: float = TOLERANCE,
                      search_dtype: torch.dtype = torch.float64, linear: bool = False,
                      term: Term | None = None) -> KernelStart:
    """The Dirichlet GP's search (module docstring; one kernel for all classes: ``shared`` must
    hold) on at most ``max_rows`` rows of ``X``, drawn by ``rng`` without replacement and sorted by
    class (the Woodbury layout), with positive row weights ``weight`` ``[N]`` or ``None`` (the
    label noise is known: they divide it). Starts from lengthscale ``initial_lengthscale`` (default
    sqrt(D)) and the transformed labels' mean variance per column (``alpha_eps``,
    ``noise_scale``) as amplitude; L-BFGS-B as :func:`_lbfgsb`. ``search_dtype``: the float type
    of the evaluations (float32 halves the time and ends at the same point on the study's sets;
    BENCHMARKS.md), float64 where the weights would pass float32's range (:func:`_weights_dtype`).
    ``linear``: the kernel has a linear term, its variance searched from a tenth of the amplitude
    per feature. ``term``: the kernel is the user's composition (:mod:`alphagp.kernel_terms`, every
    variance from the amplitude above) instead of the RBF with a lengthscale per feature (and
    ``linear``)."""
    started = time.perf_counter()
    n, d = X.shape
    rows = _subsample(n, max_rows, rng)
    labels = np.asarray(y_idx)[rows]
    rows = rows[np.argsort(labels, kind="stable")]               # the Woodbury layout: rows sorted by class
    labels = np.asarray(y_idx)[rows]
    if weight is not None and search_dtype != torch.float64:
        search_dtype = _weights_dtype(np.asarray(weight, dtype=np.float64)[rows], noise_scale, alpha_eps, search_dtype)
    Xs = torch.as_tensor(np.asarray(X[rows], dtype=np.float64), dtype=search_dtype)
    w = None if weight is None else torch.as_tensor(np.asarray(weight, dtype=np.float64)[rows], dtype=search_dtype)
    groups = 1 if shared else n_classes
    lengthscale = math.sqrt(d) if initial_lengthscale is None else float(initial_lengthscale)
    gap = transformed_labels(alpha_eps)
    share = np.bincount(labels, weights=None if weight is None else np.asarray(weight, dtype=np.float64)[rows],
                        minlength=n_classes)
    share = share / share.sum()
    variance = (gap["t_own"] - gap["t_other"]) ** 2 * float((share * (1 - share)).mean())   # the targets'
    variance = variance or 1.0
    kernel = term if term is not None else RBF("ard") + Linear() if linear else RBF("ard")
    start = kernel.initial(d, variance, lengthscale)
    bounds = kernel.bounds(d, AMPLITUDE_BOUNDS)
    y_t = torch.as_tensor(labels, dtype=torch.long)
    width = len(bounds)
    scale = _weight_total(weight, rows) * n_classes

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = torch.as_tensor(flat.reshape(groups, width), dtype=search_dtype).requires_grad_(True)
        value = -dirichlet_log_marginal_likelihood(theta, Xs, y_t, n_classes, alpha_eps, noise_scale, w, kernel) / scale
        (grad,) = torch.autograd.grad(value, theta)
        return float(value.detach()), grad.double().numpy().ravel()

    result = _lbfgsb(objective, start, bounds, groups, max_iterations=max_iterations, tolerance=tolerance,
                     max_seconds=max_seconds, started=started, surrogate=surrogate)
    theta = result.x.reshape(groups, width)
    found = _term_values(kernel, theta, d)
    found["noise"] = DIRICHLET_JITTER * found["amplitude"]
    if term is None:                          # the start's own RBF: the ARD kernel's parameters
        found.update(amplitude=np.exp(theta[:, 0]), noise=DIRICHLET_JITTER * np.exp(theta[:, 0]), term=None,
                     theta=None, linear=np.exp(theta[:, -1]) if linear else None)
    return KernelStart(**found, log_marginal_likelihood=-float(result.fun) * n_classes, rows=len(rows),
                       evaluations=int(result.nfev), converged=bool(result.success),
                       seconds=time.perf_counter() - started, surrogate=surrogate, alpha_eps=alpha_eps,
                       noise_scale=noise_scale)


def _exact_ep_search(X, y_idx: np.ndarray, n_classes: int, *, surrogate: str, shared: bool = True,  # noqa: ARG001
                     weight: np.ndarray | None = None, initial_lengthscale: float | None = None,
                     max_iterations: int = MAX_ITERATIONS, max_seconds: float | None = None, lengthscales: str = "one",
                     alpha: float = 1.0, term: Term | None = None, **_rows) -> KernelStart:
    """The exact-EP start (module docstring) on every row of ``X`` (``max_rows`` and ``rng``, in
    ``_rows``, do not apply), one lengthscale or one per feature (``lengthscales``), the power
    ``alpha``; ``term``: the user's kernel (:mod:`alphagp.kernel_terms`) instead of the RBF."""
    from .pair_ep import search_kernel
    Xs = torch.as_tensor(np.asarray(X[np.arange(len(X))], dtype=np.float64))
    w = None if weight is None else torch.as_tensor(np.asarray(weight, dtype=np.float64))
    fit = search_kernel(Xs, torch.as_tensor(np.asarray(y_idx), dtype=torch.long), n_classes, weight=w,
                        ard=lengthscales == "ard", alpha=alpha, initial_lengthscale=initial_lengthscale,
                        max_iterations=max_iterations, max_seconds=max_seconds, term=term)
    found = {} if term is None else {"term": fit.term.spec(), "theta": fit.theta[None]}
    return KernelStart(lengthscale=fit.lengthscale[None], amplitude=np.array([fit.amplitude]),
                       noise=np.array([fit.noise]), **found, log_marginal_likelihood=fit.log_evidence, rows=len(Xs),
                       evaluations=fit.evaluations, converged=fit.converged, seconds=fit.seconds,
                       surrogate="exact_ep", method_state={"site_tau": fit.sites.tau, "site_nu": fit.sites.nu,
                                                           "labels": torch.as_tensor(np.asarray(y_idx), dtype=torch.long),
                                                           "row_weight": torch.ones(len(Xs), dtype=Xs.dtype)
                                                           if w is None else w})


def describe_start(start: KernelStart) -> str:
    """One line for the progress output."""
    ls = start.lengthscale
    kernel = "" if start.term is None else f" of {term_from_spec(start.term)!r}"
    scales = f"lengthscales {ls.min():.3g} to {ls.max():.3g} (median {np.median(ls):.3g}), " if ls.size else ""
    return (f"{STARTS[start.surrogate].summary}{kernel} on {start.rows} rows, {start.evaluations} evaluations "
            f"({'converged' if start.converged else 'iteration limit'}), {start.seconds:.1f} s: {scales}"
            f"amplitude {np.median(start.amplitude):.3g}")


# ---------------------------------------------------------------------- the registry of starts
#: the Dirichlet start: rows, alpha_eps (where the fit's method_params give none), L-BFGS-B's
#: relative tolerance and the evaluations' float type (measured: BENCHMARKS.md, "A GP classifier in
#: closed form")
DIRICHLET_START_ROWS = 1000
DIRICHLET_START_EPS = 1e-3
DIRICHLET_START_TOLERANCE = 1e-6
DIRICHLET_START_DTYPE = torch.float32
#: the RBF-and-linear start's alpha_eps where the fit's method_params give none, chosen on the real
#: tables of issue 79's development panel (benchmarks/closed_form_starts.py, report.py cfstarts;
#: benchmarks/docs/defaults.md, "The closed form's start on real tables")
DIRICHLET_LINEAR_START_EPS = 0.1


def _no_settings(_method_params: Mapping, _alpha: float | None) -> dict:
    return {}


def _dirichlet_settings(method_params: Mapping, _alpha: float | None) -> dict:
    """The fit's ``alpha_eps`` and ``noise_scale`` where its ``method_params`` give them."""
    return {"max_rows": DIRICHLET_START_ROWS, "alpha_eps": float(method_params.get("alpha_eps", DIRICHLET_START_EPS)),
            "noise_scale": float(method_params.get("noise_scale", 1.0)), "tolerance": DIRICHLET_START_TOLERANCE,
            "search_dtype": DIRICHLET_START_DTYPE}


def _dirichlet_linear_settings(method_params: Mapping, alpha: float | None) -> dict:
    """The Dirichlet start's settings with the linear term, its ``alpha_eps`` where the fit's
    ``method_params`` give none :data:`DIRICHLET_LINEAR_START_EPS`."""
    return {**_dirichlet_settings({"alpha_eps": DIRICHLET_LINEAR_START_EPS, **method_params}, alpha), "linear": True}


def _exact_ep_settings(method_params: Mapping, alpha: float | None) -> dict:
    """The fit's ``lengthscales`` and power ``alpha`` (1: EP)."""
    return {"lengthscales": method_params.get("lengthscales", "one"), "alpha": 1.0 if alpha is None else float(alpha)}


@dataclass(frozen=True)
class StartSpec:
    """One kernel start (``kernel_init``): ``summary`` (the progress line's name), its ``search``
    (``(X, y_idx, n_classes, *, surrogate, shared, **settings) -> KernelStart``), its ``settings``
    from a fit's ``method_params`` and ``alpha`` (the search's own keyword arguments), whether a
    selection fits it once per split for every candidate that starts from it (``shared``: its
    settings do not depend on the candidate's), whether it has a kernel per class
    (``per_class``), the kernel parameters it gives the classifier (``carries``) and the start it
    is a form of (``variant_of``: its kernel the type-II maximum likelihood of the same model, so a
    method whose own start that is takes it as its own; ``None``: none) and whether its search
    takes the user's kernel (``kernels``: a ``term`` keyword, :mod:`alphagp.kernel_terms`; a fit
    with ``kernel=`` and a start that does not starts from the kernel's fixed values)."""

    summary: str
    search: Callable[..., KernelStart]
    settings: Callable[[Mapping, float | None], dict]
    shared: bool
    per_class: bool
    carries: tuple[str, ...]
    variant_of: str | None = None
    kernels: bool = False


#: the kernel starts by name (``kernel_init``): a new start is its search and one line here
STARTS: dict[str, StartSpec] = {
    "regression": StartSpec("regression of the labels", _regression_search, _no_settings, shared=True,
                            per_class=True, carries=("lengthscale",)),
    "dirichlet": StartSpec("Dirichlet GP", _dirichlet_search, _dirichlet_settings, shared=True, per_class=False,
                           carries=("lengthscale", "amplitude", "noise"), kernels=True),
    "dirichlet_linear": StartSpec("Dirichlet GP, RBF and linear", _dirichlet_search, _dirichlet_linear_settings,
                                  shared=True, per_class=False, carries=("lengthscale", "amplitude", "noise", "linear"),
                                  variant_of="dirichlet"),
    "exact_ep": StartSpec("exact EP", _exact_ep_search, _exact_ep_settings, shared=False, per_class=False,
                          carries=("lengthscale", "amplitude", "noise"), kernels=True),
}
#: the names of :data:`STARTS` (the choices of ``kernel_init`` beside ``"auto"`` and ``"fixed"``)
SURROGATES = tuple(STARTS)
#: the starts a selection shares among its candidates
SHARED_STARTS = frozenset(name for name, spec in STARTS.items() if spec.shared)
