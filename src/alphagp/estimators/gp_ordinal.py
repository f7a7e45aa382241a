"""Gaussian-process classification of ordered classes (grades): one latent function and ordered
cut points (Chu & Ghahramani 2005), fitted by EP, power EP or VI through the classifier's one
path (:class:`~alphagp.GPClassifier`), with the grades kept in their order.
"""

from __future__ import annotations

import inspect
from typing import ClassVar

import numpy as np

from ..labels import check_grades, encode_ordered_labels, grade_order
from ..methods import ordinal_methods
from .classifier_family import GP_ORDINAL_CLASSIFIER
from .gp_classifier import GPClassifier

MODEL_KIND = "alphagp.GPOrdinalClassifier"


class GPOrdinalClassifier(GPClassifier):
    """Gaussian-process classifier of ordered classes, such as grades, ratings or severity levels.

    One latent function f and K - 1 ordered cut points b_0 < ... < b_{K-2} give the K grades
    p(y = k | f) = Phi(b_k - f) - Phi(b_{k-1} - f) (the probit ordinal likelihood,
    :class:`~alphagp.likelihoods.OrdinalLikelihood`); the cut points are learnt with the kernel.
    Where a multi-class :class:`~alphagp.GPClassifier` gives every class its own latent function
    and knows no order, this model places neighbouring grades next to each other on one scale.

    Every parameter is :class:`~alphagp.GPClassifier`'s, with two differences:

    Parameters
    ----------
    grades : array-like or None
        The labels in their order, lowest first. ``None``: the order of a pandas ordered
        categorical ``y`` (its categories), else the sorted labels (numbers ascending; text in its
        characters' order, '1' < '10' < '2', with a warning that asks for ``grades``). Every label
        of ``y`` must be among them; a grade no training row has is allowed (its probability comes
        from the cut points around it).
    method : str
        A method for ordered classes (``alphagp methods``): ``"ordinal_ep"`` (EP, the default),
        ``"ordinal_pep"`` (power EP, with ``alpha``) or ``"ordinal_vi"`` (sparse VI, which also
        streams with ``partial_fit``).

    Attributes
    ----------
    classes_ : array of the grades in their order (the columns of :meth:`predict_proba`).
    cut_points_ : array ``[K - 1]`` of the learnt cut points on the latent scale.

    The other attributes are :class:`~alphagp.GPClassifier`'s. ``partial_fit``'s ``classes``
    lists the grades in their order (``grades``, where set, wins).
    """

    FAMILY = GP_ORDINAL_CLASSIFIER
    _parameter_constraints: ClassVar[dict] = {**GPClassifier._parameter_constraints, "grades": ["array-like", None]}
    MODEL_KIND = MODEL_KIND

    def __init__(self, *, grades=None, **params):
        super().__init__(**{"method": "ordinal_ep", **params})
        self.grades = grades

    def fit(self, X, y, sample_weight=None, callbacks=None):
        """Fit the classifier to features ``X`` ``[N, D]`` and grades ``y`` ``[N]`` (any labels; see
        ``grades`` for their order). ``sample_weight`` and ``callbacks`` as
        :meth:`GPClassifier.fit`."""
        self._check_method()
        self._order = None if y is None else grade_order(y, self.grades)      # None: fit's own error follows
        if self._order is not None and len(self._order) < 2:
            raise ValueError(f"GPOrdinalClassifier needs at least 2 classes in y; got only one class, {self._order}")
        try:
            return super().fit(X, y, sample_weight=sample_weight, callbacks=callbacks)
        finally:
            del self._order

    @classmethod
    def methods_taken(cls) -> list[str]:
        """The methods for ordered classes (no ``"auto"``)."""
        return ordinal_methods()

    def _check_method(self) -> None:
        methods = self.methods_taken()
        if self.method not in methods:
            raise ValueError(f"GPOrdinalClassifier needs a method for ordered classes, one of {methods}; got "
                             f"method={self.method!r} (GPClassifier fits unordered classes)")

    def _fit_targets(self, y):
        return encode_ordered_labels(y, self._order, declared=self.grades is not None)

    def _stream_classes(self, classes) -> np.ndarray:
        self._check_method()
        grades = list(classes) if self.grades is None else check_grades(self.grades)
        return encode_ordered_labels(classes, grades, declared=self.grades is not None)[0]

    @property
    def cut_points_(self) -> np.ndarray:
        """``[K - 1]`` the learnt cut points b_0 < ... < b_{K-2} on the latent scale."""
        return self.model_.likelihood.cut_points().detach().cpu().numpy()

    def predict_latent(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``(mean [N], std [N])`` of the latent function f at ``X`` (the kernel's noise included):
        the position of each row on the scale the cut points divide."""
        mean, std = self.predict_f(X, return_std=True)
        return mean[:, 0], std[:, 0]

    def predict_median(self, X) -> np.ndarray:
        """``[N]`` the median grade of each row: the lowest grade whose cumulative probability
        reaches one half."""
        cumulative = np.cumsum(self.predict_proba(X), 1)
        return self.classes_[np.minimum((cumulative < 0.5).sum(1), len(self.classes_) - 1)]

    def predict_mean(self, X) -> np.ndarray:
        """``[N]`` the expected grade: sum_k p_k g_k over the grades g_k where they are numbers, else
        over their positions 0..K-1 (a grade between two labels is a position between them)."""
        proba = self.predict_proba(X)
        values = self.classes_ if np.issubdtype(np.asarray(self.classes_).dtype, np.number) \
            else np.arange(len(self.classes_))
        return proba @ np.asarray(values, dtype=np.float64)


def _signature() -> inspect.Signature:
    """GPClassifier's keyword parameters with ``grades`` first and ``method`` defaulting to
    ``"ordinal_ep"``: the signature scikit-learn reads for ``get_params`` and ``clone``."""
    base = inspect.signature(GPClassifier.__init__)
    params = [p.replace(default="ordinal_ep") if p.name == "method" else p for p in base.parameters.values()]
    grades = inspect.Parameter("grades", inspect.Parameter.KEYWORD_ONLY, default=None)
    return base.replace(parameters=[params[0], grades, *params[1:]])


GPOrdinalClassifier.__init__.__signature__ = _signature()
