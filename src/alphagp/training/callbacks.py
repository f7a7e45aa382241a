"""Callbacks for :class:`~alphagp.training.Trainer`: called with the training state after each epoch."""

from __future__ import annotations

import numpy as np

from ..labels import encode_known_labels
from ..metrics import all_metrics
from .loop import TrainingState


class MetricsRecorder:
    """Callback recording test metrics against training time every ``every`` epochs::

        recorder = MetricsRecorder(X_test, y_test)
        GPClassifier().fit(X, y, callbacks=[recorder])      # recorder.rows: a dict per evaluation

    The probabilities are those of the fit so far (``state.fit_so_far.predict_proba``: an
    estimator's fit hands its callbacks a copy of itself holding the model in training).

    Parameters
    ----------
    X_test, y_test
        held-out data; ``y_test`` holds labels, as for the estimator's ``evaluate`` (integer
        class indices ``0..C-1`` in the columns' order where neither ``classes`` nor the fit so
        far names the labels).
    every
        evaluation period in epochs.
    classes
        the labels of the probability columns (default: the fit so far's ``classes_``).
    predict_proba
        function mapping ``X_test`` to ``[N, C]`` probabilities, for a
        :class:`~alphagp.training.Trainer` driven directly (no fit so far); default the fit so
        far's ``predict_proba``.

    The rows accumulate in ``self.rows`` and are also added to the training history.
    """

    def __init__(self, X_test, y_test, every: int = 1, classes=None, predict_proba=None):
        if callable(X_test):
            raise TypeError("MetricsRecorder(X_test, y_test, ...) takes the held-out rows first; it predicts with "
                            "the fit so far that fit hands its callbacks (state.fit_so_far), so an estimator's "
                            "predict_proba is no longer passed (give predict_proba=... only to drive a Trainer "
                            "directly)")
        self._metrics = all_metrics
        self.X_test, self.y_test, self.every = X_test, y_test, every
        self.classes, self.predict_proba = classes, predict_proba
        self.rows: list[dict] = []

    def _class_indices(self, fit_so_far) -> np.ndarray:
        classes = self.classes if self.classes is not None else getattr(fit_so_far, "classes_", None)
        if classes is not None:
            return encode_known_labels(self.y_test, np.asarray(classes))
        y = np.asarray(self.y_test)
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError("y_test holds labels, not class indices: pass classes=... (the estimator's classes_)")
        return y

    def __call__(self, state: TrainingState) -> None:
        if state.epoch % self.every:
            return
        fit_so_far = state.fit_so_far
        predict_proba = self.predict_proba or getattr(fit_so_far, "predict_proba", None)
        if predict_proba is None:
            raise ValueError("MetricsRecorder has nothing to predict with: the trainer was given no fit so far "
                             "(an estimator's fit gives one); pass predict_proba=...")
        row = {"epoch": state.epoch, "train_seconds": state.train_seconds,
               **self._metrics(predict_proba(self.X_test), self._class_indices(fit_so_far))}
        self.rows.append(row)
        state.history[-1].update({f"test_{k}": v for k, v in row.items() if k not in ("epoch", "train_seconds")})
