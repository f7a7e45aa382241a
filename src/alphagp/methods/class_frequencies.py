"""The class frequencies: the classifier that ignores the features and predicts every row's class
by the training rows' (weighted) class counts, each plus one half (the Jeffreys prior's, so no
class gets probability 0).

Not a GP method but the bar every one of them must clear: a model that predicts worse than this on
held-out rows says less about the labels than their proportions do. ``method="auto"`` scores it on
the same held-out rows as its other candidates and keeps it, with a warning, where nothing beats
it (a tiny table whose features carry little). It is one closed-form step: the counts, to which a stream's calls add theirs.
"""

from __future__ import annotations

from typing import ClassVar

import torch

from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, Capabilities, SparseGPMethod

#: the count added to every class (Jeffreys' prior for a categorical distribution)
PRIOR_COUNT = 0.5


class ClassFrequencies(SparseGPMethod):
    """Predicts the training class frequencies (module docstring); the kernel and the inducing inputs
    it is built with are placeholders it never reads.

    Parameters
    ----------
    inducing_points, kernel, likelihood
        as every method takes them (unused).
    n_data
        N, the training rows.
    """

    CAPABILITIES = Capabilities(batch_optimizer="lbfgs", mini_batches=False, sample_weight=True, closed_form=True,
                                streaming=True)
    #: nothing to start or to place: one kernel, one inducing input
    AUTO_SETTINGS: ClassVar[dict] = {"kernel_init": "fixed", "shared_hyperparameters": True, "n_inducing": 1}
    SCIKIT_LEARN_EXPECTED_FAILURES: ClassVar[dict[str, str]] = {
        "check_classifiers_train": "the class frequencies ignore the features: their training accuracy is the "
                                   "majority class's, below the check's 0.83 on its blobs"}
    REFUSES: ClassVar[dict[str, str]] = dict.fromkeys(
        ("alpha", "epsilon", "damping"), "the class frequencies read only the labels' counts")

    def __init__(self, inducing_points: torch.Tensor, kernel, likelihood, n_data: int):
        super().__init__(inducing_points, kernel, likelihood)
        self.n_data = int(n_data)
        self.register_buffer("class_counts", torch.zeros(self.n_classes, dtype=inducing_points.dtype))

    def _counts(self, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        weight = None if self.sample_weight is None else self.sample_weight[idx.to(self.sample_weight.device)]
        return torch.bincount(y, weights=weight, minlength=self.n_classes).to(self.class_counts.dtype)

    def state_problems(self) -> list[str]:
        """Class counts that are negative or not finite."""
        counts = self.class_counts
        if bool(torch.all(torch.isfinite(counts) & (counts >= 0))):
            return []
        return [f"class counts {counts.tolist()} that are not non-negative and finite"]

    def _log_probabilities(self) -> torch.Tensor:
        counts = self.class_counts + PRIOR_COUNT
        return torch.log(counts / counts.sum())

    def _objective(self, _X, y, idx):
        """The labels' log-likelihood under the frequencies of ``y``'s counts (no parameter moves it)."""
        counts = self._counts(y, idx)
        log_p = torch.log((counts + PRIOR_COUNT) / (counts + PRIOR_COUNT).sum())
        return ObjectiveTerms.batch_only((counts * log_p).sum())

    def objective(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return self._objective(X, y, idx).total(self.n_data, idx.numel())

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """The rows' class counts (kept for prediction) and their log-likelihood."""
        if self.reducer.batch_size(idx.numel()) != self.n_data:
            raise ValueError("the class frequencies count every training row at once (batch only)")
        with torch.no_grad():
            self.class_counts.copy_(self._counts(y, idx))
        return self._objective(X, y, idx)

    @torch.no_grad()
    def absorb(self, X: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None = None) -> None:  # noqa: ARG002
        """Add the (weighted) class counts of a stream call's rows (class indices ``y`` ``[B]``, weights
        ``weight`` ``[B]`` or ``None``; their features ``X`` ``[B, D]`` unread) to the counts."""
        self.class_counts.add_(torch.bincount(y, weights=weight, minlength=self.n_classes).to(self.class_counts))

    @torch.no_grad()
    def predict_f(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The log frequencies as every row's latent means ``[n, C]``, with no spread."""
        mean = self._log_probabilities().expand(X.shape[0], -1).clone()
        return mean, torch.full_like(mean, MIN_VARIANCE)

    @torch.no_grad()
    def predict_proba(self, X: torch.Tensor) -> torch.Tensor:
        """``[n, C]`` the frequencies for every row."""
        return self._log_probabilities().exp().expand(X.shape[0], -1).clone()
