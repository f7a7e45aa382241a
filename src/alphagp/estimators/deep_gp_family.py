"""The deep GPs' families (:class:`~.run.Family`), in one module: the model of a plan and the fit's
seed for its Monte Carlo draws, the held-out score, the fitted values (each assigned by name), the
model file's content, the model rebuilt from a file and the values a file restores, the checks of a
loaded file, and the predictions from a :class:`~.run.Predictor` (propagated draws, read a chunk at
a time), the same mid-fit (early stopping) and on the fitted estimator.
:data:`DEEP_GP_REGRESSOR` and :data:`DEEP_GP_CLASSIFIER` are the records of
:class:`~alphagp.DeepGPRegressor` and :class:`~alphagp.DeepGPClassifier`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..labels import classes_from_plain, classes_to_plain
from ..methods.dgp import DeepGP, initial_layers
from ..metrics import negative_log_likelihood
from ..numerics import rows_per_block
from ..threads import torch_threads
from .fit_plan import DTYPES, DeepFitPlan
from .inputs import table_content
from .run import Family, Predictor

#: model-file kinds of the two estimators
REGRESSOR_KIND, CLASSIFIER_KIND = "alphagp.DeepGPRegressor", "alphagp.DeepGPClassifier"
#: most propagated rows (samples x points) evaluated at once in prediction
_PREDICT_ROWS = 8192
#: [S rows, H, M] arrays a layer's prediction holds at once (its kernel features and their products)
_FEATURE_COPIES = 4


def deep_model(plan: DeepFitPlan, _X, Xs, _y, _weight, rng: np.random.Generator, context):
    """``(model, {})``: the deep GP of ``plan`` (its layers initialised from the standardised rows
    ``Xs`` and ``rng``, :func:`~alphagp.methods.dgp.initial_layers`) on the plan's device, with the
    ``context``'s (:class:`DeepGPContext`) prediction draws and initial output noise."""
    layers = initial_layers(np.asarray(Xs), plan.n_outputs, plan.n_layers, plan.n_hidden, plan.n_inducing, rng,
                            output_noise=context.output_noise, first_kernel=plan.first_layer_kernel,
                            hidden_mean_scale=plan.hidden_mean_scale, dtype=DTYPES[plan.dtype])
    return DeepGP(layers, plan.likelihood, plan.n_data, alpha=plan.alpha, n_samples=plan.n_samples,
                  n_predict_samples=context.n_predict_samples).to(torch.device(plan.device)), {}


def _seed(model, seed: int) -> None:
    """The fit's seed (drawn after the build, shared between processes) for the model's Monte Carlo
    draws; the trainer's batch order takes it too."""
    model.seed = seed


def output_chunks(predictor: Predictor, X, n_samples: int):
    """The last layer's means and noise-free variances ``[S, rows, H_L]`` for the validated,
    unstandardised rows ``X`` (a lazy row view or memory-map is read one chunk at a time) under
    ``predictor``'s model with S = ``n_samples`` draws, with each chunk's row slice: ``(rows, mean,
    var)``. Chunks hold ``_PREDICT_ROWS`` propagated rows, so what is computed from them
    (robust-max probabilities cost ``[S rows, C, C, Q]``, computed in blocks) stays within memory,
    and no more rows than keep a layer's kernel features (``[S rows, H, M]`` and their temporaries)
    within :data:`~alphagp.numerics.QUADRATURE_BLOCK_BYTES`, whatever the widths."""
    model = predictor.model
    widest = max(layer.shape[0] * layer.shape[1] for layer in model.layers)      # H x M
    chunk = max(1, min(_PREDICT_ROWS // n_samples,
                       rows_per_block(n_samples * widest * predictor.dtype.itemsize * _FEATURE_COPIES)))
    for rows, Xc in predictor.chunks(X, chunk):
        mean, var = model.predict_output(Xc, n_samples)
        if not (torch.all(torch.isfinite(mean)) and torch.all(torch.isfinite(var))):
            raise FloatingPointError("non-finite predictions; the fitted model is degenerate")
        yield rows, mean, var


def per_row(predictor: Predictor, X, width: int, compute, n_samples: int) -> np.ndarray:
    """``[n, width]`` (float64) of ``compute(rows, mean, var)``, a ``[rows, width]`` or ``[rows]``
    tensor from each chunk's draws (:func:`output_chunks` of the validated rows ``X``), written into
    one preallocated array: no ``[S, n, H_L]`` array of every row's draws, and no small per-chunk
    pieces left between freed temporaries (they kept glibc's heap from being reused; BENCHMARKS.md,
    "Memory")."""
    out = np.empty((len(X), width))
    for rows, mean, var in output_chunks(predictor, X, n_samples):
        with torch_threads(predictor.n_jobs):
            out[rows] = compute(rows, mean, var).reshape(-1, width).cpu().double().numpy()
    return out


def log_density(predictor: Predictor, ys: np.ndarray, X, n_samples: int) -> np.ndarray:
    """log p ``[n]`` of standardised targets ``ys`` ``[n]`` at the validated rows ``X`` under the
    mixture of their ``n_samples`` propagated samples."""
    if ys.shape != (len(X),):
        raise ValueError(f"y must have shape [{len(X)}], got {list(ys.shape)}")
    model = predictor.model
    noise = model.output_noise.cpu().to(predictor.device)
    ys = torch.as_tensor(ys, dtype=predictor.dtype, device=predictor.device)
    return per_row(predictor, X, 1, lambda rows, mean, var: model.likelihood.mixture_log_density(
        mean, var, noise, ys[rows]), n_samples)[:, 0]


def probabilities(predictor: Predictor, X, n_classes: int, n_samples: int) -> np.ndarray:
    """``[n, C]`` class probabilities of the validated rows ``X``: the mean over ``n_samples``
    propagated samples."""
    return per_row(predictor, X, n_classes, lambda _rows, mean, var: predictor.model.output_probabilities(
        mean, var).mean(0), n_samples)


@dataclass(frozen=True)
class DeepGPContext:
    """What the deep GPs' family functions take beside the plan: the draws of a prediction, the
    last layer's initial noise and, for the classifier, the number of classes."""

    n_predict_samples: int
    output_noise: float
    n_classes: int | None = None


def _held_out_log_density(predictor: Predictor, X_val, y_val: np.ndarray, weight, context: DeepGPContext) -> float:
    """The regressor's held-out score: the mean negative log density of the standardised targets
    (``X_val`` read a chunk at a time), weighted by ``weight`` where given."""
    return float(-np.average(log_density(predictor, y_val, X_val, context.n_predict_samples), weights=weight))


def _held_out_nll(predictor: Predictor, X_val, y_val: np.ndarray, weight, context: DeepGPContext) -> float:
    """The classifier's held-out score: the mean negative log-likelihood of the held-out rows."""
    return negative_log_likelihood(probabilities(predictor, X_val, context.n_classes, context.n_predict_samples),
                                   y_val, weight)


def _record_target_scale(est, _plan, made: dict) -> None:
    """The regressor's fitted values: the targets' standardisation ``y_mean_`` and ``y_scale_``."""
    est.y_mean_, est.y_scale_ = made["y_mean"], made["y_scale"]


def _record_classes(est, _plan, made: dict) -> None:
    """The classifier's fitted values: ``classes_``."""
    est.classes_ = made["classes"]


# ---------------------------------------------------------------------- the model file
def _model_content(est) -> dict:
    """A deep GP's model file content: the model's config and state, the plan, the table's encoding,
    and the targets' fitted values (the classes, or the targets' standardisation)."""
    targets = ({"classes": classes_to_plain(est.classes_)} if hasattr(est, "classes_") else
               {"y_mean": est.y_mean_, "y_scale": est.y_scale_})
    return {"model": {"config": est.model_.config(), "state": est.model_.state_dict()},
            "fit_plan": est.fit_plan_.to_plain(), **table_content(getattr(est, "table_encoding_", None)), **targets}


def model_from_file(content: dict, dtype: str):
    """``(model, state)``: the deep GP a file's config describes, in ``dtype``, and its state."""
    model = content["model"]
    return DeepGP.from_config(model["config"], dtype=DTYPES[dtype]), model["state"]


def _regressor_values(content: dict, _model) -> tuple:
    """``(plan, made, kept)`` of a regressor's file: the plan (older files' upgraded to one) and the
    targets' standardisation."""
    return (DeepFitPlan.from_plain(content["fit_plan"]),
            {"y_mean": float(content["y_mean"]), "y_scale": float(content["y_scale"])}, {})


def _classifier_values(content: dict, _model) -> tuple:
    """``(plan, made, kept)`` of a classifier's file: the plan and the classes."""
    return DeepFitPlan.from_plain(content["fit_plan"]), {"classes": classes_from_plain(content["classes"])}, {}


def model_features(model) -> int:
    """The features the model's inputs have: its first layer's input width."""
    return int(model.layers[0].shape[2])


def _model_problems(model, _plan, classes, params: dict) -> list[str]:
    """What in a loaded deep GP contradicts its file's header: its ``alpha`` parameter against its
    model's, and a classifier's ``classes`` (``None`` for the regressor) against the model's
    output units."""
    alpha = float(model.alpha)
    problems = [] if alpha == float(params["alpha"]) else [f"alpha={params['alpha']} over a model of alpha={alpha}"]
    if classes is not None:
        C, outputs = len(classes), int(model.layers[-1].shape[0])
        if outputs != (1 if C == 2 else C):
            problems.append(f"{C} classes over a model of {outputs} outputs")
    return problems


#: the deep GPs' :class:`~.run.Family` records: the layers and the model of a plan, the fit's seed
#: for its Monte Carlo draws, the held-out score, the fitted values and the model file's hooks of each
DEEP_GP_REGRESSOR = Family(build=deep_model, score=_held_out_log_density, record=_record_target_scale,
                           file_content=_model_content, model_from_file=model_from_file,
                           file_values=_regressor_values, model_features=model_features,
                           model_problems=_model_problems, seed=_seed)
DEEP_GP_CLASSIFIER = Family(build=deep_model, score=_held_out_nll, record=_record_classes,
                            file_content=_model_content, model_from_file=model_from_file,
                            file_values=_classifier_values, model_features=model_features,
                            model_problems=_model_problems, seed=_seed)
