"""What GPClassifier's ``"auto"`` settings resolve to for a chosen method.

``method="auto"`` itself is model selection over a portfolio of candidates, each of which sets
a method explicitly (:mod:`~alphagp.estimators.model_selection`). For an explicit method:

* ``batch_size="auto"`` means the whole batch;
* ``inducing_init="auto"`` means random training rows (the papers' start);
* ``early_stopping="auto"`` turns on from ``EARLY_STOPPING_ROWS`` rows, except where a class has
  a single row (no stratified validation share exists);
* ``n_inducing="auto"`` is ``AUTO_INDUCING`` (clipped to the rows).

The resolved values become the fitted attributes ``method_``, ``n_inducing_``, ``batch_size_``,
``inducing_init_`` and ``early_stopping_``. Verbose fits and the command line print them.
"""

from __future__ import annotations

from .base import EARLY_STOPPING_ROWS, can_hold_out

AUTO_INDUCING = 50
#: the settings ``resolve`` returns, in the order the progress output names them
SETTINGS = ("method", "n_inducing", "batch_size", "inducing_init", "early_stopping")


def resolve(est, y) -> dict:
    """``{"method", "n_inducing", "batch_size", "inducing_init", "early_stopping"}`` for ``est``'s
    parameters (an explicit method) and the training rows' class indices ``y`` (module
    docstring)."""
    held_out = can_hold_out(y, stratify=True)

    def pick(name, otherwise):
        value = getattr(est, name)
        return value if value != "auto" else otherwise

    return {"method": est.method,
            "n_inducing": AUTO_INDUCING if est.n_inducing == "auto" else est.n_inducing,
            "batch_size": pick("batch_size", None),
            "inducing_init": pick("inducing_init", "random"),
            "early_stopping": pick("early_stopping", held_out and len(y) >= EARLY_STOPPING_ROWS)}


def describe(settings: dict) -> str:
    """One line for the progress output: the settings a fit used."""
    return ", ".join(f"{k}={v!r}" for k, v in settings.items())
