"""scikit-learn estimator for sparse multi-class GP classification: every method of the registry."""

from __future__ import annotations

import contextlib
import os
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..data.streaming import StandardizedRows
from ..distributed import broadcast_state, ensure_process_group
from ..inducing import init_inducing_points
from ..kernels import ARDKernel
from ..labels import classes_from_plain, classes_to_plain, encode_known_labels, encode_labels, plain
from ..methods import (
    METHODS,
    build_method,
    check_method_params,
    method_config,
    method_parameters,
    method_spec,
    method_table,
)
from ..metrics import all_metrics
from ..numerics import CholeskyError
from ..parallel import torch_threads
from .alpha_selection import select_alpha
from .base import DTYPES, GPEstimatorBase

DEFAULT_BATCH_LEARNING_RATE = 1.0   # sign-adaptive rule, batch training (BENCHMARKS.md)
DEFAULT_ADAM_LEARNING_RATE = 1e-2   # Adam, mini-batch training
MODEL_KIND = "alphagp.GPClassifier"
_KERNEL_PARAMS = ("lengthscale", "amplitude", "noise")
# Feature scale against the kernel's: warn when the typical distance between two points is this
# many lengthscales (or this fraction of one) with ``standardize=False``.
_FAR_SCALE = 100.0


def _positive_finite(name: str, value, allowed_shapes: list[tuple]) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape not in allowed_shapes:
        shapes = " or ".join(str(list(s)) for s in allowed_shapes)
        raise ValueError(f"kernel_params[{name!r}] must have shape {shapes}, got {list(arr.shape)}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"kernel_params[{name!r}] must be finite and positive, got {arr.tolist()}")
    return arr


def _registered_config(name: str, config: dict) -> dict:
    """A method's stored arguments as :func:`build_method` takes them. Files written before the
    likelihood registry (VI's) name the likelihood, which must be the registered one, and carry
    Monte Carlo arguments that robust-max VI never used; both are dropped."""
    if "likelihood" not in config:
        return config
    if config["likelihood"] != method_spec(name).likelihood:
        raise ValueError(f"method {name!r} has the {method_spec(name).likelihood!r} likelihood; "
                         f"the file names {config['likelihood']!r}")
    taken = method_parameters(name)
    return {k: v for k, v in config.items() if k != "likelihood" and (k in taken or k not in ("n_mc_samples", "seed"))}


class GPClassifier(ClassifierMixin, GPEstimatorBase):
    """Sparse multi-class Gaussian-process classifier: EP, power EP, and the alpha-divergence family.

    One latent function per class with an ARD squared-exponential kernel (amplitude, one
    lengthscale per feature, additive noise) and M inducing points per class. The arg-max
    labelling rule gives the likelihood: the EP paper's Heaviside likelihood with the
    product-of-Phi approximation (``ep``, ``sep``; Villacampa-Calvo & Hernandez-Lobato, ICML
    2017) or the robust-max likelihood with labelling-error probability ``epsilon`` (the other
    methods; alpha paper eq. 2).

    Parameters
    ----------
    method : str, one of ``alphagp methods``
        {methods}
        The EP methods (ep, sep, rep, pep, gfitc) refine q by damped closed-form
        updates; apep, arpep, rpapep and the vi methods fit q by gradients (with Adam, in batch
        training too).
    n_inducing : int
        Inducing points per class, clipped to the number of training rows with a warning.
    alpha : float in (0, 1], "auto" or None
        Power of the alpha-divergence; 1 is EP. ``None``: the method's default (1 for ep, sep
        and rep; 0.5 for pep, apep, arpep and rpapep, the alpha paper's recommendation). ``rep``
        and ``gfitc`` accept only 1 and ``vi`` (alpha -> 0) none. ``"auto"``: the value of
        ``alpha_grid`` with the best mean held-out log-likelihood in stratified ``cv``-fold
        cross-validation on the training data (the deep-GP paper's advice); the model is then
        refitted on all of it. The scores are in ``alpha_scores_``, the choice in ``alpha_``.
    alpha_grid : array-like or None
        Candidates for ``alpha="auto"`` (default: 0.001, 0.25, 0.5, 0.75, 1).
    cv : int
        Folds of the cross-validation of ``alpha="auto"``.
    method_params : dict or None
        Further arguments of the method (see ``alphagp methods`` and each method's class), e.g.
        ``{"ep_tol": 1e-4}`` for GFITC.
    epsilon : float in [0, 1) or None
        Labelling-error probability of the robust-max likelihood (``None``: 1e-3, the papers'
        value). ``ep`` and ``sep`` use the Heaviside likelihood and accept none; ``vi`` needs
        epsilon > 0.
    batch_size : int or None
        ``None`` trains on all data at once; an int uses mini-batches of that size and Adam,
        with the N/|B| scaled gradient.
    max_iter : int
        Epochs (passes over the data; one epoch is one iteration in batch training).
    damping : float in (0, 1] or None
        EP damping rho; ``None`` means 0.5 in batch training and 1.0 with mini-batches. Only
        for the EP-type methods.
    learning_rate : float or None
        Initial learning rate; ``None`` means 1.0 for the sign-adaptive rule of batch training
        with the EP methods (it halves the rate on every sign flip, so a large start is safe;
        chosen by the final log Z_q on five UCI sets among 0.01 to 1.0, see BENCHMARKS.md) and
        0.01 for Adam (mini-batches, and the methods that fit q by gradients).
    learning_rate_decay : float in (0, 1]
        Mini-batch training: Adam's rate is multiplied by this factor after every epoch.
        1 keeps it constant; batch training accepts only 1.
    shared_hyperparameters : bool
        One kernel and one set of M inducing inputs for all classes (as GPflow's multi-class
        SVGP): K_uu, its factor and K_uf are computed once per step instead of C times, so a
        step with many features (MNIST) is several times cheaper; q stays one Gaussian per class.
        ``inducing_points`` of shape ``[C, M, D]`` keep one set per class with the shared kernel.
    inducing_init : {"random", "kmeans++"}
        Initial inducing inputs: random training points (the papers) or k-means++ seeding.
    inducing_points : array ``[M, D]`` or ``[C, M, D]`` or None
        Explicit initial inducing inputs in the units of ``X``.
    kernel_params : dict or None
        Initial ``lengthscale``, ``amplitude``, ``noise`` (scalars or arrays). Lengthscales
        refer to standardised features when ``standardize=True``. Defaults: sqrt(D), 1, 0.1.
    optimize_hyperparameters : bool
        Learn the kernel hyper-parameters (like scikit-learn's ``optimizer=None`` when this and
        ``optimize_inducing`` are False: only the approximation is fitted).
    optimize_inducing : bool or "auto"
        Learn the inducing inputs. ``"auto"`` learns them except with mini-batches for the
        methods with per-point sites (``ep``, ``rep``, ``pep``), whose stored sites go stale
        when the inducing inputs move between refreshes and then diverge (DESIGN.md,
        "Per-point sites on mini-batches"); ``True`` there learns them anyway, with a warning.
        The choice made is ``optimize_inducing_``.
    standardize : bool
        Scale features to zero mean and unit variance before training.
    tol : float or None
        Early stopping on the training objective log Z_q (see :class:`~alphagp.training.Trainer`).
    n_iter_no_change : int
        Patience of early stopping.
    checkpoint : str or None
        Checkpoint file (data only: safetensors plus JSON): written during training, and a fit
        started with an existing one resumes from it, with a
        :class:`~alphagp.training.CheckpointResumed` warning naming the epoch.
        Schedule settings (``max_iter``, the learning rate and its decay, ``damping``, ``tol``,
        ``n_iter_no_change``) may differ when resuming; any other setting, or other training
        data, raises :class:`~alphagp.training.CheckpointMismatchError`.
    dtype : {"float64", "float32"}
    n_jobs : int or None
        Threads PyTorch uses inside ``fit`` and ``predict`` (restored afterwards), as in
        scikit-learn: ``None`` means 1, ``-1`` all cores. One thread does not slow down when
        other work runs on the machine; more threads help on an idle machine (BENCHMARKS.md).
    device : str, torch.device or None
        Where the model's tensors live and its arithmetic runs: ``"cpu"`` (``None``), ``"cuda"``,
        ``"cuda:1"``, ... Data are moved there one batch at a time; predictions come back as
        NumPy arrays. A fit resumed from a checkpoint, or a loaded model, may use another device.
    distributed : bool
        Data-parallel training across the processes of a ``torch.distributed`` group (started
        with ``torchrun --nproc-per-node=2 fit.py``; the group is initialised from torchrun's
        environment if the script has not done so). Every process calls ``fit`` with the same
        data and settings; each computes its share of every mini-batch and reads only those
        rows; every process ends with the same model, equal to a one-process fit with the same
        batch size and seed up to rounding. For ``sep`` and the gradient-fitted methods (``vi``
        without natural gradients, ``arpep``, ``apep``, ``rpapep``).
    verbose : bool
        Progress: a bar on a terminal, a line every few seconds when output goes to a file.
    random_state : int or None

    Attributes
    ----------
    classes_ : array of the class labels.
    n_features_in_ : int
    model_ : the fitted method (a :class:`~alphagp.methods.SparseGPMethod`).
    alpha_ : float, the alpha used (``alpha="auto"``: the one chosen by cross-validation).
    alpha_scores_ : dict alpha -> mean held-out log-likelihood per point (``alpha="auto"`` only).
    history_ : list of per-epoch dicts (objective, train_seconds, ...).
    optimize_inducing_ : bool, whether the inducing inputs were learnt (``optimize_inducing="auto"``
        resolved).
    n_skipped_updates_ : int, EP site updates refused because the new site would have had
        negative precision or a non-finite value.
    n_improper_cavities_ : int, EP site updates refused because the cavity (q without the
        site) had non-positive precision. Both 0 means every update was a proper EP update.
    diagnostics_ : dict, the method's diagnostics: the two counters above and, for ``gibbs``,
        the effective sample sizes of the chain (``ess_min``, ``ess_median``,
        ``ess_log_likelihood``).
    """

    _parameter_constraints: ClassVar[dict] = {
        "method": [str],          # a registered name, checked at fit against the registry of that moment
        "n_inducing": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"}), None],
        "alpha_grid": ["array-like", None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "method_params": [dict, None],
        "epsilon": [Interval(Real, 0, 1, closed="left"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "damping": [Interval(Real, 0, 1, closed="right"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "learning_rate_decay": [Interval(Real, 0, 1, closed="right")],
        "shared_hyperparameters": ["boolean"],
        "inducing_init": [StrOptions({"random", "kmeans++"})],
        "inducing_points": ["array-like", None],
        "kernel_params": [dict, None],
        "optimize_hyperparameters": ["boolean"],
        "optimize_inducing": ["boolean", StrOptions({"auto"})],
        "standardize": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "checkpoint": [str, os.PathLike, None],
        "dtype": [StrOptions(set(DTYPES))],
        "n_jobs": [Integral, None],
        "device": [str, torch.device, None],
        "distributed": ["boolean"],
        "verbose": ["verbose"],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    MODEL_KIND = MODEL_KIND
    SCHEDULE_PARAMS = ("max_iter", "learning_rate", "learning_rate_decay", "damping", "tol", "n_iter_no_change",
                       "checkpoint", "verbose", "n_jobs", "device", "distributed")

    def __init__(self, method="ep", n_inducing=50, alpha=None, epsilon=None, alpha_grid=None, cv=3,
                 method_params=None, batch_size=None, max_iter=250,
                 damping=None, learning_rate=None, learning_rate_decay=1.0, shared_hyperparameters=False,
                 inducing_init="random", inducing_points=None, kernel_params=None,
                 optimize_hyperparameters=True, optimize_inducing="auto", standardize=True,
                 tol=None, n_iter_no_change=10, checkpoint=None, dtype="float64", n_jobs=None,
                 device=None, distributed=False, verbose=False, random_state=None):
        self.method = method
        self.n_inducing = n_inducing
        self.alpha = alpha
        self.epsilon = epsilon
        self.alpha_grid = alpha_grid
        self.cv = cv
        self.method_params = method_params
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.damping = damping
        self.learning_rate = learning_rate
        self.learning_rate_decay = learning_rate_decay
        self.shared_hyperparameters = shared_hyperparameters
        self.inducing_init = inducing_init
        self.inducing_points = inducing_points
        self.kernel_params = kernel_params
        self.optimize_hyperparameters = optimize_hyperparameters
        self.optimize_inducing = optimize_inducing
        self.standardize = standardize
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.checkpoint = checkpoint
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.device = device
        self.distributed = distributed
        self.verbose = verbose
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _device(self) -> torch.device:
        """``device`` as a ``torch.device`` (``None``: the CPU); a clear error if it is not usable."""
        if self.device is None:
            return torch.device("cpu")
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as err:
            raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', got {self.device!r}") from err
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} was asked for but this PyTorch build sees no CUDA device "
                             f"(torch {torch.__version__}); use device='cpu'")
        return device

    def _check_params(self, n_features: int, n_classes: int) -> None:
        """The parameter checks that need the data's shape (the rest is ``_validate_params``)."""
        self._device()
        if self.method not in METHODS:
            raise InvalidParameterError(f"The 'method' parameter of GPClassifier must be a str among {sorted(METHODS)}. "
                                        f"Got {self.method!r} instead.")
        check_method_params(self.method, self.method_params, reserved=("alpha", "epsilon", "damping"))
        if self.n_jobs == 0:
            raise ValueError("n_jobs must not be 0; use None (1 thread), a positive count or -1 (all cores)")
        unknown = set(self.kernel_params or {}) - set(_KERNEL_PARAMS)
        if unknown:
            raise ValueError(f"kernel_params has unknown keys {sorted(unknown)}; allowed are {list(_KERNEL_PARAMS)}")
        groups = 1 if self.shared_hyperparameters else n_classes
        kp = self.kernel_params or {}
        if "lengthscale" in kp:
            _positive_finite("lengthscale", kp["lengthscale"], [(), (n_features,), (1, n_features),
                                                                (groups, n_features)])
        for name in ("amplitude", "noise"):
            if name in kp:
                _positive_finite(name, kp[name], [(), (1,), (groups,)])

    def _validate(self, X, y="no_validation", reset=False):
        """scikit-learn's validation, with a clearer message for non-numeric features."""
        try:
            return validate_data(self, X, y, reset=reset, dtype=np.float64, ensure_all_finite=True)
        except ValueError as err:
            if "could not convert" in str(err):
                raise ValueError(f"GPClassifier needs numeric features: {err}") from err
            raise

    def _encode(self, y) -> np.ndarray:
        """Class indices of ``y``; raises ``ValueError`` naming labels not seen in ``fit``."""
        return encode_known_labels(y, self.classes_)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, callbacks=None):
        """Fit the classifier.

        Args:
            X: ``[N, D]`` numeric features (NumPy array, memory-map or array-like).
            y: ``[N]`` labels of any type with at least two distinct values.
            callbacks: optional list of ``cb(state)`` called after each epoch (see
                :class:`~alphagp.training.MetricsRecorder`).
        """
        self._validate_params()
        X, y = self._validate(X, y, reset=True)
        self.classes_, y_idx = encode_labels(y)
        if len(self.classes_) < 2:
            raise ValueError(f"GPClassifier needs at least 2 classes in y; got only one class, "
                             f"{self.classes_.tolist()}")
        n, d = X.shape
        C = len(self.classes_)
        self._check_params(d, C)
        if self.alpha == "auto":
            self.alpha_, self.alpha_scores_ = select_alpha(self, X, y)
        with torch_threads(self.n_jobs), self._explain_numerical_failure():
            self._fit(X, y_idx, n, d, C, callbacks)
        self.alpha_ = getattr(self.model_, "alpha", None)
        return self

    @contextlib.contextmanager
    def _explain_numerical_failure(self):
        """Adds the likely cause to a failed factorisation or a non-finite objective when it is
        float32 (about 7 significant digits), above all with unstandardised features."""
        try:
            yield
        except (CholeskyError, FloatingPointError) as err:
            if self.dtype != "float32":
                raise
            cause = ("float32 with unstandardised features: kernel matrices of features far from unit "
                     "scale lose their positive definiteness in 7 digits. Use standardize=True, or dtype='float64'"
                     if not self.standardize else "float32: try dtype='float64'")
            raise type(err)(f"{err} Likely cause: {cause}.") from err

    def _fit(self, X, y_idx, n, d, C, callbacks) -> None:
        dtype = DTYPES[self.dtype]
        Xs = self._standardize(X, self.standardize)
        rng = np.random.default_rng(self.random_state)
        Z = self._initial_inducing(Xs, C, n, rng)
        kernel = ARDKernel(C, d, shared=self.shared_hyperparameters, dtype=dtype,
                           **{k: np.asarray(v, dtype=np.float64) for k, v in (self.kernel_params or {}).items()})
        if not self.standardize:
            self._warn_if_far_from_kernel_scale(X, kernel)
        kernel.requires_grad_(bool(self.optimize_hyperparameters))
        mini = self.batch_size is not None and self.batch_size < n
        method_cls = method_spec(self.method).cls
        if mini and not method_cls.CAPABILITIES.mini_batches:
            raise ValueError(f"method={self.method!r} is batch only: its objective is not a sum over data "
                             f"points, so it cannot use mini-batches; use batch_size=None or another method")
        damping = self.damping
        if damping is None and method_cls.CAPABILITIES.damping:
            damping = 1.0 if mini else 0.5
        alpha = self.alpha_ if self.alpha == "auto" else self.alpha
        self.model_ = build_method(self.method, torch.as_tensor(Z, dtype=dtype), kernel, n_data=n,
                                   alpha=alpha, epsilon=self.epsilon, damping=damping, **(self.method_params or {}))
        device = self._device()
        self.model_.to(device)
        seed = int(rng.integers(2**31 - 1))
        if self.distributed:  # the first process's random start and batch order for all
            ensure_process_group(device)
            broadcast_state(self.model_)
            seed_t = torch.tensor([seed], device=device)
            torch.distributed.broadcast(seed_t, 0)
            seed = int(seed_t)
        self.optimize_inducing_ = self._learn_inducing(mini)
        self.model_.inducing_points.requires_grad_(self.optimize_inducing_)
        optimizer = "adam" if mini else self.model_.capabilities.batch_optimizer
        learning_rate = self.learning_rate
        if learning_rate is None:
            learning_rate = DEFAULT_ADAM_LEARNING_RATE if optimizer == "adam" else DEFAULT_BATCH_LEARNING_RATE
        self._train(self.model_, Xs, y_idx, optimizer=optimizer, learning_rate=learning_rate, callbacks=callbacks,
                    seed=seed, distributed=bool(self.distributed))
        self.model_.after_fit(Xs, y_idx)
        self._set_diagnostics()

    def _learn_inducing(self, mini: bool) -> bool:
        """Resolve ``optimize_inducing`` for the built model; warn where it is known to diverge."""
        safe = not mini or self.model_.capabilities.inducing_on_mini_batches
        if self.optimize_inducing == "auto":
            return safe
        if self.optimize_inducing and not safe:
            warnings.warn(f"method={self.method!r} keeps per-point sites, which go stale when the inducing "
                          "inputs move during mini-batch training; such fits have diverged (BENCHMARKS.md). "
                          "optimize_inducing='auto' keeps them fixed here; method='sep' learns them safely",
                          UserWarning, stacklevel=4)
        return bool(self.optimize_inducing)

    def _set_diagnostics(self) -> None:
        self.diagnostics_ = self.model_.diagnostics()
        self.n_skipped_updates_ = self.diagnostics_["n_skipped_updates"]
        self.n_improper_cavities_ = self.diagnostics_["n_improper_cavities"]

    def _warn_if_far_from_kernel_scale(self, X, kernel: ARDKernel) -> None:
        """Warn when unstandardised features put typical points very many (or a tiny fraction of)
        lengthscales apart: the kernel matrix is then near the identity (or all ones) and the fit
        learns little."""
        rows = np.unique(np.linspace(0, len(X) - 1, min(len(X), 10_000)).astype(np.int64))
        var = np.asarray(X[rows], dtype=np.float64).var(0)
        ls2 = kernel.lengthscale.detach().double().square().numpy()            # [G, D]
        distance = float(np.sqrt(np.median(2.0 * (var / ls2).sum(-1))))
        if not 1.0 / _FAR_SCALE <= distance <= _FAR_SCALE:
            warnings.warn(f"with standardize=False, two typical training points lie {distance:.3g} initial "
                          "lengthscales apart; the kernel sees the data at the wrong scale and the fit may "
                          "learn little. Use standardize=True or set kernel_params['lengthscale'] to the "
                          "features' scale", UserWarning, stacklevel=4)

    def _initial_inducing(self, Xs, C, n, rng) -> np.ndarray:
        if self.inducing_points is not None:
            Z = np.asarray(self.inducing_points, dtype=np.float64)
            if Z.ndim == 2:
                Z = Z[None] if self.shared_hyperparameters else np.broadcast_to(Z, (C, *Z.shape))
            if Z.ndim != 3 or Z.shape[0] not in (1, C) or Z.shape[2] != Xs.shape[1] or (
                    Z.shape[0] == 1 and not self.shared_hyperparameters):
                raise ValueError(f"inducing_points must have shape [M, {Xs.shape[1]}] or "
                                 f"[{C}, M, {Xs.shape[1]}], got {Z.shape}")
            if not np.all(np.isfinite(Z)):
                raise ValueError("inducing_points contain NaN or inf")
            return (Z - self.mean_) / self.scale_
        return init_inducing_points(Xs, C, self._inducing_count(n), self.inducing_init, self.shared_hyperparameters,
                                    rng)

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X, chunk_size: int = 2048) -> np.ndarray:
        """``[N, C]`` class probabilities (columns ordered as ``classes_``)."""
        check_is_fitted(self, "model_")
        X = self._validate(X)
        Xs = StandardizedRows(X, self.mean_, self.scale_)
        dtype = DTYPES[self.dtype]
        with torch_threads(self.n_jobs):
            device = self.model_.inducing_points.device
            out = [self.model_.predict_proba(torch.as_tensor(Xs[i:i + chunk_size], dtype=dtype, device=device))
                   .cpu().numpy() for i in range(0, len(Xs), chunk_size)]
        proba = np.concatenate(out).astype(np.float64)
        if not np.all(np.isfinite(proba)):
            raise FloatingPointError("non-finite predictive probabilities; the fitted model is degenerate")
        return proba

    def predict_log_proba(self, X) -> np.ndarray:
        """``[N, C]`` log class probabilities."""
        return np.log(np.maximum(self.predict_proba(X), 1e-300))

    def predict(self, X) -> np.ndarray:
        """``[N]`` most probable class labels."""
        check_is_fitted(self, "model_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy; raises ``ValueError`` for labels not seen during fit."""
        check_is_fitted(self, "model_")
        self._encode(y)
        return super().score(X, y, sample_weight=sample_weight)

    def evaluate(self, X, y) -> dict[str, float]:
        """Test error, mean negative log-likelihood, expected calibration error and Brier score."""
        return all_metrics(self.predict_proba(X), self._encode(y))

    # ------------------------------------------------------------------ persistence
    def save(self, path, include_training_state: bool = False) -> None:
        """Write the fitted estimator to ``path`` as a data-only file (safetensors plus a JSON header).

        The file holds the estimator's parameters, the classes, the feature standardisation,
        the kernel hyper-parameters, the inducing points, q's natural parameters (everything
        needed to predict), the training history and diagnostics, the library version and a
        format version. Its size does not grow with the number of training rows unless
        ``include_training_state=True``, which also keeps EP's per-point sites (``[N, C, M]``;
        SEP has none), for inspecting them. Opening a file never runs code from it.
        """
        self._write(path, include_training_state=bool(include_training_state))

    def _file_content(self, include_training_state: bool = False) -> dict:
        state = self.model_.state_dict()
        if not include_training_state:
            state = {k: v for k, v in state.items() if k not in self.model_.TRAINING_STATE}
        return {"classes": classes_to_plain(self.classes_),
                "method": {"name": self.method, "config": method_config(self.method, self.model_),
                           "training_state": include_training_state},
                "state": state, "optimize_inducing": bool(self.optimize_inducing_),
                "alpha_scores": {str(k): v for k, v in getattr(self, "alpha_scores_", {}).items()}}

    @classmethod
    def load(cls, path, device=None) -> GPClassifier:
        """Read an estimator written by :meth:`save`, onto ``device`` (``None``: the device it was
        fitted with, which must be available here; ``"cpu"`` loads a GPU-fitted model anywhere).

        Raises :class:`~alphagp.serialization.ModelFileError` (a ``ValueError``) for a file that
        is not an alphagp model, is damaged or truncated, or comes from a newer format version.
        """
        return cls._read(path, **({} if device is None else {"device": plain(device)}))

    def _model_from_file(self, content: dict):
        self.classes_ = classes_from_plain(content["classes"])
        state, method = content["state"], content["method"]
        Z = state["inducing_points"]
        kernel = ARDKernel(len(self.classes_), Z.shape[2], shared=bool(self.shared_hyperparameters), dtype=Z.dtype)
        return build_method(method["name"], Z, kernel, site_storage=method["training_state"],
                            **_registered_config(method["name"], method["config"])), state

    def _restore(self, content: dict) -> None:
        self.model_.to(self._device())
        self.optimize_inducing_ = bool(content.get("optimize_inducing", self.optimize_inducing))
        self.alpha_ = getattr(self.model_, "alpha", None)
        if content.get("alpha_scores"):
            self.alpha_scores_ = {float(k): v for k, v in content["alpha_scores"].items()}
        self._set_diagnostics()


def _method_list(indent: str = "        ") -> str:
    """The registry's methods as docstring lines (``name``: summary; method_params)."""
    import textwrap
    lines = []
    for name, summary, own in method_table():
        text = f"``{name}``: {summary}" + (f" (``method_params``: {own})" if own else "") + "."
        lines += textwrap.wrap(text, 96, initial_indent=indent, subsequent_indent=indent + "    ",
                               break_on_hyphens=False)
    return "\n".join(lines).strip()


GPClassifier.__doc__ = GPClassifier.__doc__.replace("{methods}", _method_list())
