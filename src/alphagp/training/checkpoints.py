"""Checkpoints of a fit: a data-only file (:mod:`alphagp.serialization`) with the method, the
optimiser, the random generator and the training state, and a fingerprint of the training data
and of the settings that define the model, compared when a fit resumes."""

from __future__ import annotations

import hashlib
import os

import numpy as np

from .. import serialization

CHECKPOINT_KIND = "alphagp.checkpoint"


class CheckpointMismatchError(ValueError):
    """A checkpoint written for other data or other settings than the fit that found it."""


class CheckpointResumed(UserWarning):
    """A fit continued from (or returned) the state stored in its checkpoint."""


def data_fingerprint(X, y, n_rows: int = 1000) -> dict:
    """Shape of ``X`` ``[N, D]`` and a SHA-256 of up to ``n_rows`` evenly spaced rows and all labels
    (or real targets).

    Cheap for any N (reads at most ``n_rows`` rows of a memory-map) and changes with the data
    in all but contrived cases (same sampled rows, same labels, same shape).
    """
    n = len(y)
    rows = np.unique(np.linspace(0, n - 1, min(n, n_rows)).astype(np.int64))
    digest = hashlib.sha256(np.ascontiguousarray(np.asarray(X[rows], dtype=np.float64)).tobytes())
    kind = np.float64 if np.issubdtype(np.asarray(y[:1]).dtype, np.floating) else np.int64  # regression targets
    for start in range(0, n, 1_000_000):  # labels as int64, a chunk at a time (same digest, no copy of all)
        digest.update(np.ascontiguousarray(np.asarray(y[start:start + 1_000_000], dtype=kind)).tobytes())
    return {"shape": [int(n), int(X.shape[1])], "sha256": digest.hexdigest()}


def _differences(saved: dict, current: dict) -> list[str]:
    keys = sorted(set(saved) | set(current))
    return [f"{k}: {saved.get(k, '(absent)')!r} in the checkpoint, {current.get(k, '(absent)')!r} now"
            for k in keys if saved.get(k) != current.get(k)]


def optimizer_to_plain(state: dict | None) -> dict | None:
    """An optimiser's ``state_dict`` as a data-only file stores it (its per-parameter state keyed
    by strings, JSON's keys); :func:`optimizer_from_plain` undoes it."""
    if state is None:
        return None
    return {"state": {str(k): v for k, v in state["state"].items()}, "param_groups": state["param_groups"]}


def optimizer_from_plain(state: dict | None) -> dict | None:
    """The ``state_dict`` of :func:`optimizer_to_plain`'s data (``None`` or empty: none)."""
    if not state:
        return None
    return {"state": {int(k): v for k, v in state["state"].items()}, "param_groups": state["param_groups"]}


def write_checkpoint(path: str | os.PathLike, fingerprint: dict, method_state: dict, optimizer_state: dict | None,
                     generator_state, training_state: dict, best_state: dict | None = None) -> None:
    """Write a checkpoint: the fit's ``fingerprint`` (data and settings), the method's and the
    optimiser's state dicts, the batch-order generator's state, the training state (plain data)
    and the method's state at the best validation score so far (``None`` without validation)."""
    serialization.write(path, CHECKPOINT_KIND, example="fit.ckpt", content={
        "fingerprint": fingerprint, "method": method_state, "optimizer": optimizer_to_plain(optimizer_state),
        "generator": generator_state, "state": training_state, "best": best_state})


def read_checkpoint(path: str | os.PathLike, fingerprint: dict) -> dict:
    """The checkpoint at ``path`` (keys as :func:`write_checkpoint` wrote them; the optimiser's
    state keyed by parameter index again), after checking that it was written for the fit of
    ``fingerprint``: :class:`CheckpointMismatchError` names each difference otherwise."""
    ckpt = serialization.read(path, CHECKPOINT_KIND, what_file="checkpoint file")
    saved = ckpt["fingerprint"]
    problems = _differences(saved["settings"], fingerprint["settings"])
    then, now = saved["data"]["shape"], fingerprint["data"]["shape"]
    if saved["data"] != fingerprint["data"]:
        same = ", same shape but other values" if then == now else ""
        problems.insert(0, f"the training data differ (shape {then} in the checkpoint, {now} now{same})")
    if problems:
        raise CheckpointMismatchError(
            f"checkpoint {path} was written by another fit: " + "; ".join(problems)
            + ". Use another checkpoint path, or delete this file to start afresh.")
    ckpt["optimizer"] = optimizer_from_plain(ckpt["optimizer"])
    return ckpt
