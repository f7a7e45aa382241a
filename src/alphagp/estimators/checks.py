"""The checks of a fit before anything is allocated: the parameters that need the registry or the
data's shape (:func:`check_parameters`; the rest is scikit-learn's ``_validate_params``), and the
memory a plan would take (:func:`check_model_size`, :func:`check_fit_size`), each a one-line
``ValueError``, and the time a plan's budget must hold (:func:`check_fit_time`; :func:`check_plan`
asks both). The estimators
call them; :mod:`.fit_plan` only plans, and nothing it or the
selection imports reads this module.
"""

from __future__ import annotations

import numpy as np

from .. import data
from ..constraints import InvalidParameterError
from ..devices import device_of
from ..labels import encode_labels
from ..methods import METHODS, check_method_params, method_spec
from . import model_selection
from .fit_plan import DTYPES, FitPlan, plan_fit

#: the keys of ``kernel_params``
KERNEL_PARAMS = ("lengthscale", "amplitude", "noise", "linear")


# ---------------------------------------------------------------------- parameter checks
def _positive_finite(name: str, value, allowed_shapes: list[tuple]) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape not in allowed_shapes:
        shapes = " or ".join(str(list(s)) for s in allowed_shapes)
        raise ValueError(f"kernel_params[{name!r}] must have shape {shapes}, got {list(arr.shape)}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"kernel_params[{name!r}] must be finite and positive, got {arr.tolist()}")
    return arr


def check_parameters(params: dict, n_features: int, n_classes: int) -> None:
    """The checks of an estimator's parameters ``params`` (``get_params()``) that need the registry
    or the data's shape (the rest is scikit-learn's ``_validate_params``)."""
    method, method_params, kernel = params["method"], params["method_params"], params["kernel"]
    device_of(params["device"])
    if method != "auto":
        try:
            method_spec(method)
        except ValueError:
            raise InvalidParameterError(f"The 'method' parameter of GPClassifier must be 'auto' or a str among "
                                        f"{sorted(METHODS)}. Got {method!r} instead.") from None
        check_method_params(method, method_params, reserved=("alpha", "epsilon", "damping"))
    elif method_params:
        raise ValueError("method_params belong to a chosen method; with method='auto' there is none to give "
                         "them to: set method as well")
    if params["n_jobs"] == 0:
        raise ValueError("n_jobs must not be 0; use None (1 thread), a positive count or -1 (all cores)")
    kp = params["kernel_params"] or {}
    if not isinstance(kernel, str) and set(kp) - {"noise"}:
        raise ValueError(f"kernel_params {sorted(set(kp) - {'noise'})} are initial values of the default kernel "
                         f"(kernel='auto'); kernel={kernel!r} starts from its own start's values or its fixed "
                         "ones: give only kernel_params={'noise': ...}, or kernel='auto'")
    unknown = set(kp) - set(KERNEL_PARAMS)
    if unknown:
        raise ValueError(f"kernel_params has unknown keys {sorted(unknown)}; allowed are {list(KERNEL_PARAMS)}")
    shared = params["shared_hyperparameters"]
    groups = {1 if shared is True else n_classes, 1 if shared is not False else n_classes}      # "auto": either
    if "lengthscale" in kp:
        _positive_finite("lengthscale", kp["lengthscale"], [(), (n_features,), *((g, n_features) for g in {1, *groups})])
    for name in ("amplitude", "noise", "linear"):
        if name in kp:
            _positive_finite(name, kp[name], [(), *((g,) for g in {1, *groups})])


#: copies of the inducing inputs a fit holds: the parameter, its gradient and Adam's two moments
_INDUCING_COPIES = 4


#: [rows, D] arrays a training step holds beyond one per kernel group: the standardised batch and a
#: temporary (measured: 60 rows of 5,000,000 features, 2 classes, M = 5, batch training peaked at
#: 10.9 GiB over the process's start, for 2.2 GiB of features; BENCHMARKS.md, "Trust at the edges")
_STEP_COPIES = 2
#: the rest of a fit that grows with the features (issue 69: a wide file with mini-batches and one
#: kernel passed the check above and was killed at 7.8 GiB): a table's column names (a Python
#: string each), the kernel start's rows (at most ``_START_ROWS``: the subsample, its scaled copy and
#: gradient) and its L-BFGS-B vectors over D lengthscales (history and work), k-means' copies
_COLUMN_NAME_BYTES, _START_ROWS, _START_COPIES, _SEARCH_VECTORS, _KMEANS_COPIES = 64, 1000, 3, 24, 2


def check_model_size(plan: FitPlan, n: int, d: int, n_classes: int) -> None:
    """A one-line ``ValueError`` before anything is allocated when a fit's memory would pass half of
    this machine's: the features ``[N, D]``, a step's working set (``G + 2`` arrays of its rows by
    D, for G kernel groups: C, or 1 shared), the inducing inputs ``[G, M, D]`` with their
    gradient and optimiser state, and the matrices over the inducing points (the method's
    ``working_bytes``: ``[C, M, M]``, or what an exact posterior holds over its rows), as
    ``plan`` has them for ``n`` rows of ``d`` features. A file with one huge feature index asks
    for that; a large M over many classes for the last."""
    groups = 1 if plan.shared_hyperparameters else n_classes
    m = min(plan.n_inducing, n)
    size = DTYPES[plan.dtype].itemsize
    step_rows = n if plan.batch_size is None else min(plan.batch_size, n)
    square = method_spec(plan.method).cls.working_bytes(n, n_classes, m, size, plan.exact)
    need = (n * d * 8 + step_rows * d * size * (groups + _STEP_COPIES)
            + groups * m * d * size * _INDUCING_COPIES + square + d * _COLUMN_NAME_BYTES)
    if plan.kernel_init != "fixed":          # the kernel start's rows and its search over D lengthscales
        need += min(n, _START_ROWS) * d * 8 * _START_COPIES + d * 8 * _SEARCH_VECTORS
    if plan.inducing_init in ("kmeans", "kmeans++"):
        need += n * d * 8 * _KMEANS_COPIES
    if need > data.physical_memory_bytes() // 2:
        raise ValueError(f"a fit on {n} rows of {d} features with {groups} kernel group(s) of {m} inducing points "
                         f"would need about {need / 2**30:.1f} GiB, more than half of this machine's memory; "
                         + ("reduce the features first: is there one huge feature index? A random projection "
                            "(sklearn.random_projection.SparseRandomProjection) keeps the rows' distances with far "
                            "fewer features" if d > 100 * max(n, 1) else
                            "use fewer features, mini-batches (batch_size), fewer inducing points, or "
                            "shared_hyperparameters=True"))


def check_plan(plan: FitPlan, n: int, d: int, n_classes: int) -> None:
    """What a plan for ``n`` rows of ``d`` features and ``n_classes`` classes needs of this machine:
    its memory (:func:`check_model_size`) and its time (:func:`check_fit_time`), each a one-line
    ``ValueError``."""
    check_model_size(plan, n, d, n_classes)
    check_fit_time(plan, n, n_classes)


def check_fit_time(plan: FitPlan, n: int, n_classes: int) -> None:
    """A one-line ``ValueError`` before the fit where the plan's ``max_time`` cannot hold the least
    work of its method on ``n`` rows of ``n_classes`` classes (the method's ``minimum_seconds``:
    exact EP's one sweep over its N (C - 1) pair factors, whose cost grows as their cube)."""
    if plan.max_time is None:
        return
    least = method_spec(plan.method).cls.minimum_seconds(n, n_classes)
    if least > plan.max_time:
        raise ValueError(f"method={plan.method!r} on {n} rows of {n_classes} classes needs at least about {least:.3g} s "
                         f"on this machine before it has a model, more than max_time={plan.max_time:g}; give it more "
                         "time, or use a method whose cost grows with its inducing points instead (method='dirichlet' "
                         "or 'ep')")


def check_fit_size(selector, n_rows: int, n_features: int, y) -> None:
    """:func:`check_model_size` for a fit of an estimator's parameters (its
    :class:`~.model_selection.Selector`, ``selector``; a selection: its first candidate for
    ``n_rows``) on ``n_rows`` rows of ``n_features`` features with labels ``y``, before the rows are
    read whole."""
    classes, y_idx = encode_labels(np.asarray(y))
    params = dict(selector.params)
    if params["method"] == "auto" or params["alpha"] == "auto":      # a selection: its first candidate
        params.update(model_selection.candidates_for(selector, n_rows, n_classes=len(classes))[0][1])
    params["early_stopping"] = False                   # the held-out share does not change the size
    plan = plan_fit(params, y_idx, alpha=params["alpha"], feature_groups=np.arange(n_features))
    check_model_size(plan, n_rows, n_features, len(classes))
