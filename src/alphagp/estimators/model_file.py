"""The model-file stage of the estimators: data-only files (:mod:`alphagp.serialization`: safetensors
tensors, a JSON header, a format version and a checksum; never pickle) written and read once.

:class:`EstimatorFiles` (a mixin of :class:`~alphagp.estimators.base.GPEstimatorBase`) writes the
parameters, the standardisation, the training record and each family's content (its hooks), and
reads a file back through the upgrades of older layouts (:mod:`.file_upgrades`), the family's
rebuild and the checks of the header against the tensors. The functions below are
:class:`~alphagp.GPClassifier`'s part: its content, the fitted attributes a file restores, and its
model rebuilt from the file's plan.
"""

from __future__ import annotations

import torch
from sklearn.utils.validation import check_is_fitted

from .. import serialization
from ..kernel_start import KernelStart
from ..labels import classes_from_plain, classes_to_plain, plain
from ..methods import method_parameters
from ..training.checkpoints import optimizer_from_plain, optimizer_to_plain
from . import file_upgrades, fitted
from .build import method_of_plan
from .fit_plan import FitPlan


def _load_state(model, state: dict) -> None:
    """``model.load_state_dict(state)``, its error (missing, unexpected or misshapen tensors, which
    PyTorch spreads over several lines) as one ``ValueError`` line for the file's refusal."""
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        lines = [line.strip() for line in str(err).splitlines()[1:] if line.strip()]
        raise ValueError("its tensors do not fit the model its header describes: " + "; ".join(lines)) from None


class EstimatorFiles:
    """The model files of the estimators (module docstring): a subclass sets ``MODEL_KIND`` and
    implements :meth:`_file_content`, :meth:`_model_from_file` and :meth:`_restore`."""

    def _plain_params(self) -> dict:
        """The parameters as JSON-ready data; a ``class_weight`` dict as ``[[label, weight], ...]``
        (JSON's keys are strings, labels need not be; :meth:`_params_from_plain` undoes it)."""
        params = self.get_params()
        class_weight = params.pop("class_weight", None)
        params = plain(params)
        if "class_weight" in self.get_params():
            params["class_weight"] = ([[plain(label), float(w)] for label, w in class_weight.items()]
                                      if isinstance(class_weight, dict) else class_weight)
        return params

    @staticmethod
    def _params_from_plain(params: dict) -> dict:
        """The estimator parameters of :meth:`_plain_params`'s data."""
        if isinstance(params.get("class_weight"), list):
            return {**params, "class_weight": {label: w for label, w in params["class_weight"]}}
        return params

    # ------------------------------------------------------------------ files
    def _file_content(self, **options) -> dict:
        """What the subclass adds to its model file (the model's configuration and state);
        ``options`` are its ``save`` method's."""
        raise NotImplementedError

    def _model_from_file(self, content: dict):
        """The subclass's model rebuilt from the file's ``content`` with placeholder values, and
        the state dict to load into it: ``(model, state)``."""
        raise NotImplementedError

    def _restore(self, content: dict) -> None:
        """Set the fitted attributes the subclass keeps in its model file (after the model's state)."""

    def _write(self, path, **options) -> None:
        """Write the fitted estimator to ``path`` (``options`` go to :meth:`_file_content`)."""
        check_is_fitted(self, "model_")
        serialization.write(path, self.MODEL_KIND, {
            "params": self._plain_params(), "n_features_in": int(self.n_features_in_),
            "feature_names_in": plain(getattr(self, "feature_names_in_", None)),
            "mean": torch.as_tensor(self.mean_), "scale": torch.as_tensor(self.scale_),
            "history": self.history_, "n_iter": int(self.n_iter_), "validation_scores": self.validation_scores_,
            "best_iteration": self.best_iteration_, **self._file_content(**options)})

    @classmethod
    def _read(cls, path, content: dict | None = None, **params):
        """An estimator from a file written by :meth:`_write` (or from its ``content`` as
        :func:`~alphagp.serialization.read` returned it, the file read once), its parameters updated
        by ``params``. Raises :class:`~alphagp.serialization.ModelFileError` for another kind of
        file, a damaged one, or one whose model cannot be rebuilt."""
        if content is None:
            content = serialization.read(path, cls.MODEL_KIND)
        try:
            content = file_upgrades.upgrade(content)
            stored = cls._params_from_plain(content["params"])
            foreign = sorted(set(stored) - set(cls().get_params()))
            if foreign:
                raise serialization.ModelFileError(f"{path} holds parameters {foreign} that a {cls.__name__} does not "
                                                   "take: the file of another estimator, relabelled (damaged or edited)")
            est = cls(**{**stored, **params})
            est._validate_params()          # a file's parameters obey the constraints a fit's do
            fitted.record_input(est, content["n_features_in"], content["feature_names_in"])
            fitted.record_standardisation(est, content["mean"].numpy(), content["scale"].numpy())
            fitted.record_training(est, content["history"], content["n_iter"], content["validation_scores"],
                                   content["best_iteration"])
            with serialization.allocation_limit(content["__file_bytes__"], path):
                model, state = est._model_from_file(content)
            _load_state(model, state)
            fitted.record_model(est, model)
            est._restore(content)
            problems = est._file_problems()
        except serialization.ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError) as err:
            raise serialization.ModelFileError(f"{path} holds a {cls.__name__} that cannot be rebuilt: {err}") from err
        if problems:
            raise serialization.ModelFileError(f"{path} holds a {cls.__name__} whose header does not fit its tensors "
                                               f"(damaged or edited): " + "; ".join(problems))
        return est

    def _file_problems(self) -> list[str]:
        """What in a loaded file's header contradicts its tensors: the dtype, the feature count
        (against the standardisation and the model's inputs) and the subclass's own checks
        (:meth:`_model_problems`)."""
        dtypes = {str(t.dtype).removeprefix("torch.") for t in self.model_.state_dict().values()
                  if t.is_floating_point()}
        problems = [f"dtype {self.dtype!r} over tensors of {sorted(dtypes)}"] if dtypes != {self.dtype} else []
        sizes = {"n_features_in": self._input_width(), "the standardisation's mean": len(self.mean_),
                 "the standardisation's scale": len(self.scale_), "the model's inputs": self._model_features()}
        if len(set(sizes.values())) > 1:
            problems.append("feature counts differ: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
        return problems + self._model_problems()

    def _model_features(self) -> int:
        """The input dimension of the fitted model's tensors."""
        raise NotImplementedError

    def _model_problems(self) -> list[str]:
        """The subclass's checks of a loaded file's header against its model (class count, ...)."""
        return []


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
            "table_encoding": est._table_content().get("table_encoding"),
            "stream_optimizer": optimizer_to_plain(getattr(est, "_stream_optimizer", None)),
            "stream_seen": plain(getattr(est, "_stream_seen", None))}


def restore(est, content: dict) -> None:
    """The fitted attributes a model file's ``content`` keeps beside the model (after its state is
    loaded): the plan and what it decides, the kernel start, the selection's scores,
    the conformity scores, a stream's optimiser state and the table encoding (checked against the
    input columns)."""
    est.model_.to(est._device())
    fitted.record_plan(est, FitPlan.from_plain(content["fit_plan"]))      # older files' upgraded to one
    start = content.get("kernel_start")                # files before the kernel start have none
    fitted.record_model(est, est.model_, kernel_start=None if start is None else KernelStart.from_plain(start))
    scores, classes = content.get("conformity_scores"), content.get("conformity_classes")
    fitted.record_conformity(est, None if scores is None else scores.numpy(), None if classes is None else classes.numpy())
    est._stream_optimizer = optimizer_from_plain(content.get("stream_optimizer"))
    seen = content.get("stream_seen")                  # a stream's rows and weight so far (files before: none)
    est._stream_seen = None if seen is None else (int(seen[0]), float(seen[1]))
    est._restore_table(content)
    if content.get("selection"):                       # method="auto" (files before it have none)
        selection = content["selection"]
        fitted.record_selection(est, str(selection["candidate"]), str(selection["scheme"]), selection["cv_results"])
    fitted.record_diagnostics(est)


def model_from_file(est, content: dict):
    """``(model, state)``: the method rebuilt from a file's plan (the one record of its arguments:
    method, alpha, damping, epsilon, its own parameters, N, exact or sparse; a stream's N is the
    rows it has seen) and its state's shapes (sets ``est.classes_``)."""
    fitted.record_classes(est, classes_from_plain(content["classes"]))
    state, plan = content["state"], FitPlan.from_plain(content["fit_plan"])
    unknown = sorted(set(plan.method_params) - set(method_parameters(plan.method)))
    if unknown:
        raise ValueError(f"its plan's method_params name {unknown}, which method {plan.method!r} does not take (its "
                         f"own: {sorted(method_parameters(plan.method))})")
    Z = state["inducing_points"]
    C = len(est.classes_)
    seen = content.get("stream_seen")
    n_data = int(seen[0]) if plan.n_data_grows and seen is not None else plan.n_data
    model = method_of_plan(plan, Z, C, n_data=n_data, site_storage=content["method"]["training_state"])
    return model, state
