"""The fit plan: every decision of a fit, made once, for both estimator families.

The path of a fit is parameters -> plan -> build -> train -> fitted attributes. The planners
(:func:`plan_fit` for :class:`~alphagp.GPClassifier`, :func:`plan_deep_fit` for the deep GPs)
resolve the estimator's parameters (``get_params()``, with a selected candidate's values over
them) against the data's size and the registry (the method's
:class:`~alphagp.methods.Capabilities`, :func:`~alphagp.methods.resolve_alpha`) into a frozen
plan. The model is built from it, the trainer is set up from it, the progress line prints it,
the fitted ``*_`` attributes are read from it, and the model file keeps it; the fitted
estimator exposes it as ``fit_plan_``. Nothing downstream decides again: a reader follows
``alpha`` from the constructor to the method through the planner alone (``alpha="auto"`` is
candidates of the selection, each with a number). A new setting is a field of
the plan, decided in its planner.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from ..data.held_out import early_stopping_rows, held_out_problem
from ..devices import device_of
from ..kernel_start import STARTS
from ..kernel_terms import Term, describe_spec
from ..labels import plain
from ..methods import method_spec, resolve_alpha
from ..training import uses_mini_batches

#: the ``dtype`` parameter's values
DTYPES = {"float64": torch.float64, "float32": torch.float32}
#: ``early_stopping="auto"`` holds out a validation set from this many training rows on
#: (scikit-learn's rule for its gradient boosting)
EARLY_STOPPING_ROWS = 10_000
#: the deep GPs' hidden width without ``n_hidden``: min(D, this) units
HIDDEN_WIDTH = 30
#: ``n_inducing="auto"``: inducing points per latent function (a method's ``AUTO_SETTINGS`` may say
#: otherwise), clipped to the rows
AUTO_INDUCING = 50
DEFAULT_BATCH_LEARNING_RATE = 1.0   # sign-adaptive rule, batch training (BENCHMARKS.md)
DEFAULT_ADAM_LEARNING_RATE = 1e-2   # Adam, mini-batch training
#: ``damping=None``: EP's damping in batch training and with mini-batches (or a stream)
BATCH_DAMPING, MINI_BATCH_DAMPING = 0.5, 1.0


class FrozenDict(Mapping):
    """A read-only mapping whose values are frozen too (lists become tuples): the plan's
    ``method_params`` and ``kernel_params``."""

    def __init__(self, values=()):
        self._values = {k: _frozen(v) for k, v in dict(values).items()}

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items(), key=repr)))

    def __repr__(self) -> str:
        return repr(self._values)


def _frozen(value):
    if isinstance(value, Mapping):
        return FrozenDict(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_frozen(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value))
    return value


def _thawed(value):
    """Plain JSON values of a frozen one (mappings as dicts, tuples as lists)."""
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return plain(value)


#: the plan's decisions that a fitted GPClassifier shows as ``<name>_`` attributes, in the order the
#: command line names them
SETTINGS = ("method", "n_inducing", "batch_size", "inducing_init", "early_stopping")


def fitted_settings(plan: FitPlan) -> dict:
    """The settings a fit used (``"auto"`` resolved), from its plan: those of :data:`SETTINGS`."""
    return {"method": plan.method, "n_inducing": plan.n_inducing, "batch_size": plan.batch_size,
            "inducing_init": plan.inducing_init, "early_stopping": plan.early_stopping}


def default_learning_rate(optimizer: str) -> float:
    """The initial rate of ``optimizer`` when the user gives none."""
    return DEFAULT_ADAM_LEARNING_RATE if optimizer == "adam" else DEFAULT_BATCH_LEARNING_RATE


@dataclass(frozen=True, kw_only=True)
class TrainingPlan:
    """How a fit of either family trains (the trainer reads these and nothing else of the
    parameters).

    Attributes
    ----------
    n_data
        N, the rows the fit's ``N / |B|`` scaling counts (the rows fitted, after early stopping's
        held-out share; a stream's ``n_rows``).
    batch_size, mini_batches
        rows per step (``None``: all rows), and whether steps see fewer than all rows
        (:func:`uses_mini_batches`; a stream always does).
    optimizer, learning_rate, learning_rate_decay
        ``"adam"`` on mini-batches, else the method's batch optimiser; its initial rate and decay.
    max_iter, max_time, tol, n_iter_no_change
        the schedule: epochs, the time budget in seconds (``None``: none), the objective's
        tolerance and patience (``None`` in files written before the plan held them).
    early_stopping, validation_fraction, random_state
        whether a stratified ``validation_fraction`` of the rows is held out to stop on, and the
        seed of that split, the inducing inputs and the batch order.
    dtype, device, standardize
        the model's float type and device, and whether the features are standardised.
    """

    n_data: int
    batch_size: int | None
    mini_batches: bool
    optimizer: str
    learning_rate: float
    dtype: str
    device: str
    standardize: bool
    learning_rate_decay: float | str = 1.0
    max_iter: int | None = None
    max_time: float | None = None
    tol: float | None = None
    n_iter_no_change: int | None = None
    early_stopping: bool = False
    validation_fraction: float = 0.1
    random_state: int | None = None

    def to_plain(self) -> dict:
        """The plan as plain JSON values (for model files)."""
        return {f.name: _thawed(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_plain(cls, values: dict):
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (dict, list, np.ndarray)):
                object.__setattr__(self, f.name, _frozen(value))


@dataclass(frozen=True, kw_only=True)
class FitPlan(TrainingPlan):
    """How a :class:`~alphagp.GPClassifier` fit runs, resolved from the parameters
    (:func:`plan_fit`); the training fields are :class:`TrainingPlan`'s.

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
        the method's own arguments (read only).
    optimize_inducing
        whether the inducing inputs are learnt.
    n_inducing, inducing_init
        M per latent function (clipped to the rows, with a warning) and how the rows give the
        initial inducing inputs (unless the user gives them).
    shared_hyperparameters, kernel_params, optimize_hyperparameters
        one kernel and inducing set for all classes or one per class; the initial kernel
        parameters the user gave (plain values, read only); whether the kernel is learnt.
    kernel_init
        where the rest of the initial kernel comes from: ``"regression"``, type-II maximum
        likelihood of an exact GP regression of the labels (:mod:`alphagp.kernel_start`), or
        ``"fixed"``, sqrt(D) lengthscales, amplitude 1 and noise 0.1 (files written before the
        kernel start read as ``"fixed"``).
    n_data_grows
        a stream started without ``n_rows``: its N is the rows its calls have brought so far
        (``n_data`` is the first call's), as a stream need not know its length in advance.
    exact
        the method conditions on every training row (its inducing inputs are the rows, fixed): a
        method with ``Capabilities.exact_rows`` whose M is the rows fitted.
    kernel
        the user's kernel term bound to the fit's features (:meth:`~alphagp.kernel_terms.Term.spec`,
        read only), or ``None``: the RBF of :class:`~alphagp.kernels.ARDKernel` (``kernel="auto"``;
        files written before kernel terms).
    """

    method: str
    alpha: float | None
    damping: float | None
    epsilon: float | None
    method_params: Mapping
    optimize_inducing: bool
    n_inducing: int
    inducing_init: str
    shared_hyperparameters: bool
    kernel_params: Mapping
    optimize_hyperparameters: bool
    kernel_init: str = "fixed"
    n_data_grows: bool = False
    exact: bool = False
    kernel: Mapping | None = None

    def describe(self) -> str:
        """One line for the progress output."""
        steps = f"mini-batches of {self.batch_size}" if self.mini_batches else "the whole batch"
        alpha = "" if self.alpha is None else f", alpha={self.alpha:g}"
        damping = "" if self.damping is None else f", damping={self.damping:g}"
        learn = "the training rows (exact)" if self.exact else "learnt" if self.optimize_inducing else "fixed"
        stopping = ", early stopping" if self.early_stopping else ""
        kernel = "" if self.kernel is None else f", kernel {describe_spec(_thawed(self.kernel))}"
        return (f"{self.method}{alpha}{damping} on {self.n_data} rows, {steps}, {self.optimizer} from "
                f"{self.learning_rate:g}, inducing inputs {learn}{kernel}, kernel start {self.kernel_init}{stopping}")


def _early_stopping(setting, y, stratify: bool, fraction: float) -> bool:
    """``early_stopping`` resolved: ``"auto"`` holds out from :data:`EARLY_STOPPING_ROWS` rows where
    the rows can be held out (:func:`~alphagp.data.held_out.held_out_problem`)."""
    if setting == "auto":
        return len(y) >= EARLY_STOPPING_ROWS and held_out_problem(y, fraction, stratify) is None
    return bool(setting)


def _training(params: Mapping, *, n_data: int, batch_size, mini: bool, optimizer: str, early_stopping: bool,
              device: str, max_time=None) -> dict:
    """The :class:`TrainingPlan` fields of ``params`` (``max_time``: the budget left, where a
    selection spent some of the user's)."""
    rate = params["learning_rate"]
    return dict(n_data=int(n_data), batch_size=batch_size, mini_batches=mini, optimizer=optimizer,
                learning_rate=default_learning_rate(optimizer) if rate is None else float(rate),
                learning_rate_decay=params["learning_rate_decay"], max_iter=int(params["max_iter"]),
                max_time=params["max_time"] if max_time is None else max_time, tol=params["tol"],
                n_iter_no_change=int(params["n_iter_no_change"]), early_stopping=early_stopping,
                validation_fraction=float(params["validation_fraction"]), random_state=params["random_state"],
                dtype=params["dtype"], device=device, standardize=bool(params["standardize"]))


def clip_inducing(m: int, n: int, warn: bool = True) -> int:
    """``m`` inducing points clipped to the ``n`` rows at hand, with a warning where ``warn`` (the
    user asked for ``m``; ``n_inducing="auto"`` is clipped silently)."""
    if m > n:
        if warn:
            warnings.warn(f"n_inducing={m} is larger than the {n} training rows; using M={n}", UserWarning,
                          stacklevel=5)
        return n
    return m


def kernel_start_of(params: Mapping, cls=None) -> str:
    """Where the initial kernel of a fit of ``params`` (``get_params()``, a candidate's over them)
    comes from: the one rule of the kernel start. ``kernel_init``, ``"auto"`` resolved by the method
    (its ``AUTO_SETTINGS``; ``cls``: its class, where the caller has it); the fixed start where
    ``kernel_params`` give the lengthscales, or where the user's kernel term is not one the start
    searches (:attr:`~alphagp.kernel_start.StartSpec.kernels`)."""
    if "lengthscale" in (params["kernel_params"] or {}):
        return "fixed"
    if isinstance(params.get("kernel"), Term):
        start = kernel_start_of({**params, "kernel": "auto"}, cls)
        return start if start in STARTS and STARTS[start].kernels else "fixed"
    if params["kernel_init"] != "auto":
        return params["kernel_init"]
    return (cls or method_spec(params["method"]).cls).AUTO_SETTINGS.get("kernel_init", "fixed")


def is_own_start(params: Mapping, cls=None) -> bool:
    """Whether a fit of ``params`` starts a closed-form method from its own model (the Dirichlet GP
    from the Dirichlet start): that start is the type-II maximum likelihood of its kernel, so the
    fit takes one closed-form step and moves nothing (``cls``: the method's class, where the caller
    has it)."""
    cls = cls or method_spec(params["method"]).cls
    start = kernel_start_of(params, cls)
    own = STARTS[start].variant_of or start if start in STARTS else start
    return cls.CAPABILITIES.closed_form and own == cls.AUTO_SETTINGS.get("kernel_init")


def plan_fit(params: Mapping, y_idx: np.ndarray, *, alpha: float | None = None, stream: bool = False,
             n_rows: int | None = None, max_time: float | None = None,
             feature_groups: np.ndarray | None = None) -> FitPlan:
    """Resolve GPClassifier parameters ``params`` (``get_params()``, a candidate's values over
    them; ``method`` a registered name) for a fit on rows of class indices ``y_idx`` ``[N]`` with
    power ``alpha`` (the constructor's, or a candidate's of ``alpha="auto"``; ``None``: the
    method's default) into a :class:`FitPlan` on the device ``params["device"]`` names. ``stream``: a ``partial_fit``
    stream, which always steps on mini-batches and never stops early; ``n_rows``: the stream's N
    (default: the rows at hand). ``max_time``: the budget left (default ``params["max_time"]``).
    ``feature_groups``: the table column of each feature (:func:`~.inputs.feature_groups`), which a
    kernel term is bound to (``RBF("columns")``); required with a kernel term.

    The ``"auto"`` settings, where the method's ``AUTO_SETTINGS`` name no value of their own:
    ``batch_size`` all rows, ``inducing_init`` random training rows (the papers' start),
    ``kernel_init`` the fixed start, ``shared_hyperparameters`` one kernel per class,
    ``early_stopping`` from :data:`EARLY_STOPPING_ROWS` rows where a stratified share exists,
    ``n_inducing`` every row fitted up to the method's ``Capabilities.exact_rows`` (the exact
    posterior, whose inducing inputs are then the rows and never move; always for a method
    without a sparse form), else the method's ``auto_n_inducing`` (which may grow with the rows,
    the memory and the budget) or :data:`AUTO_INDUCING` (clipped to the rows fitted; a number the
    user gives is clipped with a warning). A
    closed-form method (``Capabilities.closed_form``) takes one step where its kernel comes from
    its own start or is held fixed.

    ``ValueError`` where the settings contradict the method (mini-batches for a batch-only method,
    an alpha the method does not take) or early stopping cannot hold rows out. Warns where
    ``optimize_inducing=True`` is known to diverge.
    """
    name = params["method"]
    cls = method_spec(name).cls
    capabilities, auto = cls.CAPABILITIES, cls.AUTO_SETTINGS
    kernel_params = params["kernel_params"] or {}
    kernel_init = kernel_start_of(params, cls)
    own_start = is_own_start(params, cls)
    # a closed form from its own start takes one step: "auto" holds no rows out to stop it on
    one_step = own_start and params["optimize_inducing"] is not True
    early = False if stream or (one_step and params["early_stopping"] == "auto") else \
        _early_stopping(params["early_stopping"], y_idx, True, params["validation_fraction"])
    fitted = len(early_stopping_rows(y_idx, early, params["validation_fraction"], True, params["random_state"])[0])
    n_data = fitted if n_rows is None else int(n_rows)
    batch_size = None if params["batch_size"] == "auto" else params["batch_size"]
    mini = stream or uses_mini_batches(batch_size, n_data)
    if mini and not capabilities.mini_batches and not (stream and capabilities.closed_form):
        raise ValueError(f"method={name!r} is batch only: its objective is not a sum over data "
                         f"points, so it cannot use mini-batches; use batch_size=None or another method")
    damping = params["damping"]
    if damping is None and capabilities.damping:
        damping = MINI_BATCH_DAMPING if mini else BATCH_DAMPING
    optimizer = "adam" if mini else capabilities.batch_optimizer
    safe = not mini or capabilities.inducing_on_mini_batches
    if params["optimize_inducing"] == "auto":
        learn = safe
    else:
        learn = bool(params["optimize_inducing"])
        if learn and not safe:
            warnings.warn(f"method={name!r} keeps per-point sites, which go stale when the inducing "
                          "inputs move during mini-batch training; such fits have diverged (BENCHMARKS.md). "
                          "optimize_inducing='auto' keeps them fixed here; method='sep' learns them safely",
                          UserWarning, stacklevel=4)
    given = params["inducing_points"]
    m = params["n_inducing"]
    budget = params["max_time"] if max_time is None else max_time
    exact_fits = not mini and fitted <= capabilities.exact_rows
    if m == "auto" and not mini and (not capabilities.sparse or (exact_fits and budget is None)):
        m = fitted
    elif m == "auto":                   # beyond the exact rows, or under a budget the method's own choice
        grown = cls.auto_n_inducing(fitted, int(y_idx.max()) + 1, DTYPES[params["dtype"]].itemsize, budget)
        m = (fitted if exact_fits else AUTO_INDUCING) if grown is None else grown
    n_inducing = (clip_inducing(int(m), fitted, warn=params["n_inducing"] != "auto") if given is None
                  else int(np.shape(given)[-2]))
    exact = capabilities.exact_rows > 0 and not mini and n_inducing == fitted
    if exact:
        learn = False           # the inducing inputs are the training rows
    if own_start and params["optimize_inducing"] == "auto":
        learn = False                           # the start learnt the kernel; the inducing inputs stay
    training = _training(params, n_data=n_data, batch_size=batch_size, mini=mini, optimizer=optimizer,
                         early_stopping=early, device=str(device_of(params["device"])), max_time=max_time)
    learn_kernel = bool(params["optimize_hyperparameters"]) and not own_start     # the start was its type-II ML
    if capabilities.closed_form and not learn_kernel and not learn:
        training["max_iter"] = 1                # nothing (more) to learn: one closed-form step is the posterior
    return FitPlan(**training,
                   method=name, alpha=resolve_alpha(name, alpha), damping=damping, epsilon=params["epsilon"],
                   method_params=dict(params["method_params"] or {}), optimize_inducing=learn,
                   n_inducing=n_inducing,
                   inducing_init=(auto.get("inducing_init", "random") if params["inducing_init"] == "auto"
                                  else params["inducing_init"]),
                   shared_hyperparameters=(auto.get("shared_hyperparameters", False)
                                           if params["shared_hyperparameters"] == "auto"
                                           else bool(params["shared_hyperparameters"])),
                   kernel_params=plain(kernel_params),
                   optimize_hyperparameters=learn_kernel, kernel_init=kernel_init,
                   n_data_grows=stream and n_rows is None, exact=exact, kernel=_bound_kernel(params, feature_groups))


def _bound_kernel(params: Mapping, feature_groups: np.ndarray | None) -> dict | None:
    """The spec of the user's kernel term bound to ``feature_groups`` (``None``: ``kernel="auto"``)."""
    kernel = params.get("kernel", "auto")
    if not isinstance(kernel, Term):
        return None
    if feature_groups is None:
        raise ValueError("a kernel term is bound to the fit's features: the planner needs their table columns")
    return kernel.bound(feature_groups).spec()


@dataclass(frozen=True, kw_only=True)
class DeepFitPlan(TrainingPlan):
    """How a deep-GP fit (:class:`~alphagp.DeepGPRegressor`, :class:`~alphagp.DeepGPClassifier`)
    runs, resolved from the parameters (:func:`plan_deep_fit`); the training fields are
    :class:`TrainingPlan`'s (Adam on every step).

    Attributes
    ----------
    n_layers, n_hidden, n_inducing
        the layers, the hidden layers' width (``n_hidden``, or min(D, 30)) and M per layer
        (clipped to the rows fitted, with a warning).
    first_layer_kernel, hidden_mean_scale
        the first layer's kernel and the hidden layers' mean function's scale.
    alpha, n_samples
        the power of approximate power EP and the Monte Carlo samples of a training step.
    likelihood, n_outputs
        the last layer's likelihood and its output units.
    """

    n_layers: int
    n_hidden: int
    n_inducing: int
    first_layer_kernel: str
    hidden_mean_scale: float
    alpha: float
    n_samples: int
    likelihood: str
    n_outputs: int

    def describe(self) -> str:
        """One line for the progress output."""
        steps = f"mini-batches of {self.batch_size}" if self.mini_batches else "the whole batch"
        return (f"{self.n_layers} layers of {self.n_inducing} inducing points ({self.n_hidden} hidden units), "
                f"alpha={self.alpha:g}, {self.likelihood} on {self.n_data} rows, {steps}, adam from "
                f"{self.learning_rate:g}" + (", early stopping" if self.early_stopping else ""))


def plan_deep_fit(params: Mapping, y, *, n_features: int, likelihood: str, n_outputs: int, stratify: bool,
                  ) -> DeepFitPlan:
    """Resolve deep-GP parameters ``params`` (``get_params()``) for a fit on targets ``y`` ``[N]``
    (class indices where ``stratify``, else real values) of ``n_features`` features, with the
    last layer's ``likelihood`` and ``n_outputs``, into a :class:`DeepFitPlan` on the device
    ``params["device"]`` names:
    ``early_stopping="auto"`` holds out from :data:`EARLY_STOPPING_ROWS` rows (where a stratified
    share exists), the inducing points are clipped to the rows fitted, and the hidden width is
    ``n_hidden`` or min(D, 30)."""
    early = _early_stopping(params["early_stopping"], y, stratify, params["validation_fraction"])
    fitted = len(early_stopping_rows(y, early, params["validation_fraction"], stratify, params["random_state"])[0])
    batch_size = params["batch_size"]
    hidden = params["n_hidden"] if params["n_hidden"] is not None else min(n_features, HIDDEN_WIDTH)
    return DeepFitPlan(**_training(params, n_data=fitted, batch_size=batch_size,
                                   mini=uses_mini_batches(batch_size, fitted), optimizer="adam",
                                   early_stopping=early, device=str(device_of(params["device"]))),
                       n_layers=int(params["n_layers"]), n_hidden=int(hidden),
                       n_inducing=clip_inducing(int(params["n_inducing"]), fitted),
                       first_layer_kernel=params["first_layer_kernel"],
                       hidden_mean_scale=float(params["hidden_mean_scale"]), alpha=float(params["alpha"]),
                       n_samples=int(params["n_samples"]), likelihood=likelihood, n_outputs=int(n_outputs))
