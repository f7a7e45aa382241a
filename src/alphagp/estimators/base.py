"""What both estimator families share (:class:`~alphagp.GPClassifier` and the deep-GP
estimators): their common parameters, the device, how a fit of theirs is run (:func:`.run.run`'s
settings, computed before it) and the predictor of a fitted model. The stages are modules of
functions: :mod:`.inputs`, :mod:`.fit_plan`, :mod:`.run`, :mod:`.model_file`; the fitted
attributes are written in :mod:`.fitted`."""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from numbers import Integral, Real
from typing import ClassVar

import torch
from sklearn.base import BaseEstimator

from ..constraints import Interval, StrOptions
from ..devices import device_of
from ..labels import params_to_plain
from . import fitted
from .fit_plan import DTYPES
from .run import Predictor, Settings

#: scikit-learn's estimator checks that the alphagp estimators fail by design, with the reason
#: (``check_estimator(est, expected_failed_checks=EXPECTED_FAILED_CHECKS)``)
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data":
        "an integer weight is the row repeated given the same start (tests/estimators/test_sample_weight.py), but the "
        "start depends on the rows: inducing inputs drawn from them, and the held-out splits",
}
#: scikit-learn's checks of sample weights, which a method that takes none (``Capabilities.sample_weight``
#: false) refuses in one line naming the methods that do
SAMPLE_WEIGHT_CHECKS = ("check_sample_weights_pandas_series", "check_sample_weights_not_an_array",
                        "check_sample_weights_list", "check_all_zero_sample_weights_error",
                        "check_sample_weights_shape", "check_sample_weights_not_overwritten",
                        "check_classifiers_one_label_sample_weights", "check_class_weight_classifiers")


def expected_failed_checks(method: str) -> dict[str, str]:
    """scikit-learn's estimator checks that a GPClassifier of the registered ``method`` fails by design,
    with the reason (``check_estimator(est, expected_failed_checks=...)``): :data:`EXPECTED_FAILED_CHECKS`,
    the sample-weight checks where the method takes no weights, and the method's own
    (``SCIKIT_LEARN_EXPECTED_FAILURES``: the class frequencies ignore the features)."""
    from ..methods import METHODS
    cls = METHODS[method].cls
    no_weights = {} if cls.CAPABILITIES.sample_weight else dict.fromkeys(
        SAMPLE_WEIGHT_CHECKS, f"method={method!r} takes no sample weights: it refuses them in one line that names "
                              "the methods that do")
    return {**EXPECTED_FAILED_CHECKS, **no_weights, **cls.SCIKIT_LEARN_EXPECTED_FAILURES}


class GPEstimatorBase(BaseEstimator):
    """Shared parameters and settings of the estimators. A subclass sets ``MODEL_KIND`` (its model
    files' kind), ``SCHEDULE_PARAMS`` (the parameters a resumed checkpoint may change: the schedule
    and how a fit is run), ``PARAMS_ADDED`` where it has parameters newer than its checkpoints, and
    the model-file hooks of :mod:`.model_file`."""

    #: the parameter constraints both estimator families share (each extends them with its own)
    SHARED_CONSTRAINTS: ClassVar[dict] = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "learning_rate_decay": [Interval(Real, 0, 1, closed="right"), StrOptions({"cosine"})],
        "standardize": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "checkpoint": [str, os.PathLike, None],
        "dtype": [StrOptions(set(DTYPES))],
        "n_jobs": [Integral, None],
        "device": [str, torch.device, None],
        "verbose": ["verbose"],
    }
    MODEL_KIND: ClassVar[str] = ""
    SCHEDULE_PARAMS: ClassVar[tuple[str, ...]] = ("max_iter", "max_time", "learning_rate", "learning_rate_decay",
                                                  "tol", "n_iter_no_change", "checkpoint", "verbose", "n_jobs")
    #: parameters added after checkpoints existed, each with the value that gives the fits of before
    #: it: a checkpoint records such a parameter only at another value, so older checkpoints resume
    PARAMS_ADDED: ClassVar[dict] = {}
    #: the plan's values a checkpoint records in place of the parameters' (their "auto" resolved)
    PLAN_SETTINGS: ClassVar[tuple[str, ...]] = ()
    #: whether a checkpoint records the estimator's class (the deep GPs' two share their parameters)
    NAMED_CHECKPOINTS: ClassVar[bool] = False

    def _set_training_params(self, *, max_iter, max_time, learning_rate_decay, early_stopping, validation_fraction,
                             tol, n_iter_no_change, checkpoint, dtype, n_jobs, device, distributed, verbose,
                             random_state, categorical_features) -> None:
        """Keep the parameters both families take, as given (scikit-learn's ``__init__`` convention: no
        logic; each estimator's ``__init__`` names them in its signature and hands them here)."""
        self.max_iter = max_iter
        self.max_time = max_time
        self.learning_rate_decay = learning_rate_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.checkpoint = checkpoint
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.device = device
        self.distributed = distributed
        self.verbose = verbose
        self.random_state = random_state
        self.categorical_features = categorical_features

    def _device(self) -> torch.device:
        """``device`` as a ``torch.device`` (``None``: the CPU); a clear error if it is not usable."""
        return device_of(self.device)

    def _settings(self, plan, callbacks, made: dict, own: bool = True) -> Settings:
        """How :func:`.run.run` runs ``plan`` for this estimator: its checkpoint and the settings a
        checkpoint records and a resumed fit must match (the parameters but the schedule's, as plain
        data, with the plan's values of ``PLAN_SETTINGS``; :func:`.run.run` adds a digest of the
        rows' weights), progress, threads, data-parallel mode and ``callbacks``, which, where given,
        predict with ``state.fit_so_far``: a copy of the estimator holding the fit so far (the model
        in training, the values of ``made``). The estimator's own fitted values are written when the
        fit ends; with callbacks its model of an earlier fit is dropped as this one starts, so a
        callback that reads the estimator instead fails rather than scoring the old model. ``own=False``: a selection's scored fit, without the estimator's checkpoint,
        progress or callbacks."""
        if not own:
            return Settings(n_jobs=self.n_jobs, distributed=self.distributed)
        in_training = None
        if callbacks:
            self.__dict__.pop("model_", None)

            def in_training(partial):
                fit_so_far = copy.copy(self)
                fitted.record_fit(fit_so_far, replace(partial, made={**made, **partial.made}))
                return fit_so_far
        settings = {}
        if self.checkpoint is not None:                  # what only a checkpoint reads
            settings = {k: v for k, v in params_to_plain(self.get_params()).items() if k not in self.SCHEDULE_PARAMS}
            settings.update({k: getattr(plan, k) for k in self.PLAN_SETTINGS})
            settings = {k: v for k, v in settings.items()
                        if not (k in self.PARAMS_ADDED and v == self.PARAMS_ADDED[k])}
            if "categorical_features" in settings:      # what the fit read: a numeric fit reads the same rows
                settings["categorical_features"] = "from_dtype" if hasattr(self, "table_encoding_") else None
            if self.NAMED_CHECKPOINTS:
                settings = {"estimator": type(self).__name__, **settings}
        return Settings(checkpoint=self.checkpoint, checkpoint_settings=settings,
                        callbacks=callbacks, verbose=self.verbose if self.verbose == "auto" else bool(self.verbose),
                        n_jobs=self.n_jobs,
                        distributed=self.distributed, in_training=in_training)

    def _predictor(self) -> Predictor:
        """The fitted model's :class:`~.run.Predictor`: its standardisation, dtype, device and threads."""
        return Predictor(self.model_, self.mean_, self.scale_, DTYPES[self.dtype], self._device(), self.n_jobs)
