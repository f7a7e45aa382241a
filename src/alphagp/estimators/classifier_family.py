"""GPClassifier's family (:class:`~.run.Family`): its build, its held-out score and what it does
after training, and its predictions from a :class:`~.run.Predictor`, the same mid-fit (early
stopping, a selection's held-out folds) and on the fitted estimator."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ..conformal import conformity_scores
from ..data.streaming import RowSubset
from ..kernel_start import KernelStart
from ..metrics import negative_log_likelihood
from ..numerics import rows_per_block
from . import build
from .run import Family, Predictor

#: [C, M, rows] arrays a chunk's prediction holds at once (the kernel features and their products)
_FEATURE_COPIES = 4
#: the bytes of those arrays a chunk may hold: every chunk reads the model's [C, M, M] factors once
#: more, so with many inducing points a chunk of a few dozen rows spends its time reading them (the
#: closed form at M = 4,636 over MNIST's 10 classes had chunks of 22 rows under a 32 MiB bound)
_FEATURE_BLOCK_BYTES = 512 * 2**20


def _feature_chunks(predictor: Predictor, X, n_classes: int, chunk_size: int = 2048):
    """``(rows, tensor)`` for chunks of the validated, unstandardised rows ``X``, standardised on
    the model's device and dtype, under its threads (:meth:`.run.Predictor.chunks`): at most
    ``chunk_size`` rows, and no more than keep a chunk's kernel features (``[C, M, rows]`` and their
    temporaries) within :data:`_FEATURE_BLOCK_BYTES`, whatever C and M. A standardised value beyond
    the fourth root of the dtype's largest number (1e77 in float64) is held there: the kernel is 0
    that far from every inducing input either way, and its squared distances stay finite (a row at
    1e308 gave inf - inf = NaN)."""
    M = predictor.model.inducing_points.shape[1]
    per_row = n_classes * M * predictor.dtype.itemsize * _FEATURE_COPIES
    reach = torch.finfo(predictor.dtype).max ** 0.25
    for rows, Xc in predictor.chunks(X, min(chunk_size, rows_per_block(per_row, _FEATURE_BLOCK_BYTES))):
        yield rows, Xc.clamp(-reach, reach)


def class_probabilities(predictor: Predictor, X, n_classes: int, chunk_size: int = 2048) -> np.ndarray:
    """``[N, C]`` probabilities of the validated, unstandardised rows ``X`` under ``predictor``'s
    model, in chunks (:func:`_feature_chunks`; the likelihoods bound their own temporaries the same
    way). Non-finite probabilities are a ``FloatingPointError``."""
    # one output array filled in place: small long-lived pieces between each chunk's freed
    # temporaries kept glibc's heap from reusing them (scoring 10^6 rows grew the resident
    # memory by 1 GB of freed but unreturned heap; BENCHMARKS.md, "Memory")
    proba = np.empty((len(X), n_classes))
    for rows, Xc in _feature_chunks(predictor, X, n_classes, chunk_size):
        proba[rows] = predictor.model.predict_proba(Xc).cpu().numpy()
    if not np.all(np.isfinite(proba)):
        raise FloatingPointError("non-finite predictive probabilities; the fitted model is degenerate")
    return proba


def latent_moments(predictor: Predictor, X, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Latent means and variances ``[N, C]`` of the validated, unstandardised rows ``X``."""
    mean, var = np.empty((len(X), n_classes)), np.empty((len(X), n_classes))
    for rows, Xc in _feature_chunks(predictor, X, n_classes):
        m, v = predictor.model.predict_f(Xc)
        mean[rows], var[rows] = m.cpu().numpy(), v.cpu().numpy()
    return mean, var


@dataclass(frozen=True)
class Context:
    """What GPClassifier's family functions take beside the plan: the number of classes, the
    user's ``inducing_points`` (the parameter's value, or ``None``), the kernel starts a selection
    fitted already by surrogate (or ``None``) and whether to say the start found (``verbose``)."""

    n_classes: int
    inducing_points: object = None
    start: dict[str, KernelStart] | None = None
    verbose: bool = False


def held_out_nll(predictor: Predictor, X_val, y_val: np.ndarray, weight: np.ndarray | None, context: Context) -> float:
    """The score early stopping minimises: the mean negative log-likelihood of the held-out rows
    ``X_val`` (unstandardised, a lazy view of the training rows) with class indices ``y_val``,
    weighted by ``weight`` ``[N_val]`` where given."""
    return negative_log_likelihood(class_probabilities(predictor, X_val, context.n_classes), y_val, weight)


def held_out_calibration(predictor: Predictor, validation, context: Context) -> dict:
    """The conformity scores and class indices of the rows the fit held out (``validation``), which
    give prediction sets without more data."""
    y_val = np.asarray(validation.y, dtype=np.int64)
    scores = conformity_scores(class_probabilities(predictor, validation.X, context.n_classes), y_val)
    return {"conformity_scores": scores, "conformity_classes": y_val}


#: the training rows :func:`warn_if_no_better_than_the_frequencies` reads at most (evenly spaced)
FREQUENCY_CHECK_ROWS = 256


def warn_if_no_better_than_the_frequencies(predictor: Predictor, X, y_idx: np.ndarray, weight: np.ndarray | None,
                                           n_classes: int, method: str) -> None:
    """A ``UserWarning`` where the fitted model's mean NLL on its training rows ``X`` ``[N, D]``
    (class indices ``y_idx``, weights ``weight`` or ``None``; at most :data:`FREQUENCY_CHECK_ROWS` of
    them, evenly spaced) is above that of the training class frequencies on the same rows: the fit
    learnt nothing the frequencies do not say (issue 80: ``vi_softmax`` with ``learning_rate=2.3``
    ended at uniform probabilities, its training accuracy below the majority class's, silently).
    ``fit`` asks it of the fits that take their steps at a rate (not of L-BFGS's, whose line search
    takes no step that lowers the objective)."""
    rows = np.unique(np.linspace(0, len(y_idx) - 1, min(len(y_idx), FREQUENCY_CHECK_ROWS)).astype(np.int64))
    y_rows, w_rows = y_idx[rows], None if weight is None else weight[rows]
    counts = np.bincount(y_idx, weights=weight, minlength=n_classes)
    frequencies = np.broadcast_to(counts / counts.sum(), (len(rows), n_classes))
    model_nll = negative_log_likelihood(class_probabilities(predictor, RowSubset(X, rows), n_classes), y_rows, w_rows)
    floor = negative_log_likelihood(frequencies, y_rows, w_rows)
    if model_nll > floor:
        warnings.warn(f"method={method!r} ended with a training NLL of {model_nll:.5g}, above the {floor:.5g} of the "
                      "training class frequencies: the fit learnt nothing they do not say; refit with a smaller "
                      "learning_rate, more iterations or another method (method='auto' keeps the frequencies "
                      "where nothing beats them)", UserWarning, stacklevel=3)


def record_values(est, plan, made: dict) -> None:
    """GPClassifier's fitted values, each by name: the plan's decisions it shows (``method_``,
    ``n_inducing_``, ``batch_size_``, ``inducing_init_``, ``early_stopping_``, ``optimize_inducing_``,
    ``alpha_``) and what its fit made (``classes_``, ``kernel_start_``, and the held-out rows'
    ``conformity_scores_`` and ``conformity_classes_`` where early stopping held rows out)."""
    est.method_, est.n_inducing_, est.batch_size_ = plan.method, plan.n_inducing, plan.batch_size
    est.inducing_init_, est.early_stopping_, est.optimize_inducing_ = (plan.inducing_init, plan.early_stopping,
                                                                       plan.optimize_inducing)
    est.alpha_ = plan.alpha
    est.classes_ = made["classes"]
    est.kernel_start_ = made.get("kernel_start")
    if "conformity_scores" in made:
        est.conformity_scores_, est.conformity_classes_ = made["conformity_scores"], made["conformity_classes"]


#: GPClassifier's :class:`~.run.Family`: the model of its plan (:func:`.build.classifier_model`), the
#: held-out NLL, :func:`held_out_calibration` and :func:`record_values`
CLASSIFIER = Family(build=build.classifier_model, score=held_out_nll, record=record_values,
                    finish=held_out_calibration)
