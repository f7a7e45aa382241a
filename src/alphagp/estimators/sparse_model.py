"""The work behind :class:`~alphagp.GPClassifier`: checks of its parameters against the data,
the sparse GP model built from the fit plan (:mod:`.fit_plan`: kernel, inducing inputs, the
registered method), and the model's part of a model file. The estimator holds the parameters and calls these in order; none of them branches
on a method's name (the registry and the method's :class:`~alphagp.methods.Capabilities` decide).
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ..constraints import InvalidParameterError
from ..inducing import init_inducing_points
from ..kernel_start import BUDGET_SHARE, SURROGATES, KernelStart, fit_kernel_start
from ..kernels import ARDKernel
from ..labels import classes_from_plain, classes_to_plain, encode_labels, plain
from ..methods import METHODS, build_method, check_method_params, method_config, n_latent
from ..training.checkpoints import optimizer_from_plain, optimizer_to_plain
from .fit_plan import DTYPES, FitPlan

KERNEL_PARAMS = ("lengthscale", "amplitude", "noise")
#: the Dirichlet start: rows, alpha_eps (where the fit's method_params give none) and L-BFGS-B's
#: relative tolerance (measured: BENCHMARKS.md, "A GP classifier in closed form")
DIRICHLET_START_ROWS = 1000
DIRICHLET_START_EPS = 1e-3
DIRICHLET_START_TOLERANCE = 1e-6
DIRICHLET_START_DTYPE = torch.float32
# Feature scale against the kernel's: warn when the typical distance between two points is this
# many lengthscales (or this fraction of one) with ``standardize=False``.
_FAR_SCALE = 100.0


# ---------------------------------------------------------------------- parameter checks
def _positive_finite(name: str, value, allowed_shapes: list[tuple]) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape not in allowed_shapes:
        shapes = " or ".join(str(list(s)) for s in allowed_shapes)
        raise ValueError(f"kernel_params[{name!r}] must have shape {shapes}, got {list(arr.shape)}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"kernel_params[{name!r}] must be finite and positive, got {arr.tolist()}")
    return arr


def check_parameters(est, n_features: int, n_classes: int) -> None:
    """The checks of ``est``'s parameters that need the registry or the data's shape (the rest is
    scikit-learn's ``_validate_params``)."""
    est._device()
    if est.method != "auto":
        if est.method not in METHODS:
            raise InvalidParameterError(f"The 'method' parameter of GPClassifier must be 'auto' or a str among "
                                        f"{sorted(METHODS)}. Got {est.method!r} instead.")
        check_method_params(est.method, est.method_params, reserved=("alpha", "epsilon", "damping"))
    elif est.method_params:
        raise ValueError("method_params belong to a chosen method; with method='auto' there is none to give "
                         "them to: set method as well")
    if est.n_jobs == 0:
        raise ValueError("n_jobs must not be 0; use None (1 thread), a positive count or -1 (all cores)")
    kp = est.kernel_params or {}
    unknown = set(kp) - set(KERNEL_PARAMS)
    if unknown:
        raise ValueError(f"kernel_params has unknown keys {sorted(unknown)}; allowed are {list(KERNEL_PARAMS)}")
    groups = {1 if est.shared_hyperparameters is True else n_classes,       # "auto": either, by method
              1 if est.shared_hyperparameters is not False else n_classes}
    if "lengthscale" in kp:
        _positive_finite("lengthscale", kp["lengthscale"], [(), (n_features,), *((g, n_features) for g in {1, *groups})])
    for name in ("amplitude", "noise"):
        if name in kp:
            _positive_finite(name, kp[name], [(), *((g,) for g in {1, *groups})])


# ---------------------------------------------------------------------- the model
def _warn_if_far_from_kernel_scale(X, kernel: ARDKernel) -> None:
    """Warn when unstandardised features put typical points very many (or a tiny fraction of)
    lengthscales apart: the kernel matrix is then near the identity (or all ones) and the fit
    learns little."""
    rows = np.unique(np.linspace(0, len(X) - 1, min(len(X), 10_000)).astype(np.int64))
    var = np.asarray(X[rows], dtype=np.float64).var(0)
    ls2 = kernel.lengthscale.detach().double().square().numpy()            # [G, D]
    distance = float(np.sqrt(np.median(2.0 * (var / ls2).sum(-1))))
    if not 1.0 / _FAR_SCALE <= distance <= _FAR_SCALE:
        warnings.warn(f"with standardize=False, two typical training points lie {distance:.3g} initial "
                      "lengthscales apart; the kernel sees the data at the wrong scale and the fit may "
                      "learn little. Use standardize=True or set kernel_params['lengthscale'] to the "
                      "features' scale", UserWarning, stacklevel=5)


def user_inducing_points(est, n_features: int, n_classes: int, shared: bool) -> np.ndarray | None:
    """``est.inducing_points`` checked and standardised, ``[G or 1, M, D]`` for the ``n_classes``
    = G latent functions of the method (``shared``: one kernel for all, the plan's
    ``shared_hyperparameters``), or ``None`` where the rows give them (``inducing_init``)."""
    if est.inducing_points is None:
        return None
    C, d = n_classes, n_features
    Z = np.asarray(est.inducing_points, dtype=np.float64)
    if Z.ndim == 2:
        Z = Z[None] if shared else np.broadcast_to(Z, (C, *Z.shape))
    if Z.ndim != 3 or Z.shape[0] not in (1, C) or Z.shape[2] != d or (Z.shape[0] == 1 < C and not shared):
        raise ValueError(f"inducing_points must have shape [M, {d}] or [{C}, M, {d}], got {Z.shape}")
    if not np.all(np.isfinite(Z)):
        raise ValueError("inducing_points contain NaN or inf")
    return (Z - est.mean_) / est.scale_


#: copies of the inducing inputs a fit holds: the parameter, its gradient and Adam's two moments
_INDUCING_COPIES = 4
#: [rows, D] arrays a training step holds beyond one per kernel group: the standardised batch and a
#: temporary (measured: 60 rows of 5,000,000 features, 2 classes, M = 5, batch training peaked at
#: 10.9 GiB over the process's start, for 2.2 GiB of features; BENCHMARKS.md, "Trust at the edges")
_STEP_COPIES = 2


def check_model_size(plan: FitPlan, n: int, d: int, n_classes: int) -> None:
    """A one-line ``ValueError`` before anything is allocated when a fit's memory would pass half of
    this machine's: the features ``[N, D]``, a step's working set (``G + 2`` arrays of its rows by
    D, for G kernel groups: C, or 1 shared) and the inducing inputs ``[G, M, D]`` with their
    gradient and optimiser state, as ``plan`` has them for ``n`` rows of ``d`` features. A file
    with one huge feature index asks for that."""
    from ..data import physical_memory_bytes
    groups = 1 if plan.shared_hyperparameters else n_classes
    m = min(plan.n_inducing, n)
    size = DTYPES[plan.dtype].itemsize
    step_rows = n if plan.batch_size is None else min(plan.batch_size, n)
    need = (n * d * 8 + step_rows * d * size * (groups + _STEP_COPIES)
            + groups * m * d * size * _INDUCING_COPIES)
    if need > physical_memory_bytes() // 2:
        raise ValueError(f"a fit on {n} rows of {d} features with {groups} kernel group(s) of {m} inducing points "
                         f"would need about {need / 2**30:.1f} GiB, more than half of this machine's memory; "
                         + ("reduce the features first: is there one huge feature index? A random projection "
                            "(sklearn.random_projection.SparseRandomProjection) keeps the rows' distances with far "
                            "fewer features" if d > 100 * max(n, 1) else
                            "use fewer features, mini-batches (batch_size), fewer inducing points, or "
                            "shared_hyperparameters=True"))


def check_fit_size(est, n_rows: int, n_features: int, y) -> None:
    """:func:`check_model_size` for a fit of ``est``'s parameters (a selection: its first
    candidate for ``n_rows``) on ``n_rows`` rows of ``n_features`` features with labels ``y``,
    before the rows are read whole."""
    from . import model_selection
    from .fit_plan import plan_fit
    classes, y_idx = encode_labels(np.asarray(y))
    params = est.get_params()
    if est.method == "auto" or est.alpha == "auto":      # a selection: its first candidate
        params.update(model_selection.candidates_for(est, n_rows)[0][1])
    params["early_stopping"] = False                   # the held-out share does not change the size
    plan = plan_fit(params, y_idx, device=str(est._device()), alpha=params["alpha"])
    check_model_size(plan, n_rows, n_features, len(classes))


def kernel_start(plan: FitPlan, Xs, y_idx: np.ndarray, n_classes: int, weight: np.ndarray | None) -> KernelStart | None:
    """The plan's kernel start (``plan.kernel_init``, a surrogate of
    :data:`~alphagp.kernel_start.SURROGATES`): the surrogate's type-II maximum likelihood
    (:func:`~alphagp.kernel_start.fit_kernel_start`, one kernel for all classes) on the
    standardised rows ``Xs`` ``[N, D]`` with class indices ``y_idx`` ``[N]`` and weights ``weight``
    ``[N]`` (or ``None``), its rows drawn with the plan's ``random_state``; ``None`` for the fixed
    start. The Dirichlet start takes the fit's ``alpha_eps`` and ``noise_scale`` where its
    ``method_params`` give them. With the plan's ``max_time``, the search takes at most
    :data:`~alphagp.kernel_start.BUDGET_SHARE` of it."""
    if plan.kernel_init not in SURROGATES:
        return None
    return fit_kernel_start(Xs, y_idx, n_classes, shared=True, weight=weight,
                            rng=np.random.default_rng(plan.random_state),
                            max_seconds=None if plan.max_time is None else BUDGET_SHARE * plan.max_time,
                            **start_settings(plan.kernel_init, plan.method_params))


def start_settings(surrogate: str, method_params) -> dict:
    """The :func:`~alphagp.kernel_start.fit_kernel_start` arguments of a start by ``surrogate``: its
    rows, and the Dirichlet surrogate's ``alpha_eps`` and ``noise_scale`` (``method_params``' where
    they give them)."""
    if surrogate != "dirichlet":
        return {"surrogate": surrogate}
    return {"surrogate": surrogate, "max_rows": DIRICHLET_START_ROWS,
            "alpha_eps": float(method_params.get("alpha_eps", DIRICHLET_START_EPS)),
            "noise_scale": float(method_params.get("noise_scale", 1.0)), "tolerance": DIRICHLET_START_TOLERANCE,
            "search_dtype": DIRICHLET_START_DTYPE}


def build_model(plan: FitPlan, X, Xs, n_classes: int, rng: np.random.Generator, inducing_points=None,
                start: KernelStart | None = None):
    """The model of ``plan``: a kernel for the method's latent functions (one per class, or the
    likelihood's fixed count: :func:`~alphagp.methods.n_latent`), the inducing inputs
    (``inducing_points``, standardised ``[G, M, D]``, or ``plan.n_inducing`` chosen from the
    standardised rows ``Xs`` by ``plan.inducing_init``) and the registered method (its alpha,
    damping, epsilon and own arguments, N = ``plan.n_data``), on the plan's device. ``X``: the
    unstandardised rows (for the warning about an unstandardised kernel scale). The kernel starts
    from ``start``'s lengthscales (:func:`kernel_start`), where the user gave none; a likelihood
    with parameters of its own (the ordinal cut points) learns them with the kernel."""
    dtype = DTYPES[plan.dtype]
    latent = n_latent(plan.method, n_classes)
    Z = inducing_points
    if Z is None and plan.exact:                # conditioned on every row: the rows themselves
        Z = np.asarray(Xs[np.arange(len(Xs))], dtype=np.float64)[None]
    elif Z is None:
        Z = init_inducing_points(Xs, latent, plan.n_inducing, plan.inducing_init, plan.shared_hyperparameters, rng)
    initial = {**({} if start is None else start.kernel_params()), **plan.kernel_params}
    kernel = ARDKernel(latent, X.shape[1], shared=plan.shared_hyperparameters, dtype=dtype,
                       **{k: np.asarray(v, dtype=np.float64) for k, v in initial.items()})
    if not plan.standardize:
        _warn_if_far_from_kernel_scale(X, kernel)
    kernel.requires_grad_(plan.optimize_hyperparameters)
    model = build_method(plan.method, torch.as_tensor(Z, dtype=dtype), kernel, n_data=plan.n_data, alpha=plan.alpha,
                         epsilon=plan.epsilon, damping=plan.damping, n_classes=n_classes, exact=plan.exact,
                         **plan.method_params)
    for parameter in likelihood_parameters(model):
        parameter.requires_grad_(plan.optimize_hyperparameters)
    model.inducing_points.requires_grad_(plan.optimize_inducing)
    return model.to(torch.device(plan.device))


def likelihood_parameters(model) -> list:
    """The parameters of ``model``'s likelihood (the ordinal cut points; none for the others)."""
    return [p for name, p in model.named_parameters() if name.startswith("likelihood.")]


# ---------------------------------------------------------------------- the model file
def file_content(est, include_training_state: bool) -> dict:
    """The classifier's part of its model file: classes, the method's name and arguments, its state
    (without the per-point training state unless asked), and fitted choices."""
    state = est.model_.state_dict()
    if not include_training_state:
        state = {k: v for k, v in state.items() if k not in est.model_.TRAINING_STATE}
    return {"classes": classes_to_plain(est.classes_),
            "method": {"name": est.method_, "config": method_config(est.method_, est.model_),
                       "training_state": include_training_state},
            "state": state, "fit_plan": est.fit_plan_.to_plain(),
            "kernel_start": None if getattr(est, "kernel_start_", None) is None else est.kernel_start_.to_plain(),
            "selection": ({"candidate": est.candidate_, "scheme": est.selection_scheme_,
                           "cv_results": plain(est.cv_results_)} if hasattr(est, "cv_results_") else None),
            **({"conformity_scores": torch.as_tensor(est.conformity_scores_)}
               if getattr(est, "conformity_scores_", None) is not None else {}),
            **({"conformity_classes": torch.as_tensor(est.conformity_classes_)}
               if getattr(est, "conformity_classes_", None) is not None else {}),
            "table_encoding": est._table_content().get("table_encoding"),
            "stream_optimizer": optimizer_to_plain(getattr(est, "_stream_optimizer", None)),
            "stream_seen": plain(getattr(est, "_stream_seen", None))}


def restore(est, content: dict) -> None:
    """The fitted attributes a model file's ``content`` keeps beside the model (after its state is
    loaded): the plan and what it decides, the kernel start, the selection's scores,
    the conformity scores, a stream's optimiser state and the table encoding (checked against the
    input columns)."""
    est.model_.to(est._device())
    est._apply_plan(FitPlan.from_plain(content["fit_plan"]))      # older files' upgraded to one
    start = content.get("kernel_start")                # files before the kernel start have none
    est.kernel_start_ = None if start is None else KernelStart.from_plain(start)
    if content.get("conformity_scores") is not None:
        est.conformity_scores_ = content["conformity_scores"].numpy()
        if not np.all(np.isfinite(est.conformity_scores_)) or np.any(np.abs(est.conformity_scores_ - 0.5) > 0.5):
            raise ValueError("the conformity scores are not numbers in [0, 1]")
    if content.get("conformity_classes") is not None:     # files before the Mondrian sets have none
        est.conformity_classes_ = content["conformity_classes"].numpy()
        if (est.conformity_classes_.shape != est.conformity_scores_.shape
                or not np.all((est.conformity_classes_ >= 0) & (est.conformity_classes_ < len(est.classes_)))):
            raise ValueError("the calibration rows' classes do not fit their scores and the model's classes")
    est._stream_optimizer = optimizer_from_plain(content.get("stream_optimizer"))
    seen = content.get("stream_seen")                  # a stream's rows and weight so far (files before: none)
    est._stream_seen = None if seen is None else (int(seen[0]), float(seen[1]))
    est._restore_table(content)
    if content.get("selection"):                       # method="auto" (files before it have none)
        selection = content["selection"]
        est.candidate_, est.selection_scheme_ = str(selection["candidate"]), str(selection["scheme"])
        est.cv_results_ = dict(selection["cv_results"])
    est._set_diagnostics()


def model_from_file(est, content: dict):
    """``(model, state)``: the method rebuilt from a file's ``content`` (sets ``est.classes_``)."""
    est.classes_ = classes_from_plain(content["classes"])
    state, method = content["state"], content["method"]
    Z = state["inducing_points"]
    kernel = ARDKernel(n_latent(method["name"], len(est.classes_)), Z.shape[2],
                       shared=bool(content["fit_plan"]["shared_hyperparameters"]), dtype=Z.dtype)
    return build_method(method["name"], Z, kernel, site_storage=method["training_state"],
                        n_classes=len(est.classes_), **method["config"]), state
