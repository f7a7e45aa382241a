"""One training loop for every method: batches, optimiser, local updates, callbacks, checkpoints.

Each epoch visits the data once, in mini-batches drawn without replacement from a seeded
permutation (or as one batch in batch training). Per batch the loop calls
``method.local_update`` (closed-form refinement, e.g. EP site updates; a method without one
just evaluates its objective), which returns the batch's differentiable objective, and takes
one optimiser step on ``-objective / N``. Inputs may be in-memory arrays or NumPy
memory-maps; only the rows of the current batch are read. With ``distributed=True`` each
process of a ``torch.distributed`` group computes its share of every batch and the objective
and gradients are summed across processes before the step (:mod:`alphagp.distributed`).

A checkpoint written at the end of an epoch holds the method, the optimiser, the random
generator, the history and the early-stopping state, so a fit interrupted at any point and
started again with the same checkpoint path ends with the same result as an uninterrupted one.
It is a data-only file (:mod:`alphagp.serialization`) that also records a fingerprint of the
training data and of the settings that define the model; resuming with other data or other
settings raises :class:`CheckpointMismatchError` naming what differs.

The package's modules: :mod:`.loop` (:class:`Trainer`, :class:`TrainingState`), :mod:`.checkpoints`
(the file, the fingerprint and the errors), :mod:`.progress`, :mod:`.callbacks`
(:class:`MetricsRecorder`); the optimisers are in :mod:`alphagp.training.optim`.
"""

from .callbacks import MetricsRecorder
from .checkpoints import CHECKPOINT_KIND, CheckpointMismatchError, CheckpointResumed, data_fingerprint
from .loop import Trainer, TrainingState, uses_mini_batches

__all__ = ["CHECKPOINT_KIND", "CheckpointMismatchError", "CheckpointResumed", "MetricsRecorder", "Trainer",
           "TrainingState", "data_fingerprint", "uses_mini_batches"]
