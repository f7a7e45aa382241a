"""scikit-learn estimator for scalable GP classification with EP / SEP (power EP with alpha)."""

from __future__ import annotations

import warnings
from pathlib import Path

import joblib
import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .data.streaming import StandardizedRows, column_mean_std
from .inducing import init_inducing_points
from .kernels import ARDKernel
from .methods import ScalableEP
from .metrics import all_metrics
from .training import Trainer

_METHODS = ("ep", "sep")
_DTYPES = {"float64": torch.float64, "float32": torch.float32}
DEFAULT_BATCH_LEARNING_RATE = 1.0   # sign-adaptive rule, batch training (BENCHMARKS.md)
DEFAULT_ADAM_LEARNING_RATE = 1e-2   # Adam, mini-batch training


class GPClassifier(ClassifierMixin, BaseEstimator):
    """Sparse multi-class Gaussian-process classifier trained by (stochastic) expectation propagation.

    One latent function per class with an ARD squared-exponential kernel (amplitude, one
    lengthscale per feature, additive noise), M inducing points per class, and the Heaviside
    likelihood with the product-of-Phi approximation (Villacampa-Calvo & Hernandez-Lobato,
    ICML 2017). ``alpha < 1`` gives power EP (alpha-divergence minimisation).

    Parameters
    ----------
    method : {"ep", "sep"}
        EP keeps one rank-one factor per (point, class): memory O(N C M). SEP ties them:
        memory O(C M^2), independent of N.
    n_inducing : int
        Inducing points per class, clipped to the number of training rows with a warning.
    alpha : float in (0, 1]
        Power of power EP; 1 is EP.
    batch_size : int or None
        ``None`` trains on all data at once (sign-adaptive learning rate); an int uses
        mini-batches of that size and Adam, with the N/|B| scaled gradient.
    max_iter : int
        Epochs (passes over the data; one epoch is one iteration in batch training).
    damping : float in (0, 1] or None
        EP damping rho; ``None`` means 0.5 in batch training and 1.0 with mini-batches.
    learning_rate : float or None
        Initial learning rate; ``None`` means 1.0 for the sign-adaptive rule of batch training
        (it halves the rate on every sign flip, so a large start is safe; chosen by the final
        log Z_q on five UCI sets among 0.01 to 1.0, see BENCHMARKS.md) and 0.01 for Adam.
    learning_rate_decay : float in (0, 1]
        Mini-batch training: Adam's rate is multiplied by this factor after every epoch.
        1 keeps it constant; batch training accepts only 1.
    shared_hyperparameters : bool
        One kernel (and one set of inducing inputs) for all classes.
    inducing_init : {"random", "kmeans++"}
        Initial inducing inputs: random training points (the papers) or k-means++ seeding.
    inducing_points : array ``[M, D]`` or ``[C, M, D]`` or None
        Explicit initial inducing inputs in the units of ``X``.
    kernel_params : dict or None
        Initial ``lengthscale``, ``amplitude``, ``noise`` (scalars or arrays). Lengthscales
        refer to standardised features when ``standardize=True``. Defaults: sqrt(D), 1, 0.1.
    optimize_hyperparameters, optimize_inducing : bool
        Learn the kernel hyper-parameters / the inducing inputs (like scikit-learn's
        ``optimizer=None`` when both are False: only the EP approximation is fitted).
    standardize : bool
        Scale features to zero mean and unit variance before training.
    tol : float or None
        Early stopping on the training objective log Z_q (see :class:`~alphagp.training.Trainer`).
    n_iter_no_change : int
        Patience of early stopping.
    checkpoint : str or None
        Checkpoint file: written during training, and a fit started with an existing one resumes.
    dtype : {"float64", "float32"}
    verbose : bool
        Progress bar.
    random_state : int or None

    Attributes
    ----------
    classes_ : array of the class labels.
    n_features_in_ : int
    model_ : the fitted :class:`~alphagp.methods.ScalableEP`.
    history_ : list of per-epoch dicts (objective, train_seconds, ...).
    n_skipped_updates_ : int, EP site updates skipped by the positivity guards.
    """

    def __init__(self, method="ep", n_inducing=50, alpha=1.0, batch_size=None, max_iter=250,
                 damping=None, learning_rate=None, learning_rate_decay=1.0, shared_hyperparameters=False,
                 inducing_init="random", inducing_points=None, kernel_params=None,
                 optimize_hyperparameters=True, optimize_inducing=True, standardize=True,
                 tol=None, n_iter_no_change=10, checkpoint=None, dtype="float64",
                 verbose=False, random_state=None):
        self.method = method
        self.n_inducing = n_inducing
        self.alpha = alpha
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
        self.verbose = verbose
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {tuple(_DTYPES)}, got {self.dtype!r}")
        if not (isinstance(self.n_inducing, (int, np.integer)) and self.n_inducing >= 1):
            raise ValueError(f"n_inducing must be a positive integer, got {self.n_inducing!r}")
        if self.batch_size is not None and not (isinstance(self.batch_size, (int, np.integer))
                                                and self.batch_size >= 1):
            raise ValueError(f"batch_size must be None or a positive integer, got {self.batch_size!r}")
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")

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
        y = np.asarray(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"labels {unseen.tolist()} were not seen during fit; known classes are "
                             f"{self.classes_.tolist()}")
        return np.searchsorted(self.classes_, y)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, callbacks=None):
        """Fit the classifier.

        Args:
            X: ``[N, D]`` numeric features (NumPy array, memory-map or array-like).
            y: ``[N]`` labels of any type with at least two distinct values.
            callbacks: optional list of ``cb(state)`` called after each epoch (see
                :class:`~alphagp.training.MetricsRecorder`).
        """
        self._check_params()
        X, y = self._validate(X, y, reset=True)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        self.classes_ = encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"GPClassifier needs at least 2 classes in y; got only one class, "
                             f"{self.classes_.tolist()}")
        y_idx = encoder.transform(y)
        n, d = X.shape
        C = len(self.classes_)
        dtype = _DTYPES[self.dtype]
        mean, scale = column_mean_std(X) if self.standardize else (np.zeros(d), np.ones(d))
        self.mean_, self.scale_ = mean, np.where(scale > 0, scale, 1.0)
        Xs = StandardizedRows(X, self.mean_, self.scale_)  # memory-maps stay on disk
        rng = np.random.default_rng(self.random_state)
        Z = self._initial_inducing(Xs, C, n, rng)
        kernel = ARDKernel(C, d, shared=self.shared_hyperparameters, dtype=dtype,
                           **(self.kernel_params or {}))
        kernel.requires_grad_(bool(self.optimize_hyperparameters))
        mini = self.batch_size is not None and self.batch_size < n
        damping = self.damping if self.damping is not None else (1.0 if mini else 0.5)
        self.model_ = ScalableEP(torch.as_tensor(Z, dtype=dtype), kernel, n_data=n, alpha=self.alpha,
                                 damping=damping, tied=self.method == "sep")
        self.model_.inducing_points.requires_grad_(bool(self.optimize_inducing))
        trainer = Trainer(self.model_, max_iter=self.max_iter, batch_size=self.batch_size,
                          optimizer="adam" if mini else "sign-adaptive",
                          learning_rate=self.learning_rate or (DEFAULT_ADAM_LEARNING_RATE if mini
                                                               else DEFAULT_BATCH_LEARNING_RATE),
                          learning_rate_decay=self.learning_rate_decay, tol=self.tol,
                          n_iter_no_change=self.n_iter_no_change, callbacks=callbacks,
                          checkpoint=self.checkpoint, verbose=self.verbose,
                          seed=int(rng.integers(2**31 - 1)))
        state = trainer.fit(Xs, y_idx)
        self.history_ = state.history
        self.n_iter_ = state.epoch
        self.n_skipped_updates_ = int(self.model_.n_skipped_updates)
        return self

    def _initial_inducing(self, Xs, C, n, rng) -> np.ndarray:
        if self.inducing_points is not None:
            Z = np.asarray(self.inducing_points, dtype=np.float64)
            if Z.ndim == 2:
                Z = np.broadcast_to(Z, (C, *Z.shape))
            if Z.ndim != 3 or Z.shape[0] != C or Z.shape[2] != Xs.shape[1]:
                raise ValueError(f"inducing_points must have shape [M, {Xs.shape[1]}] or "
                                 f"[{C}, M, {Xs.shape[1]}], got {Z.shape}")
            if not np.all(np.isfinite(Z)):
                raise ValueError("inducing_points contain NaN or inf")
            return (Z - self.mean_) / self.scale_
        m = int(self.n_inducing)
        if m > n:
            warnings.warn(f"n_inducing={m} is larger than the {n} training rows; using M={n}",
                          UserWarning, stacklevel=3)
            m = n
        return init_inducing_points(Xs, C, m, self.inducing_init, self.shared_hyperparameters, rng)

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X, chunk_size: int = 2048) -> np.ndarray:
        """``[N, C]`` class probabilities (columns ordered as ``classes_``)."""
        check_is_fitted(self, "model_")
        X = self._validate(X)
        Xs = StandardizedRows(X, self.mean_, self.scale_)
        dtype = _DTYPES[self.dtype]
        out = [self.model_.predict_proba(torch.as_tensor(Xs[i:i + chunk_size], dtype=dtype)).numpy()
               for i in range(0, len(Xs), chunk_size)]
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
    def save(self, path) -> None:
        """Write the fitted estimator to ``path`` (joblib)."""
        check_is_fitted(self, "model_")
        joblib.dump(self, Path(path))

    @staticmethod
    def load(path) -> GPClassifier:
        """Read an estimator written by :meth:`save`."""
        model = joblib.load(Path(path))
        if not isinstance(model, GPClassifier):
            raise TypeError(f"{path} does not hold a GPClassifier")
        return model
