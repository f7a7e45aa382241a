"""The two parts of a batch objective, which the trainer scales and sums across processes.

Every method's objective (log Z_q of the EP family, eq. 9 / 12 / A.23; the ELBO of VI, eq. 15;
the alpha-energies of the alpha paper, eq. 8-10; the deep GP's energy, eq. 15-17) has the form

    shared + N / |B| * data,

``shared`` the terms of q and the prior alone (g(q) - g(prior), -KL[q || p]) and ``data`` the sum
over the batch's points of their terms (divided by alpha where the energy has 1/alpha). A method
returns the two parts; the trainer (:mod:`alphagp.training`) applies N / |B| for the global batch
and, in a data-parallel fit, counts ``shared`` once across the processes
(:meth:`~alphagp.distributed.Reducer.share`). Batch-only methods (GFITC, label regression) put
their whole objective in ``shared``.

A method that can split its classes across processes (:mod:`alphagp.distributed`) returns, in
a class split, ``shared`` and ``data`` of its own classes only, and the likelihood's terms, which
couple the classes and which every process computes in full from the gathered marginals, as
``coupled``: the trainer counts ``coupled`` once across a class block's processes in the value
and in full in each process's gradient (which reaches only that process's classes). In one
process ``coupled`` is simply part of the data term.
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class ObjectiveTerms(NamedTuple):
    """``shared``, ``data`` and ``coupled`` (scalar tensors) of a batch objective (module docstring)."""

    shared: torch.Tensor
    data: torch.Tensor
    coupled: torch.Tensor | float = 0.0

    def total(self, n_data: int, batch_size: int) -> torch.Tensor:
        """The objective of one process holding the whole batch of ``batch_size`` rows:
        shared + N / |B| * (data + coupled)."""
        return self.shared + (self.data + self.coupled) * (n_data / batch_size)

    @classmethod
    def batch_only(cls, value: torch.Tensor) -> ObjectiveTerms:
        """The objective of a batch-only method (not a sum over points), all in ``shared``."""
        return cls(value, torch.zeros((), dtype=value.dtype, device=value.device))
