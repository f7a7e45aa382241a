"""The model-file stage of the estimators: data-only files (:mod:`alphagp.serialization`: safetensors
tensors, a JSON header, a format version and a checksum; never pickle) written and read once.

:func:`write` writes the parameters, the standardisation, the training record and each family's
content, and :func:`read` reads a file back through the upgrades of older layouts
(:mod:`.file_upgrades`), the family's rebuild, one writer of the fitted attributes
(:func:`.fitted.record_file`) and the checks of the header against the tensors. A family gives
its hooks as methods of its estimator: ``_file_content(**options)``, ``_model_from_file(content)
-> (model, state)``, ``_file_values(content, model) -> (plan, made, kept)``, ``_model_features()``
and ``_model_problems()``. The functions below the generic ones are :class:`~alphagp.GPClassifier`'s
hooks: its content, the values a file restores, and its model rebuilt from the file's plan.
"""

from __future__ import annotations

import torch
from sklearn.utils.validation import check_is_fitted

from .. import serialization
from ..kernel_start import KernelStart
from ..labels import classes_from_plain, classes_to_plain, params_from_plain, params_to_plain, plain
from ..methods import method_parameters
from ..training.checkpoints import optimizer_from_plain, optimizer_to_plain
from . import file_upgrades, fitted
from .build import method_of_plan
from .fit_plan import FitPlan
from .inputs import input_width, table_content, table_encoding_of_file
from .run import FitResult, diagnostics_of


def _load_state(model, state: dict) -> None:
    """``model.load_state_dict(state)``, its error (missing, unexpected or misshapen tensors, which
    PyTorch spreads over several lines) as one ``ValueError`` line for the file's refusal."""
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        lines = [line.strip() for line in str(err).splitlines()[1:] if line.strip()]
        raise ValueError("its tensors do not fit the model its header describes: " + "; ".join(lines)) from None


def write(est, path, **options) -> None:
    """Write the fitted ``est`` to ``path``: its parameters, input columns, standardisation and
    training record, and its family's content (``est._file_content(**options)``; ``options`` are
    its ``save`` method's)."""
    check_is_fitted(est, "model_")
    serialization.write(path, est.MODEL_KIND, {
        "params": params_to_plain(est.get_params()), "n_features_in": int(est.n_features_in_),
        "feature_names_in": plain(getattr(est, "feature_names_in_", None)),
        "mean": torch.as_tensor(est.mean_), "scale": torch.as_tensor(est.scale_),
        "history": est.history_, "n_iter": int(est.n_iter_), "validation_scores": est.validation_scores_,
        "best_iteration": est.best_iteration_, **est._file_content(**options)})


def read(cls, path, content: dict | None = None, **params):
    """An estimator of class ``cls`` from a file written by :func:`write` (or from its ``content``
    as :func:`~alphagp.serialization.read` returned it, the file read once), its parameters updated
    by ``params``: the file's layout upgraded (:mod:`.file_upgrades`), the family's model rebuilt
    (``cls._model_from_file``) and its state loaded, the fitted values the family keeps
    (``cls._file_values``) recorded (:func:`.fitted.record_file`), the header checked against the
    tensors. Raises :class:`~alphagp.serialization.ModelFileError` for another kind of file, a
    damaged one, or one whose model cannot be rebuilt."""
    if content is None:
        content = serialization.read(path, cls.MODEL_KIND)
    try:
        content = file_upgrades.upgrade(content)
        stored = params_from_plain(content["params"])
        foreign = sorted(set(stored) - set(cls().get_params()))
        if foreign:
            raise serialization.ModelFileError(f"{path} holds parameters {foreign} that a {cls.__name__} does not "
                                               "take: the file of another estimator, relabelled (damaged or edited)")
        est = cls(**{**stored, **params})
        est._validate_params()          # a file's parameters obey the constraints a fit's do
        with serialization.allocation_limit(content["__file_bytes__"], path):
            model, state = est._model_from_file(content)
        _load_state(model, state)
        model.to(est._device())
        plan, made, kept = est._file_values(content, model)
        result = FitResult(plan, content["mean"].numpy(), content["scale"].numpy(), model, content["history"],
                           content["n_iter"], content["validation_scores"], content["best_iteration"], made)
        fitted.record_file(est, result, n_features=content["n_features_in"],
                           feature_names=content["feature_names_in"],
                           table_encoding=table_encoding_of_file(content, content["feature_names_in"] or []), **kept)
        problems = file_problems(est)
    except serialization.ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as err:
        raise serialization.ModelFileError(f"{path} holds a {cls.__name__} that cannot be rebuilt: {err}") from err
    if problems:
        raise serialization.ModelFileError(f"{path} holds a {cls.__name__} whose header does not fit its tensors "
                                           f"(damaged or edited): " + "; ".join(problems))
    return est


def file_problems(est) -> list[str]:
    """What in a loaded file's header contradicts its tensors: the dtype, the feature count
    (against the standardisation and the model's inputs) and the family's own checks
    (``est._model_problems()``)."""
    dtypes = {str(t.dtype).removeprefix("torch.") for t in est.model_.state_dict().values()
              if t.is_floating_point()}
    problems = [f"dtype {est.dtype!r} over tensors of {sorted(dtypes)}"] if dtypes != {est.dtype} else []
    sizes = {"n_features_in": input_width(est), "the standardisation's mean": len(est.mean_),
             "the standardisation's scale": len(est.scale_), "the model's inputs": est._model_features()}
    if len(set(sizes.values())) > 1:
        problems.append("feature counts differ: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    return problems + est._model_problems()


# ---------------------------------------------------------------------- the model file
def file_content(est, include_training_state: bool) -> dict:
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
            "table_encoding": table_content(est).get("table_encoding"),
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


def model_from_file(content: dict):
    """``(model, state)``: the method rebuilt from a file's plan (the one record of its arguments:
    method, alpha, damping, epsilon, its own parameters, N, exact or sparse; a stream's N is the
    rows it has seen) and its state's shapes."""
    state, plan = content["state"], FitPlan.from_plain(content["fit_plan"])
    unknown = sorted(set(plan.method_params) - set(method_parameters(plan.method)))
    if unknown:
        raise ValueError(f"its plan's method_params name {unknown}, which method {plan.method!r} does not take (its "
                         f"own: {sorted(method_parameters(plan.method))})")
    Z = state["inducing_points"]
    C = len(classes_from_plain(content["classes"]))
    seen = content.get("stream_seen")
    n_data = int(seen[0]) if plan.n_data_grows and seen is not None else plan.n_data
    model = method_of_plan(plan, Z, C, n_data=n_data, site_storage=content["method"]["training_state"])
    return model, state
