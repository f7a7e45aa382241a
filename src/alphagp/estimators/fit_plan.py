"""The fit plan: every decision of a :class:`~alphagp.GPClassifier` fit, made once.

:func:`plan_fit` resolves the estimator's parameters against the data's size and the registry
(the method's :class:`~alphagp.methods.Capabilities`, :func:`~alphagp.methods.resolve_alpha`) into
a frozen :class:`FitPlan`. The method is built from it (``sparse_model.build_model``), the trainer
is set up from it, the progress line prints it, and the model file keeps it; the fitted estimator
exposes it as ``fit_plan_``. Nothing downstream decides again: a reader follows ``alpha`` from the
constructor to the method through :func:`plan_fit` alone (``alpha="auto"``'s cross-validation runs
before, and hands its chosen value to it).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

from ..labels import plain
from ..methods import method_spec, resolve_alpha

DEFAULT_BATCH_LEARNING_RATE = 1.0   # sign-adaptive rule, batch training (BENCHMARKS.md)
DEFAULT_ADAM_LEARNING_RATE = 1e-2   # Adam, mini-batch training


@dataclass(frozen=True)
class FitPlan:
    """How a fit runs, resolved from the parameters (:func:`plan_fit`).

    Attributes
    ----------
    method
        the registered method's name.
    alpha
        the power it runs with (``None``: the method has none).
    damping
        EP damping rho (``None``: the method does not damp).
    epsilon
        the robust-max likelihood's labelling-error probability (``None``: its default, or no such
        likelihood).
    method_params
        the method's own arguments (a copy of the estimator's ``method_params``; read only).
    n_data
        N, the rows the fit's ``N / |B|`` scaling counts (a stream's ``n_rows``).
    batch_size
        rows per step (``None``: all rows).
    mini_batches
        whether steps see fewer than all rows.
    optimizer, learning_rate
        ``"adam"`` on mini-batches, else the method's batch optimiser, and its initial rate.
    optimize_inducing
        whether the inducing inputs are learnt.
    n_inducing, inducing_init
        M per latent function (clipped to the rows, with a warning) and how the rows give the
        initial inducing inputs (unless the user gives them).
    shared_hyperparameters, kernel_params, optimize_hyperparameters
        one kernel and inducing set for all classes or one per class; the initial kernel
        parameters the user gave (plain values); whether the kernel is learnt.
    kernel_init
        where the rest of the initial kernel comes from: ``"regression"``, type-II maximum
        likelihood of an exact GP regression of the labels (:mod:`alphagp.kernel_start`), or
        ``"fixed"``, sqrt(D) lengthscales, amplitude 1 and noise 0.1 (files written before the
        kernel start read as ``"fixed"``).
    dtype, device, standardize
        the model's float type and device, and whether the features are standardised.
    """

    method: str
    alpha: float | None
    damping: float | None
    epsilon: float | None
    method_params: dict
    n_data: int
    batch_size: int | None
    mini_batches: bool
    optimizer: str
    learning_rate: float
    optimize_inducing: bool
    n_inducing: int
    inducing_init: str
    shared_hyperparameters: bool
    kernel_params: dict
    optimize_hyperparameters: bool
    dtype: str
    device: str
    standardize: bool
    kernel_init: str = "fixed"

    def to_plain(self) -> dict:
        """The plan as plain JSON values (for model files)."""
        return plain(dataclasses.asdict(self))

    @classmethod
    def from_plain(cls, values: dict) -> FitPlan:
        return cls(**values)

    def describe(self) -> str:
        """One line for the progress output."""
        steps = f"mini-batches of {self.batch_size}" if self.mini_batches else "the whole batch"
        alpha = "" if self.alpha is None else f", alpha={self.alpha:g}"
        damping = "" if self.damping is None else f", damping={self.damping:g}"
        learn = "learnt" if self.optimize_inducing else "fixed"
        return (f"{self.method}{alpha}{damping} on {self.n_data} rows, {steps}, {self.optimizer} from "
                f"{self.learning_rate:g}, inducing inputs {learn}, kernel start {self.kernel_init}")


def default_learning_rate(optimizer: str) -> float:
    """The initial rate of ``optimizer`` when the user gives none."""
    return DEFAULT_ADAM_LEARNING_RATE if optimizer == "adam" else DEFAULT_BATCH_LEARNING_RATE


def plan_fit(est, n_data: int, alpha: float | None, stream: bool = False, rows: int | None = None) -> FitPlan:
    """Resolve ``est``'s parameters for a fit on ``n_data`` rows with power ``alpha`` (the
    constructor's, or the value ``alpha="auto"`` chose; ``None``: the method's default) into a
    :class:`FitPlan`. ``stream``: a ``partial_fit`` stream, which always steps on mini-batches;
    ``rows``: the rows at hand to place inducing inputs on (a stream's first call; default
    ``n_data``).

    ``ValueError`` where the settings contradict the method: mini-batches for a batch-only method,
    an alpha the method does not take. Warns where ``optimize_inducing=True`` is known to diverge.
    """
    name = est.method_
    capabilities = method_spec(name).cls.CAPABILITIES
    mini = stream or (est.batch_size_ is not None and est.batch_size_ < n_data)
    if mini and not capabilities.mini_batches:
        raise ValueError(f"method={name!r} is batch only: its objective is not a sum over data "
                         f"points, so it cannot use mini-batches; use batch_size=None or another method")
    damping = est.damping
    if damping is None and capabilities.damping:
        damping = 1.0 if mini else 0.5
    optimizer = "adam" if mini else capabilities.batch_optimizer
    learning_rate = default_learning_rate(optimizer) if est.learning_rate is None else float(est.learning_rate)
    safe = not mini or capabilities.inducing_on_mini_batches
    if est.optimize_inducing == "auto":
        learn = safe
    else:
        learn = bool(est.optimize_inducing)
        if learn and not safe:
            warnings.warn(f"method={name!r} keeps per-point sites, which go stale when the inducing "
                          "inputs move during mini-batch training; such fits have diverged (BENCHMARKS.md). "
                          "optimize_inducing='auto' keeps them fixed here; method='sep' learns them safely",
                          UserWarning, stacklevel=4)
    n_inducing = (est._inducing_count(n_data if rows is None else rows) if est.inducing_points is None
                  else int(np.shape(est.inducing_points)[-2]))
    given = set(est.kernel_params or {})
    kernel_init = "fixed" if "lengthscale" in given else est.kernel_init
    return FitPlan(method=name, alpha=resolve_alpha(name, alpha), damping=damping, epsilon=est.epsilon,
                   method_params=dict(est.method_params or {}), n_data=int(n_data), batch_size=est.batch_size_,
                   mini_batches=mini, optimizer=optimizer, learning_rate=learning_rate, optimize_inducing=learn,
                   n_inducing=n_inducing, inducing_init=est.inducing_init_,
                   shared_hyperparameters=bool(est.shared_hyperparameters), kernel_params=plain(est.kernel_params or {}),
                   optimize_hyperparameters=bool(est.optimize_hyperparameters), dtype=est.dtype,
                   device=str(est._device()), standardize=bool(est.standardize), kernel_init=kernel_init)
