"""The predictive uncertainty of a classifier split into its aleatoric and epistemic parts.

For latent values f ~ q(f) (the fitted posterior's marginals, one Gaussian per class) and the
likelihood p(y | f), with p(y) = E_q[p(y | f)] the predictive:

* total: the entropy of the predictive, H[p(y)];
* aleatoric: the expected entropy of the likelihood, E_q[H[p(y | f)]] (the noise of the labels
  that more data would not remove);
* epistemic: their difference, the mutual information between y and f (what more data would
  remove; zero when q is a point mass).

All three are estimated from the same ``n_samples`` draws of f per row (nats), so total =
aleatoric + epistemic holds exactly and epistemic >= 0 (the entropy is concave).
"""

from __future__ import annotations

import numpy as np
import torch

from .numerics import rows_per_block


def decompose(likelihood, mean: torch.Tensor, var: torch.Tensor, n_samples: int,
              generator: torch.Generator, n_classes: int | None = None) -> torch.Tensor:
    """``[N, 3]``: total, aleatoric and epistemic uncertainty (nats) of rows whose latent marginals
    are ``mean``, ``var`` ``[N, H]``, or ``[K, N, H]`` for an equal mixture of K Gaussians per row
    (a deep GP's propagated samples), from ``n_samples`` draws of f per row and component
    (``generator`` on the CPU). ``n_classes``: the labels the likelihood takes (default H; 2 for
    the probit likelihood's single output). The draws are taken in blocks of rows whose
    ``[S K, rows, C, H]`` temporaries stay within :data:`~alphagp.numerics.QUADRATURE_BLOCK_BYTES`."""
    if mean.dim() == 2:
        mean, var = mean[None], var[None]
    K, N, H = mean.shape
    C = H if n_classes is None else n_classes
    out = torch.empty(N, 3, dtype=mean.dtype, device=mean.device)
    rows = rows_per_block(n_samples * K * C * H * mean.element_size() * 2)
    for r in range(0, N, rows):
        m, sd = mean[:, r:r + rows], var[:, r:r + rows].sqrt()                   # [K, R, H]
        eps = torch.randn(n_samples, *m.shape, dtype=m.dtype, generator=generator).to(m.device)
        f = (m + sd * eps).reshape(n_samples * K, *m.shape[1:])                  # [S K, R, H]
        labels = torch.arange(C, device=m.device)
        log_p = torch.stack([likelihood.log_prob(f, labels[c].expand(m.shape[1])) for c in range(C)], -1)
        log_p = torch.log_softmax(log_p, -1)                                     # [S K, R, C], rows sum to one
        p = log_p.exp()
        # 0 log 0 = 0: a deterministic labelling (the Heaviside likelihood) has log p = -inf off the arg-max
        aleatoric = -torch.where(p > 0, p * log_p, 0.0).sum(-1).mean(0)
        mean_p = p.mean(0)
        total = -(mean_p * torch.log(mean_p.clamp_min(torch.finfo(mean_p.dtype).tiny))).sum(-1)
        out[r:r + rows] = torch.stack((total, aleatoric, (total - aleatoric).clamp_min(0.0)), -1)
    return out


def draw_generator(n_samples, random_state) -> torch.Generator:
    """The CPU generator of an estimator's ``predict_uncertainty`` draws (seeded by
    ``random_state``; ``None``: 0), after checking ``n_samples`` (an integer of at least 2)."""
    if not isinstance(n_samples, (int, np.integer)) or isinstance(n_samples, bool) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer of at least 2, got {n_samples!r}")
    return torch.Generator().manual_seed(0 if random_state is None else int(random_state))


def named(parts) -> dict:
    """``{"total", "aleatoric", "epistemic"}`` ``[N]`` each, from :func:`decompose`'s ``[N, 3]``."""
    parts = np.asarray(parts)
    return {"total": parts[:, 0], "aleatoric": parts[:, 1], "epistemic": parts[:, 2]}
