"""The model-file stage of the estimators: data-only files (:mod:`alphagp.serialization`: safetensors
tensors, a JSON header, a format version and a checksum; never pickle) written and read once.

:func:`write` writes the parameters, the standardisation, the training record and the family's
content, and :func:`read` reads a file back through the upgrades of older layouts
(:mod:`.file_upgrades`), the family's rebuild, one writer of the fitted attributes
(:func:`.fitted.record_file`) and the checks of the header against the tensors. The family's part
is its record's hooks (:class:`~.run.Family`: ``file_content``, ``model_from_file``,
``file_values``, ``model_features``, ``model_problems``), in the family's module
(:mod:`.classifier_family`, :mod:`.deep_gp_family`).
"""

from __future__ import annotations

import torch
from sklearn.utils.validation import check_is_fitted

from .. import serialization
from ..labels import params_from_plain, params_to_plain, plain
from . import file_upgrades, fitted
from .inputs import input_width, table_encoding_of_file
from .run import FitResult


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
    training record, and its family's content (the family's ``file_content``; ``options`` are its
    ``save`` method's)."""
    check_is_fitted(est, "model_")
    serialization.write(path, est.MODEL_KIND, {
        "params": params_to_plain(est.get_params()), "n_features_in": int(est.n_features_in_),
        "feature_names_in": plain(getattr(est, "feature_names_in_", None)),
        "mean": torch.as_tensor(est.mean_), "scale": torch.as_tensor(est.scale_),
        "history": est.history_, "n_iter": int(est.n_iter_), "validation_scores": est.validation_scores_,
        "best_iteration": est.best_iteration_, **type(est).FAMILY.file_content(est, **options)})


def read(cls, path, content: dict | None = None, **params):
    """An estimator of class ``cls`` from a file written by :func:`write` (or from its ``content``
    as :func:`~alphagp.serialization.read` returned it, the file read once), its parameters updated
    by ``params``: the file's layout upgraded (:mod:`.file_upgrades`), the family's model rebuilt
    (its ``model_from_file``) and its state loaded, the fitted values the family keeps (its
    ``file_values``) recorded (:func:`.fitted.record_file`), the header checked against the
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
        family = cls.FAMILY
        with serialization.allocation_limit(content["__file_bytes__"], path):
            model, state = family.model_from_file(content, est.dtype)
        _load_state(model, state)
        model.to(est._device())
        plan, made, kept = family.file_values(content, model)
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
    (against the standardisation and the model's inputs) and the family's own checks (its
    ``model_problems``)."""
    dtypes = {str(t.dtype).removeprefix("torch.") for t in est.model_.state_dict().values()
              if t.is_floating_point()}
    problems = [f"dtype {est.dtype!r} over tensors of {sorted(dtypes)}"] if dtypes != {est.dtype} else []
    sizes = {"n_features_in": input_width(est.n_features_in_, getattr(est, "table_encoding_", None)), "the standardisation's mean": len(est.mean_),
             "the standardisation's scale": len(est.scale_),
             "the model's inputs": type(est).FAMILY.model_features(est.model_)}
    if len(set(sizes.values())) > 1:
        problems.append("feature counts differ: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    return problems + type(est).FAMILY.model_problems(est.model_, est.fit_plan_, getattr(est, "classes_", None),
                                                      est.get_params())
