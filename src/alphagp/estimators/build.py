"""The build stage of a :class:`~alphagp.GPClassifier` fit: the model from its plan (:mod:`.fit_plan`).

The kernel start of the plan (a surrogate's type-II maximum likelihood, :mod:`alphagp.kernel_start`),
the kernel for the method's latent functions, the inducing inputs (the user's, or chosen from the
standardised rows by the plan's ``inducing_init``; the training rows themselves for an exact
posterior) and the registered method with its arguments from the plan. Nothing here branches on a
method's name: the registry and the method's :class:`~alphagp.methods.Capabilities` decide.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ..inducing import init_inducing_points
from ..kernel_start import BUDGET_SHARE, STARTS, KernelStart, describe_start, fit_kernel_start
from ..kernel_terms import term_from_spec
from ..kernels import ARDKernel, TermKernel
from ..methods import build_method, n_latent
from .fit_plan import DTYPES, FitPlan, _thawed

# Feature scale against the kernel's: warn when the typical distance between two points is this
# many lengthscales (or this fraction of one) with ``standardize=False``.
_FAR_SCALE = 100.0

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

def user_inducing_points(inducing_points, Xs, n_classes: int, shared: bool) -> np.ndarray | None:
    """The ``inducing_points`` parameter checked and standardised as the rows ``Xs`` (its ``mean``
    and ``scale``), ``[G or 1, M, D]`` for the ``n_classes`` = G latent functions of the method
    (``shared``: one kernel for all, the plan's ``shared_hyperparameters``), or ``None`` where the
    rows give them (``inducing_init``)."""
    if inducing_points is None:
        return None
    C, d = n_classes, Xs.shape[1]
    Z = np.asarray(inducing_points, dtype=np.float64)
    if Z.ndim == 2:
        Z = Z[None] if shared else np.broadcast_to(Z, (C, *Z.shape))
    if Z.ndim != 3 or Z.shape[0] not in (1, C) or Z.shape[2] != d or (Z.shape[0] == 1 < C and not shared):
        raise ValueError(f"inducing_points must have shape [M, {d}] or [{C}, M, {d}], got {Z.shape}")
    if not np.all(np.isfinite(Z)):
        raise ValueError("inducing_points contain NaN or inf")
    return (Z - Xs.mean) / Xs.scale

def kernel_start(plan: FitPlan, Xs, y_idx: np.ndarray, n_classes: int, weight: np.ndarray | None) -> KernelStart | None:
    """The plan's kernel start (``plan.kernel_init``, a surrogate of
    :data:`~alphagp.kernel_start.STARTS`): the surrogate's type-II maximum likelihood
    (:func:`~alphagp.kernel_start.fit_kernel_start`, one kernel for all classes) on the
    standardised rows ``Xs`` ``[N, D]`` with class indices ``y_idx`` ``[N]`` and weights ``weight``
    ``[N]`` (or ``None``), its rows drawn with the plan's ``random_state``; ``None`` for the fixed
    start. The Dirichlet start takes the fit's ``alpha_eps`` and ``noise_scale`` where its
    ``method_params`` give them. With the plan's ``max_time``, the search takes at most
    :data:`~alphagp.kernel_start.BUDGET_SHARE` of it."""
    if plan.kernel_init not in STARTS:
        return None
    return fit_kernel_start(Xs, y_idx, n_classes, surrogate=plan.kernel_init, weight=weight,
                            rng=np.random.default_rng(plan.random_state),
                            max_seconds=None if plan.max_time is None else BUDGET_SHARE * plan.max_time,
                            **STARTS[plan.kernel_init].settings(plan.method_params, plan.alpha), **term_of(plan))


def term_of(plan: FitPlan) -> dict:
    """``{"term": the plan's kernel term}`` for a kernel start's search, or ``{}`` (``kernel="auto"``)."""
    return {} if plan.kernel is None else {"term": term_from_spec(_thawed(plan.kernel))}

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
    if Z is None and plan.exact:                # conditioned on every row: the rows themselves (for every kernel)
        rows = np.asarray(Xs[np.arange(len(Xs))], dtype=np.float64)
        Z = rows[None] if plan.shared_hyperparameters else np.repeat(rows[None], latent, axis=0)
    elif Z is None:
        Z = init_inducing_points(Xs, latent, plan.n_inducing, plan.inducing_init, plan.shared_hyperparameters, rng)
    initial = {**({} if start is None else start.kernel_params()), **plan.kernel_params}
    model = method_of_plan(plan, torch.as_tensor(Z, dtype=dtype), n_classes, n_data=plan.n_data, kernel_params=initial,
                           latent=latent)
    if not plan.standardize and plan.kernel is None:
        _warn_if_far_from_kernel_scale(X, model.kernel)
    model.kernel.requires_grad_(plan.optimize_hyperparameters)
    own_start = start is not None and type(model).AUTO_SETTINGS.get("kernel_init") == start.surrogate
    if own_start and start.method_state and plan.exact:     # the search's state on these rows (its own model's)
        model.load_state_dict({k: v.to(dtype=getattr(model, k).dtype) for k, v in start.method_state.items()},
                              strict=False)
    for parameter in likelihood_parameters(model):
        parameter.requires_grad_(plan.optimize_hyperparameters)
    model.inducing_points.requires_grad_(plan.optimize_inducing)
    return model.to(torch.device(plan.device))

def classifier_model(plan: FitPlan, X, Xs, y_idx: np.ndarray, weight: np.ndarray | None, rng: np.random.Generator,
                     context):
    """``(model, {"kernel_start": ...})``: GPClassifier's build (its :class:`~.run.Family`'s) for the
    fitted rows ``X`` ``[N, D]`` (``Xs`` standardised, class indices ``y_idx``, weights ``weight`` or
    ``None``) drawn from ``rng``, with ``context`` (:class:`~.classifier_family.Context`): the plan's
    kernel start (the context's ``start`` by surrogate where the selection fitted it already, else
    :func:`kernel_start`, said where ``verbose``), the user's ``inducing_points`` and
    :func:`build_model`."""
    n_classes, start = context.n_classes, context.start
    found = None
    if plan.kernel_init in STARTS:
        given = (start or {}).get(plan.kernel_init)
        found = given if given is not None else kernel_start(plan, Xs, y_idx, n_classes, weight)
        if context.verbose and start is None:
            print(f"kernel start: {describe_start(found)}", flush=True)
    inducing = (None if context.inducing_points is None else
                user_inducing_points(context.inducing_points, Xs, n_latent(plan.method, n_classes),
                                     plan.shared_hyperparameters))
    return build_model(plan, X, Xs, n_classes, rng, inducing, found), {"kernel_start": found}


def method_of_plan(plan: FitPlan, inducing_points: torch.Tensor, n_classes: int, *, n_data: int,
                   kernel_params: dict | None = None, latent: int | None = None, **context):
    """The registered method of ``plan`` over ``inducing_points`` ``[G, M, D]`` (their dtype is the
    model's) for ``n_classes`` classes and N = ``n_data``: a kernel for its latent functions (from
    ``kernel_params`` where given, else the kernel's defaults) and the method with the plan's
    alpha, damping, epsilon and own arguments (``context``: a model file's ``site_storage``; a
    linear term in the kernel where ``kernel_params`` or the plan's kernel start has one;
    ``latent``: the method's count of latent functions where the caller has it). The
    one construction of a fit's model (:func:`build_model`) and of a model file's
    (:func:`~alphagp.estimators.model_file.model_from_file`)."""
    initial = {k: np.asarray(v, dtype=np.float64) for k, v in (kernel_params or {}).items()}
    latent, width = latent or n_latent(plan.method, n_classes), inducing_points.shape[2]
    if plan.kernel is not None:              # the user's kernel term (its start's theta, or its fixed values)
        kernel = TermKernel(term_from_spec(_thawed(plan.kernel)), latent, width, shared=plan.shared_hyperparameters,
                            dtype=inducing_points.dtype, **initial)
    else:
        if "linear" in plan.kernel_params or (plan.kernel_init in STARTS
                                              and "linear" in STARTS[plan.kernel_init].carries):
            initial.setdefault("linear", 1.0)      # the kernel has a linear term (a file's value: its state)
        kernel = ARDKernel(latent, width, shared=plan.shared_hyperparameters, dtype=inducing_points.dtype, **initial)
    return build_method(plan.method, inducing_points, kernel, n_data=n_data, alpha=plan.alpha, epsilon=plan.epsilon,
                        damping=plan.damping, n_classes=n_classes, exact=plan.exact, **context, **plan.method_params)


def likelihood_parameters(model) -> list:
    """The parameters of ``model``'s likelihood (the ordinal cut points; none for the others)."""
    return [p for name, p in model.named_parameters() if name.startswith("likelihood.")]
