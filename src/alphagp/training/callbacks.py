"""Callbacks for :class:`~alphagp.training.Trainer`: called with the training state after each epoch."""

from __future__ import annotations

import numpy as np

from ..labels import encode_known_labels
from ..metrics import all_metrics
from .loop import TrainingState


class MetricsRecorder:
    """Callback recording test metrics against training time every ``every`` epochs.

    Parameters
    ----------
    predict_proba
        function mapping ``X_test`` to ``[N, C]`` probabilities, typically an
        estimator's bound ``predict_proba``.
    X_test, y_test
        held-out data. ``y_test`` holds labels, as for the estimator's
        ``evaluate``, when ``classes`` is given or ``predict_proba`` is bound to an estimator
        (its ``classes_``, known once ``fit`` has started); otherwise integer class indices
        ``0..C-1`` in the columns' order.
    every
        evaluation period in epochs.
    classes
        the labels of the probability columns (default: the estimator's ``classes_``).
    The rows accumulate in ``self.rows`` and are also added to the training history.
    """

    def __init__(self, predict_proba, X_test, y_test, every: int = 1, classes=None):
        self._metrics = all_metrics
        self.predict_proba, self.X_test, self.y_test, self.every = predict_proba, X_test, y_test, every
        self.classes = classes
        self.rows: list[dict] = []

    def _class_indices(self) -> np.ndarray:
        classes = self.classes
        if classes is None:
            classes = getattr(getattr(self.predict_proba, "__self__", None), "classes_", None)
        if classes is not None:
            return encode_known_labels(self.y_test, np.asarray(classes))
        y = np.asarray(self.y_test)
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError("y_test holds labels, not class indices: pass classes=... (the estimator's classes_) "
                             "or the estimator's bound predict_proba")
        return y

    def __call__(self, state: TrainingState) -> None:
        if state.epoch % self.every:
            return
        row = {"epoch": state.epoch, "train_seconds": state.train_seconds,
               **self._metrics(self.predict_proba(self.X_test), self._class_indices())}
        self.rows.append(row)
        state.history[-1].update({f"test_{k}": v for k, v in row.items() if k not in ("epoch", "train_seconds")})
