"""GPClassifier's family (:class:`~.run.Family`), in one module: its build (:mod:`.build`), its
held-out score and what it does after training, its fitted values (each assigned by name), its
model file's content, the model rebuilt from a file and the values a file restores, the checks of
a loaded file, and its predictions from a :class:`~.run.Predictor`, the same mid-fit (early
stopping, a selection's held-out folds) and on the fitted estimator. :data:`GP_CLASSIFIER` is the
record; :data:`GP_ORDINAL_CLASSIFIER` adds the ordinal classifier's check of its method."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..conformal import conformity_scores
from ..data.streaming import RowSubset
from ..kernel_start import KernelStart
from ..labels import classes_from_plain, classes_to_plain, plain
from ..methods import method_parameters, n_latent, ordinal_methods
from ..metrics import negative_log_likelihood
from ..numerics import rows_per_block
from ..training.checkpoints import optimizer_from_plain, optimizer_to_plain
from . import build
from .fit_plan import FitPlan
from .inputs import table_content
from .run import Family, Predictor, diagnostics_of

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
class ClassifierContext:
    """What GPClassifier's family functions take beside the plan: the number of classes, the
    user's ``inducing_points`` (the parameter's value, or ``None``), the kernel starts a selection
    fitted already by surrogate (or ``None``) and whether to say the start found (``verbose``)."""

    n_classes: int
    inducing_points: object = None
    start: dict[str, KernelStart] | None = None
    verbose: bool = False


def held_out_nll(predictor: Predictor, X_val, y_val: np.ndarray, weight: np.ndarray | None, context: ClassifierContext) -> float:
    """The score early stopping minimises: the mean negative log-likelihood of the held-out rows
    ``X_val`` (unstandardised, a lazy view of the training rows) with class indices ``y_val``,
    weighted by ``weight`` ``[N_val]`` where given."""
    return negative_log_likelihood(class_probabilities(predictor, X_val, context.n_classes), y_val, weight)


def held_out_calibration(predictor: Predictor, validation, context: ClassifierContext) -> dict:
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


# ---------------------------------------------------------------------- the model file
def file_content(est, include_training_state: bool = False) -> dict:
    """The classifier's part of its model file: classes, the method's name, its state (without the
    per-point training state unless asked), the plan (the method's arguments: files before this
    one kept a second copy of them, the method's config, now unread) and fitted choices."""
    state = est.model_.state_dict()
    if not include_training_state:
        state = {k: v for k, v in state.items() if k not in est.model_.TRAINING_STATE}
    return {"classes": classes_to_plain(est.classes_),
            "method": {"name": est.method_, "training_state": include_training_state},
            "state": state, "fit_plan": est.fit_plan_.to_plain(),
            "kernel_start": None if getattr(est, "kernel_start_", None) is None else est.kernel_start_.to_plain(),
            "selection": ({"candidate": est.candidate_, "scheme": est.selection_scheme_,
                           "cv_results": plain(est.cv_results_)} if hasattr(est, "cv_results_") else None),
            **({"conformity_scores": torch.as_tensor(est.conformity_scores_)}
               if getattr(est, "conformity_scores_", None) is not None else {}),
            **({"conformity_classes": torch.as_tensor(est.conformity_classes_)}
               if getattr(est, "conformity_classes_", None) is not None else {}),
            "table_encoding": table_content(getattr(est, "table_encoding_", None)).get("table_encoding"),
            "stream_optimizer": optimizer_to_plain(getattr(est, "_stream_optimizer", None)),
            "stream_seen": plain(getattr(est, "_stream_seen", None))}


def file_values(content: dict, model) -> tuple:
    """``(plan, made, kept)``: what a classifier's model file keeps beside its ``model`` (its state
    loaded): the plan, the fitted values (classes, kernel start, diagnostics) and what
    :func:`.fitted.record_file` takes besides (calibration rows, the selection, a stream's optimiser
    state and its rows and weight so far)."""
    start = content.get("kernel_start")                # files before the kernel start have none
    made = {"classes": classes_from_plain(content["classes"]),
            "kernel_start": None if start is None else KernelStart.from_plain(start), **diagnostics_of(model)}
    scores, classes = content.get("conformity_scores"), content.get("conformity_classes")
    seen = content.get("stream_seen")                  # a stream's rows and weight so far (files before: none)
    kept = {"calibration": (None if scores is None else scores.numpy(), None if classes is None else classes.numpy()),
            "selection": content.get("selection"),     # method="auto" (files before it have none)
            "stream": (optimizer_from_plain(content.get("stream_optimizer")),
                       None if seen is None else (int(seen[0]), float(seen[1])))}
    return FitPlan.from_plain(content["fit_plan"]), made, kept      # older files' plans upgraded to one


def model_from_file(content: dict, _dtype: str):
    """``(model, state)``: the method rebuilt from a file's plan (the one record of its arguments:
    method, alpha, damping, epsilon, its own parameters, N, exact or sparse, its dtype; a stream's N
    is the rows it has seen) and its state's shapes."""
    state, plan = content["state"], FitPlan.from_plain(content["fit_plan"])
    unknown = sorted(set(plan.method_params) - set(method_parameters(plan.method)))
    if unknown:
        raise ValueError(f"its plan's method_params name {unknown}, which method {plan.method!r} does not take (its "
                         f"own: {sorted(method_parameters(plan.method))})")
    Z = state["inducing_points"]
    C = len(classes_from_plain(content["classes"]))
    seen = content.get("stream_seen")
    n_data = int(seen[0]) if plan.n_data_grows and seen is not None else plan.n_data
    model = build.method_of_plan(plan, Z, C, n_data=n_data, site_storage=content["method"]["training_state"])
    return model, state


def model_features(model) -> int:
    """The features the model's inputs have: its inducing inputs' width."""
    return int(model.inducing_points.shape[-1])


def model_problems(model, plan, classes: np.ndarray, params: dict, keeps_grade_order: bool = False) -> list[str]:
    """What in a loaded classifier (its ``model``, ``plan``, ``classes`` and parameters ``params``)
    contradicts its file's header, said in words: classes against the model's latent functions, the
    plan's inducing points against the model's, classes out of their sorted order (but an ordinal
    classifier's grades, ``keeps_grade_order``), the method's and the likelihood's own checks of
    their state, non-finite state (an earlier release's known defect named), and an ordinal model's
    grades against its classes."""
    C, M = model.n_classes, int(model.inducing_points.shape[1])
    latent = n_latent(plan.method, len(classes))
    wrong = f"{len(classes)} classes over a model of {C} latent functions, not {latent}"
    problems = [] if C == latent else [wrong]
    if plan.n_inducing != M:
        problems.append(f"a plan of {plan.n_inducing} inducing points over a model of {M}")
    ordinal = plan.method in ordinal_methods()
    if not (ordinal and keeps_grade_order) and not np.array_equal(np.unique(classes), classes):
        problems.append(f"classes {classes.tolist()} out of their sorted order in a classifier of method "
                        f"{plan.method!r}: only an ordinal classifier's grades keep an order of their own")
    problems += model.likelihood.state_problems() + model.state_problems()
    unfinished = [name for name, t in model.state_dict().items()
                  if t.is_floating_point() and not bool(torch.all(torch.isfinite(t)))]
    if unfinished:
        known = [model.KNOWN_DEFECTS[name] for name in unfinished if name in model.KNOWN_DEFECTS]
        problems.append(f"NaN or infinity in {', '.join(unfinished)}" + "".join(f" ({why})" for why in known))
    grades = params.get("grades")
    if ordinal and grades is not None and [str(g) for g in grades] != [str(c) for c in classes]:
        problems.append(f"classes {classes.tolist()} other than the grades {list(grades)} the file's "
                        "parameters give")
    return problems


def ordinal_model_problems(model, plan, classes: np.ndarray, params: dict) -> list[str]:
    """:func:`model_problems` of an ordinal classifier (its grades keep their order), and a method
    that is not for ordered classes."""
    problems = model_problems(model, plan, classes, params, keeps_grade_order=True)
    if plan.method not in ordinal_methods():
        problems.append(f"an ordinal classifier over method {plan.method!r}, which is not for ordered classes")
    return problems


#: GPClassifier's :class:`~.run.Family`: the model of its plan (:func:`.build.classifier_model`), the
#: held-out NLL, :func:`held_out_calibration`, :func:`record_values` and the model file's hooks
GP_CLASSIFIER = Family(build=build.classifier_model, score=held_out_nll, record=record_values,
                       file_content=file_content, model_from_file=model_from_file, file_values=file_values,
                       model_features=model_features, model_problems=model_problems, finish=held_out_calibration)
#: GPOrdinalClassifier's: the classifier's, with :func:`ordinal_model_problems`
GP_ORDINAL_CLASSIFIER = replace(GP_CLASSIFIER, model_problems=ordinal_model_problems)
