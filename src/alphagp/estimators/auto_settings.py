"""What GPClassifier's ``"auto"`` settings resolve to.

The rules come from ``benchmarks/defaults_study.py``: five configurations on scikit-learn's
digits and on the 15 small and medium classification sets of ``../shared/data``, each scored
on a validation split of the training rows (BENCHMARKS.md, "Defaults chosen by measurement").

* Below ``LARGE_ROWS`` training rows, ``method="auto"`` is power EP with alpha = 0.5
  (``SMALL_METHOD``), in batch mode. It had the best mean rank of validation NLL on those sets.
* From ``LARGE_ROWS`` rows on, it is stochastic EP (``LARGE_METHOD``) with:
  * Adam on mini-batches of ``LARGE_BATCH_SIZE`` rows;
  * inducing inputs at k-means centres;
  * validated early stopping.

  On Waveform it reached power EP's validation NLL in a tenth of the time, and on Satellite
  within 4 % of it in a ninth.
* ``n_inducing="auto"`` is ``AUTO_INDUCING`` (clipped to the rows).

An explicitly chosen method keeps the settings it had before ``"auto"`` existed:

* ``batch_size="auto"`` means the whole batch;
* ``inducing_init="auto"`` means random training rows;
* ``early_stopping="auto"`` turns on from ``EARLY_STOPPING_ROWS`` rows.

Where a class has a single row, no stratified validation share exists, so ``"auto"`` leaves
early stopping off for either kind of method.

The resolved values become the fitted attributes ``method_``, ``n_inducing_``, ``batch_size_``,
``inducing_init_`` and ``early_stopping_``. Verbose fits and the command line print them.
"""

from __future__ import annotations

from .base import EARLY_STOPPING_ROWS, can_hold_out

LARGE_ROWS = 2_000
SMALL_METHOD = "pep"
LARGE_METHOD = "sep"
LARGE_BATCH_SIZE = 128
AUTO_INDUCING = 50
#: the settings ``resolve`` returns, in the order the progress output names them
SETTINGS = ("method", "n_inducing", "batch_size", "inducing_init", "early_stopping")


def resolve(est, y) -> dict:
    """``{"method", "n_inducing", "batch_size", "inducing_init", "early_stopping"}`` for ``est``'s
    parameters and the training rows' class indices ``y`` (module docstring). ``"auto"`` early
    stopping stays off where a class has a single row (no stratified validation share exists)."""
    n_rows = len(y)
    large = est.method == "auto" and n_rows >= LARGE_ROWS
    held_out = can_hold_out(y, stratify=True)
    method = est.method if est.method != "auto" else (LARGE_METHOD if large else SMALL_METHOD)

    def pick(name, for_large, otherwise):
        value = getattr(est, name)
        return value if value != "auto" else (for_large if large else otherwise)

    return {"method": method,
            "n_inducing": AUTO_INDUCING if est.n_inducing == "auto" else est.n_inducing,
            "batch_size": pick("batch_size", LARGE_BATCH_SIZE, None),
            "inducing_init": pick("inducing_init", "kmeans", "random"),
            "early_stopping": pick("early_stopping", held_out, held_out and n_rows >= EARLY_STOPPING_ROWS)}


def describe(settings: dict) -> str:
    """One line for the progress output: the settings a fit used."""
    return ", ".join(f"{k}={v!r}" for k, v in settings.items())
