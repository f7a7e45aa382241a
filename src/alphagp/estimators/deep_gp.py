"""scikit-learn estimators for deep GPs trained by approximate power EP (deep-GP paper):
:class:`DeepGPRegressor` and :class:`DeepGPClassifier`.

Both build a :class:`~alphagp.methods.dgp.DeepGP` (``methods/dgp.py``), train it with the
library's :class:`~alphagp.training.Trainer` (mini-batches, Adam, checkpoints that resume,
progress, early stopping) and write data-only model files (:mod:`alphagp.serialization`).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import replace
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from ..constraints import Interval, StrOptions
from ..data.streaming import column_mean_std
from ..labels import encode_known_labels, encode_labels, plain
from ..methods.dgp import FIRST_LAYER_KERNELS
from ..metrics import all_metrics
from . import fitted, inputs, model_file
from .base import GPEstimatorBase
from .deep_gp_family import (
    CLASSIFIER_KIND,
    DEEP_GP_CLASSIFIER,
    DEEP_GP_REGRESSOR,
    REGRESSOR_KIND,
    DeepGPContext,
    log_density,
    output_chunks,
    per_row,
    probabilities,
)
from .fit_plan import plan_deep_fit
from .inputs import check_rows_match
from .run import run


class _DeepGPBase(GPEstimatorBase):
    """What the regressor and the classifier share: parameters, fit, prediction draws, files.

    Parameters
    ----------
    n_layers : int
        L, layers of GPs (1 is a single sparse GP).
    n_hidden : int or None
        Units H of each hidden layer; ``None``: min(D, 30) (the paper).
    n_inducing : int
        M, inducing points per unit (clipped to the training rows with a warning).
    standardize : bool
        Standardise each feature to zero mean and unit variance (``False``: use the features as
        given, e.g. pixels already in [0, 1]).
    first_layer_kernel : {"rbf", "polynomial", "normalized_polynomial"}
        The first layer's kernel: ARD squared exponential, the ARD polynomial of degree 9 the
        paper uses on MNIST, or that kernel normalised to a prior variance that does not grow
        with the input's norm (:class:`~alphagp.kernels.PolynomialKernel`; BENCHMARKS.md, "Deep
        GPs at the paper's settings"). The other layers are ARD squared exponential.
    hidden_mean_scale : float >= 0
        Start each hidden unit's whitened mean from N(0, scale^2 I) (1: a draw from the unit's
        prior) instead of 0, so units that the initialisation leaves exchangeable (H > D) differ
        from the first step (:func:`~alphagp.methods.dgp.initial_layers`).
    alpha : float in (0, 1]
        Power of the alpha-divergence: near 0 is VI (Salimbeni & Deisenroth 2017), 1 is EP
        (Bui et al. 2016); the paper suggests starting at 0.5.
    n_samples : int
        S, samples propagated through the layers per point in training (eq. 19).
    n_predict_samples : int
        S in prediction (the paper: 100).
    batch_size : int or None
        Rows per mini-batch (Adam); ``None`` uses all rows at every step.
    max_iter : int
        Epochs (passes over the data). The paper counts iterations: epochs = iterations x
        batch_size / N.
    learning_rate : float
        Adam's rate (the paper: 1e-3, 1e-2 on the synthetic bimodal problem and MNIST).
    learning_rate_decay : float in (0, 1] or "cosine"
        Adam's rate is multiplied by this after every epoch; ``"cosine"`` anneals it to 0 over
        the larger of the share of ``max_iter`` done and the share of ``max_time`` spent.
    max_time : float or None
        Seconds of training this call of ``fit`` may spend (``None``: no limit).
    early_stopping : "auto" or bool
        Hold out ``validation_fraction`` of the rows (stratified by class for the classifier),
        stop when their mean negative log-likelihood has not improved by more than ``tol`` of
        the best for ``n_iter_no_change`` epochs, and return the best state. ``"auto"``: on from
        10,000 training rows. Off, ``tol`` stops on the epoch's mean energy.
    validation_fraction : float in (0, 1)
    tol, n_iter_no_change : the improvement early stopping asks for (``None``: any, with a
        validation set; no early stopping without one) and its patience in epochs.
    checkpoint : str, os.PathLike or None
        Checkpoint file written every epoch; an existing one from the same data and settings
        resumes the fit (see :class:`~alphagp.training.Trainer`).
    dtype : {"float64", "float32"}
    n_jobs : int or None
        Threads PyTorch uses (``None``: 1, ``-1``: all cores).
    device : str, torch.device or None
        Where the model's tensors live and its arithmetic runs (``None``: the CPU), as for
        :class:`~alphagp.GPClassifier`; the Monte Carlo draws are made on the CPU, so a fit
        draws the same on every device.
    categorical_features : "from_dtype" or None
        ``"from_dtype"`` (the default) takes a pandas DataFrame of mixed types and one-hot encodes
        its string, object, ``category`` and boolean columns and imputes its numeric ones, as
        :class:`~alphagp.GPClassifier` does (:mod:`alphagp.data.tables`; ``table_encoding_``,
        kept in model files); arrays and DataFrames of finite numbers are used as they are.
        ``None``: every column must be numeric.
    distributed : bool
        Data-parallel training across the processes of a ``torch.distributed`` group (as for
        :class:`~alphagp.GPClassifier`): each process propagates its share of every mini-batch
        with the draws of those rows in the global batch, so the fit equals a one-process fit
        up to rounding.
    verbose : bool
        Progress output.
    random_state : int or None
        Seeds the initialisation, the batch order and the Monte Carlo draws.

    Attributes
    ----------
    model_ : the fitted :class:`~alphagp.methods.dgp.DeepGP`.
    n_features_in_ : int
    mean_, scale_ : ``[D]``, the features' standardisation.
    history_ : list of per-epoch dicts (energy ``objective``, ``train_seconds``, ``validation``).
    validation_scores_, best_iteration_ : the held-out scores per epoch and the epoch whose state
        the model holds (``None`` without early stopping).
    n_iter_ : int, epochs run.
    diagnostics_ : dict, ``n_clamped_variances``: propagated variances raised to the floor 1e-10
        during this fit (in a distributed fit, summed over the processes).
    """

    _parameter_constraints: ClassVar[dict] = {
        **GPEstimatorBase.SHARED_CONSTRAINTS,
        "n_layers": [Interval(Integral, 1, None, closed="left")],
        "n_hidden": [Interval(Integral, 1, None, closed="left"), None],
        "n_inducing": [Interval(Integral, 1, None, closed="left")],
        "first_layer_kernel": [StrOptions(set(FIRST_LAYER_KERNELS))],
        "hidden_mean_scale": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="right")],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_predict_samples": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "distributed": ["boolean"],
        "random_state": ["random_state"],
        "categorical_features": [StrOptions({"from_dtype"}), None],
    }
    LIKELIHOOD_NOISE = 1e-2
    SCHEDULE_PARAMS = (*GPEstimatorBase.SCHEDULE_PARAMS, "n_predict_samples", "device", "distributed")
    NAMED_CHECKPOINTS = True

    def __init__(self, *, n_layers: int = 2, n_hidden: int | None = None, n_inducing: int = 100,
                 first_layer_kernel: str = "rbf", hidden_mean_scale: float = 0.0, standardize: bool = True,
                 alpha: float = 0.5,
                 n_samples: int = 20, n_predict_samples: int = 100, batch_size: int | None = 100,
                 max_iter: int = 200, max_time: float | None = None, learning_rate: float = 1e-3,
                 learning_rate_decay: float = 1.0, early_stopping="auto", validation_fraction: float = 0.1,
                 tol: float | None = None, n_iter_no_change: int = 10, checkpoint: str | None = None,
                 dtype: str = "float64", n_jobs: int | None = None, device=None, distributed: bool = False,
                 verbose: bool = False, random_state=None, categorical_features="from_dtype"):
        self._set_training_params(max_iter=max_iter, max_time=max_time, learning_rate_decay=learning_rate_decay,
                                  early_stopping=early_stopping, validation_fraction=validation_fraction, tol=tol,
                                  n_iter_no_change=n_iter_no_change, checkpoint=checkpoint, dtype=dtype,
                                  n_jobs=n_jobs, device=device, distributed=distributed, verbose=verbose,
                                  random_state=random_state, categorical_features=categorical_features)
        self.n_layers = n_layers
        self.n_hidden = n_hidden
        self.n_inducing = n_inducing
        self.first_layer_kernel = first_layer_kernel
        self.hidden_mean_scale = hidden_mean_scale
        self.standardize = standardize
        self.alpha = alpha
        self.n_samples = n_samples
        self.n_predict_samples = n_predict_samples
        self.batch_size = batch_size
        self.learning_rate = learning_rate

    # ------------------------------------------------------------------ subclass hooks
    def _prepare_targets(self, y, weight: np.ndarray | None = None) -> tuple[np.ndarray, int, str, dict]:
        """Targets for the model, the number of output units, the likelihood's name and the fitted
        values of the targets (the classes, or the targets' standardisation) (``weight`` ``[N]``: the
        rows' sample weights, or ``None``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, callbacks=None):
        """Fit the deep GP to ``X`` ``[N, D]`` and ``y`` ``[N]``.

        ``sample_weight`` ``[N]``: non-negative row weights (times ``class_weight``'s for the
        classifier), as :meth:`alphagp.GPClassifier.fit` takes them: each row's data term of the
        energy is scaled by its weight and the cavities count sum_i w_i points, so an integer
        weight is the row repeated; rows of weight 0 are left out; the held-out score of early
        stopping is the weighted mean. ``callbacks`` as for :class:`~alphagp.training.Trainer`
        (called with the training state after each epoch)."""
        X, y, weight = inputs.prepare(self, X, y, sample_weight, ensure_min_samples=2,
                                      y_numeric=isinstance(self, RegressorMixin))
        targets, n_outputs, likelihood, made = self._prepare_targets(y, weight)
        stratify = isinstance(self, ClassifierMixin)
        plan = plan_deep_fit(self.get_params(), targets, n_features=X.shape[1], likelihood=likelihood,
                             n_outputs=n_outputs, stratify=stratify)
        if self.verbose:
            print(f"{type(self).__name__} plan: {plan.describe()}", flush=True)
        context = DeepGPContext(self.n_predict_samples, self.LIKELIHOOD_NOISE,
                          len(made["classes"]) if "classes" in made else None)
        result = run(plan, X, targets, weight, self.FAMILY, context, self._settings(plan, callbacks, made),
                     stratify=stratify)
        fitted.record_fit(self, replace(result, made={**made, **result.made}))
        return self


    # ------------------------------------------------------------------ prediction draws
    def _output_chunks(self, X):
        """:func:`output_chunks` of the rows ``X`` (unstandardised, checked) under the fitted model with
        ``n_predict_samples`` draws, which may be changed after fit."""
        check_is_fitted(self, "model_")  # here, not in the generator, so it raises at the call
        return output_chunks(self._predictor(), inputs.validate(self, X), int(self.n_predict_samples))

    def _per_row(self, X, width: int, compute) -> np.ndarray:
        """:func:`per_row` of the rows ``X`` (unstandardised, checked) under the fitted model."""
        check_is_fitted(self, "model_")
        return per_row(self._predictor(), inputs.validate(self, X), width, compute, int(self.n_predict_samples))

    def _output_samples(self, X) -> tuple[torch.Tensor, torch.Tensor]:
        """All of :meth:`_output_chunks` on the CPU: means and noise-free variances ``[S, n, H_L]``."""
        parts = list(self._output_chunks(X))
        return torch.cat([p[1] for p in parts], 1).cpu(), torch.cat([p[2] for p in parts], 1).cpu()

    def _output_noise(self) -> torch.Tensor:
        """The last layer's noise ``[H_L]`` on the CPU."""
        return self.model_.output_noise.cpu()

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write the fitted estimator to ``path``: a data-only file (safetensors tensors + a JSON
        header with the parameters, the architecture and a format version); opening it never runs code."""
        model_file.write(self, path)

    @classmethod
    def load(cls, path, device=None):
        """Read an estimator written by :meth:`save`, onto ``device`` (``None``: the device it was
        fitted with); raises :class:`~alphagp.serialization.ModelFileError` for another kind of
        file or a damaged one."""
        return model_file.read(cls, path, **({} if device is None else {"device": plain(device)}))


class DeepGPRegressor(RegressorMixin, _DeepGPBase):
    """Deep GP regression trained by approximate power EP with alpha-divergences (deep-GP paper).

    Gaussian likelihood on standardised targets (its variance is the last layer's noise, initially
    0.01); predictions are Gaussian mixtures over ``n_predict_samples`` propagated samples, returned
    in the units of ``y``. See :class:`_DeepGPBase` for the parameters.

    Attributes
    ----------
    y_mean_, y_scale_ : float, the targets' standardisation.
    """

    MODEL_KIND = REGRESSOR_KIND
    FAMILY = DEEP_GP_REGRESSOR

    def _prepare_targets(self, y, weight=None):
        """Standardised targets (by their weighted mean and spread where the rows are weighted)."""
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional (one target), got shape {list(y.shape)}")
        mean, scale = column_mean_std(y, weight=weight)
        mean, scale = float(mean), float(scale) if float(scale) > 0 else 1.0
        return (y - mean) / scale, 1, "gaussian", {"y_mean": mean, "y_scale": scale}

    def predict(self, X, return_std: bool = False):
        """Predictive mean ``[n]`` (and standard deviation with ``return_std``) of y: the moments of the
        mixture of the samples' Gaussians N(m_s, v_s + sigma^2), in the units of ``y``."""
        moments = self._per_row(X, 2, lambda _rows, mean, var: torch.stack(
            self.model_.likelihood.mixture_moments(mean, var, self._output_noise().to(mean.device)), 1))
        mu = moments[:, 0] * self.y_scale_ + self.y_mean_
        return (mu, np.sqrt(np.maximum(moments[:, 1], 0.0)) * self.y_scale_) if return_std else mu

    def predict_log_density(self, X, y) -> np.ndarray:
        """log p(y_i | x_i) ``[n]`` under the predictive mixture, in the units of ``y``."""
        y = np.asarray(y, dtype=np.float64)
        return self._log_density((y - self.y_mean_) / self.y_scale_, X) - math.log(self.y_scale_)

    def _log_density(self, ys: np.ndarray, X) -> np.ndarray:
        """log p of standardised targets ``ys`` ``[n]`` at the rows ``X`` (:func:`log_density`)."""
        check_is_fitted(self, "model_")
        return log_density(self._predictor(), ys, inputs.validate(self, X), int(self.n_predict_samples))

    def sample_y(self, X, n_samples: int = 1, random_state=None) -> np.ndarray:
        """Draws ``[n, n_samples]`` from the predictive mixture (as scikit-learn's GP regressor)."""
        mean, var = self._output_samples(X)
        rng = np.random.default_rng(random_state)
        S, n = mean.shape[:2]
        component = rng.integers(S, size=(n, n_samples))
        m = mean[..., 0].numpy().T[np.arange(n)[:, None], component]
        sd = np.sqrt(var[..., 0].numpy().T[np.arange(n)[:, None], component] + float(self._output_noise()[0]))
        return (m + sd * rng.standard_normal((n, n_samples))) * self.y_scale_ + self.y_mean_

    def evaluate(self, X, y) -> dict[str, float]:
        """Test ``rmse`` (of the predictive mean) and ``nll`` (mean negative log predictive density), in y's units."""
        check_rows_match(X, y)
        y = np.asarray(y, dtype=np.float64)
        residual = (self.predict(X) - y) / self.y_scale_      # in standard units: no overflow for huge y
        return {"rmse": float(np.sqrt(np.mean(residual ** 2)) * self.y_scale_),
                "nll": float(-np.mean(self.predict_log_density(X, y)))}


class DeepGPClassifier(ClassifierMixin, _DeepGPBase):
    """Deep GP classification trained by approximate power EP with alpha-divergences (deep-GP paper).

    Two classes: one output unit with the probit likelihood. More: one unit per class with the
    robust-max likelihood (a wrong label with probability 1e-3, drawn from the other classes).
    The last layer's noise (initially 0.01) is latent noise. Probabilities are the mean over
    ``n_predict_samples`` propagated samples. See :class:`_DeepGPBase` for the parameters.

    Attributes
    ----------
    classes_ : array of the class labels.
    """

    MODEL_KIND = CLASSIFIER_KIND
    FAMILY = DEEP_GP_CLASSIFIER
    _parameter_constraints: ClassVar[dict] = {**_DeepGPBase._parameter_constraints,
                                              "class_weight": [dict, StrOptions({"balanced"}), None]}

    def __init__(self, *, class_weight=None, **params):
        """``class_weight``: dict, ``"balanced"`` or ``None``, as :class:`~alphagp.GPClassifier`'s
        (it multiplies ``fit``'s ``sample_weight``); ``params``: :class:`_DeepGPBase`'s."""
        super().__init__(**params)
        self.class_weight = class_weight

    def _prepare_targets(self, y, _weight=None):
        classes, y_idx = encode_labels(y)
        C = len(classes)
        if C < 2:
            raise ValueError(f"DeepGPClassifier needs at least 2 classes in y; got only one class, {classes.tolist()}")
        return y_idx, (1 if C == 2 else C), ("probit" if C == 2 else "robust_max"), {"classes": classes}

    def predict_proba(self, X) -> np.ndarray:
        """``[n, C]`` class probabilities (columns ordered as ``classes_``)."""
        return self._proba(X)

    def _proba(self, X) -> np.ndarray:
        """``[n, C]`` probabilities of the rows ``X`` (:func:`probabilities`)."""
        check_is_fitted(self, "model_")
        return probabilities(self._predictor(), inputs.validate(self, X), len(self.classes_),
                             int(self.n_predict_samples))

    def predict_uncertainty(self, X, n_samples: int = 64, random_state: int | None = 0) -> dict[str, np.ndarray]:
        """The predictive uncertainty of each row of ``X``, in nats, split into its parts as
        :meth:`alphagp.GPClassifier.predict_uncertainty` splits it (:mod:`alphagp.uncertainty`):
        ``"total"``, ``"aleatoric"`` and ``"epistemic"`` ``[n]`` (total = aleatoric + epistemic),
        from ``n_samples`` draws of the last layer's outputs for each of the ``n_predict_samples``
        samples propagated through the hidden layers (the epistemic part is the mutual
        information between the label and all layers' functions)."""
        from ..uncertainty import decompose, draw_generator, named
        generator = draw_generator(n_samples, random_state)
        C = len(self.classes_)

        def parts(_rows, mean, var):
            likelihood, mean, var = self.model_.likelihood.with_output_noise(mean, var, self.model_.output_noise)
            return decompose(likelihood, mean, var, int(n_samples), generator, n_classes=C)

        return named(self._per_row(X, 3, parts))

    def predict(self, X) -> np.ndarray:
        """``[n]`` most probable labels."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, 1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy; raises ``ValueError`` for labels not seen during fit (as ``GPClassifier.score``)."""
        check_is_fitted(self, "model_")
        encode_known_labels(y, self.classes_)
        return super().score(X, y, sample_weight=sample_weight)

    def evaluate(self, X, y) -> dict[str, float]:
        """Test error, mean negative log-likelihood, expected calibration error and Brier score."""
        check_rows_match(X, y)
        return all_metrics(self.predict_proba(X), encode_known_labels(y, self.classes_))


# scikit-learn reads an estimator's parameters from its constructor's signature: the classifier's is
# the base's keyword arguments and class_weight
_BASE_SIGNATURE = inspect.signature(_DeepGPBase.__init__)
DeepGPClassifier.__init__.__signature__ = _BASE_SIGNATURE.replace(parameters=[
    *_BASE_SIGNATURE.parameters.values(), inspect.Parameter("class_weight", inspect.Parameter.KEYWORD_ONLY,
                                                            default=None)])
