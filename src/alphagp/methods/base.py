"""What every sparse multi-class GP method shares: kernel quantities, whitened Gaussian algebra,
EP-style site bookkeeping, prediction.

Model (all papers): C latent functions, each with M inducing points ``Z[c]`` and inducing values
``u^c ~ N(0, K_c)``; f^c(x) given u^c is Gaussian with mean h^c = v' u^c, v = K_c^{-1} k_c(Z_c, x),
and the FITC conditional variance s^c (additive noise included). Computations use whitened
coordinates w = L^{-1} u (K = L L'), where h = psi' w with psi = L^{-1} k_c(Z_c, x).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import ClassVar

import torch
from torch import nn

from ..distributed import Reducer
from ..kernels import Kernel
from ..numerics import stable_cholesky, triangular_inverse
from .projection import projected_marginals

MIN_VARIANCE = 1e-10


def per_point_totals(c1: torch.Tensor, c2: torch.Tensor, y: torch.Tensor, n_classes: int):
    """Sum the two-sided sites of the factors (i, k) ``[B, C, 2]`` into per-point, per-class
    totals ``[B, C]`` (scalable EP eq. 26-27): class y_i collects the winning-side sites
    (``[..., 0]``) of all C - 1 factors of point i, class k != y_i the losing side of factor (i, k)."""
    onehot = torch.nn.functional.one_hot(y, n_classes).to(c1.dtype)
    return (c1[..., 1] + onehot * c1[..., 0].sum(1, keepdim=True),
            c2[..., 1] + onehot * c2[..., 0].sum(1, keepdim=True))


class _WhitenedSites(torch.autograd.Function):
    """B = I + L' Lambda L and b = L' eta with a closed-form backward (see :func:`whitened_sites`)."""

    @staticmethod
    def forward(ctx, L, precision, natural, value_B, value_b):
        precision_L = None
        if value_B is None:
            precision_L = precision @ L
            value_B = torch.baddbmm(torch.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand_as(L),
                                    L.transpose(-1, -2), precision_L)
            value_b = (L.transpose(-1, -2) @ natural[..., None])[..., 0]
        ctx.save_for_backward(L, precision, natural, precision_L)
        return value_B, value_b

    @staticmethod
    def backward(ctx, g_B, g_b):
        L, precision, natural, precision_L = ctx.saved_tensors
        if precision_L is None:
            precision_L = precision @ L
        g_L = torch.baddbmm(natural[..., :, None] * g_b[..., None, :], precision_L, g_B + g_B.transpose(-1, -2))
        g_precision = L @ g_B @ L.transpose(-1, -2) if ctx.needs_input_grad[1] else None
        g_natural = (L @ g_b[..., None])[..., 0] if ctx.needs_input_grad[2] else None
        return g_L, g_precision, g_natural, None, None


def whitened_sites(L: torch.Tensor, precision: torch.Tensor, natural: torch.Tensor, value=None):
    """Whitened natural parameters of q: B = I + L' Lambda L ``[C, M, M]`` and b = L' eta ``[C, M]``
    for u-space site sums ``precision`` (Lambda, symmetric) and ``natural`` (eta) and K = L L'.

    Backward in closed form: dE/dL = Lambda L (G + G') + eta gb' for incoming gradients G of B and
    gb of b (one matrix product; autodiff of the two products needs three). ``value``: an already
    known ``(B, b)`` at these arguments (e.g. updated from the previous B after a site update),
    which skips both forward products while keeping the gradient with respect to L.
    """
    value_B, value_b = (None, None) if value is None else value
    return _WhitenedSites.apply(L, precision, natural, value_B, value_b)


@dataclass(frozen=True)
class Capabilities:
    """What a method can do. The estimator and the trainer read these instead of method names.

    Attributes
    ----------
    batch_optimizer
        the optimiser of batch training: ``"sign-adaptive"`` where closed-form
        updates refine q (EP family, GFITC), ``"adam"`` where gradients fit q too, ``"lbfgs"``
        where the objective is a closed-form marginal likelihood (the Dirichlet GP). The papers
        train VI and GFITC with L-BFGS; docs/history.md ("Optimisers") says why not here.
    damping
        the method has damped closed-form (EP) updates and takes ``damping``.
    mini_batches
        the objective is a sum over data points, so mini-batches give unbiased
        estimates of it.
    data_parallel
        a step can be split across processes (:mod:`alphagp.distributed`): its
        closed-form updates are sums over the batch (per-point sites are then copied to every
        process), or it has none.
    class_parallel
        a step can also split the latent functions across processes: the
        classes meet only in the likelihood's terms of each point (computed from the
        gathered marginals, returned as ``ObjectiveTerms.coupled``), and everything else,
        q and its closed-form updates included, is per class.
    inducing_on_mini_batches
        mini-batch training may move the inducing inputs (what
        ``GPClassifier(optimize_inducing="auto")`` does); false for per-point sites, which go
        stale when the inducing inputs move (BENCHMARKS.md, "Per-point EP on mini-batches").
    exact_gradient
        the gradient of ``objective`` is the derivative of the value it returns
        (at the method's state held fixed); false where the gradient is by design another
        quantity (GFITC: EP's estimate of the evidence's gradient, its site constants held).
    sample_weight
        the method takes per-row weights (:meth:`SparseGPMethod.set_sample_weight`):
        a weight w_i raises point i's likelihood factor to the power w_i, so an integer weight
        is the row repeated (EP and power EP: the site of one copy enters q w_i times; VI and
        the gradient-fitted energies: the point's data term is scaled by w_i; tied factors
        count sum_i w_i points).
    streaming
        the method's state does not grow with the rows (no per-point sites, no
        draws kept from the training rows), so ``partial_fit`` can feed it rows a call at a
        time: stochastic EP, the gradient-fitted family and augmented VI.
    exact_rows
        ``n_inducing="auto"`` conditions on every training row up to this many rows (the
        exact posterior; 0: never), and beyond takes the method's ``AUTO_SETTINGS`` count.
    closed_form
        one local update gives the posterior at the current hyper-parameters (a conjugate
        model, or EP run to its fixed point): a fit that learns nothing takes one step, and so
        does a fit whose kernel start is the method's own type-II maximum likelihood (its
        ``AUTO_SETTINGS["kernel_init"]``).
    sparse
        the method has an inducing-point form (M < N); false for a method that always conditions
        on every training row (exact EP), whose ``n_inducing="auto"`` is then every row whatever
        their count.
    """

    batch_optimizer: str = "sign-adaptive"
    damping: bool = False
    mini_batches: bool = True
    data_parallel: bool = False
    class_parallel: bool = False
    inducing_on_mini_batches: bool = True
    exact_gradient: bool = True
    sample_weight: bool = False
    streaming: bool = False
    exact_rows: int = 0
    closed_form: bool = False
    sparse: bool = True


class WeightedRows:
    """Per-row weights of the training rows during a fit (not part of the model's state): a
    method with ``capabilities.sample_weight`` reads them through :meth:`_weighted` and
    :attr:`n_weighted` (module docstring of :class:`Capabilities`)."""

    sample_weight: torch.Tensor | None = None
    _weight_total: float | None = None

    def set_sample_weight(self, weight: torch.Tensor | None, total: float | None = None) -> None:
        """Weights ``[N]`` (non-negative, of the model's dtype and device) of the training rows that
        ``local_update``'s ``idx`` index, or ``None`` (every row weight 1), and the data set's total
        weight (:attr:`n_weighted`; default their sum: a stream's call holds some of the rows and
        gives the whole stream's). Only for a method whose ``capabilities.sample_weight`` is true;
        the estimators set them for a fit and clear them after."""
        if weight is not None and not self.capabilities.sample_weight:
            raise ValueError(f"{type(self).__name__} takes no sample weights")
        self.sample_weight = weight
        self._weight_total = None if weight is None else float(weight.sum() if total is None else total)

    @property
    def n_weighted(self) -> float:
        """The number of training points the likelihood counts: sum_i w_i, or N without weights."""
        return float(self.n_data) if self.sample_weight is None else self._weight_total

    def _weighted(self, values: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """``values`` ``[B, ...]`` of the batch's rows ``idx`` times their weights (unchanged without)."""
        if self.sample_weight is None:
            return values
        w = self.sample_weight[idx.to(self.sample_weight.device)]
        return values * w.reshape(-1, *([1] * (values.dim() - 1)))


class SparseGPMethod(WeightedRows, nn.Module):
    """Kernel, inducing points and likelihood of a sparse multi-class GP; subclasses add q.

    Subclasses implement ``local_update(X, y, idx)`` (returns the batch objective scaled to the
    data set), ``objective``, ``_latent_marginals(L, Psi)`` (q's means and variances of h,
    ``[C, B]`` each), ``config()`` and set ``TRAINING_STATE`` and ``CAPABILITIES``
    (:class:`Capabilities`; :attr:`capabilities` refines them for one built instance, where they
    depend on its arguments).
    """

    TRAINING_STATE: tuple[str, ...] = ()
    #: buffers of events each process of a data-parallel fit counts on its own rows, summed over
    #: the processes after the fit (none here: the EP counters sum over the global batch as they go)
    PROCESS_COUNTERS: tuple[str, ...] = ()
    #: the method's own ``method_params`` and their scikit-learn constraints (merged along the MRO
    #: by :func:`~alphagp.methods.method_parameters`); every other argument comes from the estimator
    OWN_PARAMETERS: ClassVar[dict] = {}
    CAPABILITIES: ClassVar[Capabilities] = Capabilities()
    #: why the method takes no ``alpha``, ``epsilon`` or ``damping`` where it takes none (the
    #: factory's error when a user sets one); a constructor declares only the arguments it uses
    REFUSES: ClassVar[dict[str, str]] = {}
    #: the values this method gives the estimator's ``"auto"`` settings (``kernel_init``,
    #: ``inducing_init``, ``shared_hyperparameters``, ``n_inducing``); the planner's rule applies
    #: to the settings not named (:func:`~alphagp.estimators.fit_plan.plan_fit`)
    AUTO_SETTINGS: ClassVar[dict] = {}
    #: state tensors that an earlier release wrote non-finite by a defect since fixed: name -> what it
    #: was and what to do (the refusal of such a file names it)
    KNOWN_DEFECTS: ClassVar[dict[str, str]] = {}
    #: scikit-learn's estimator checks a GPClassifier of the method fails by design, with the reason
    #: (:func:`~alphagp.estimators.base.expected_failed_checks` adds those of the capabilities)
    SCIKIT_LEARN_EXPECTED_FAILURES: ClassVar[dict[str, str]] = {}

    #: [C, M, M] matrices over the inducing points a fit holds at its peak (q(u)'s factors, the sparse
    #: posterior's sums, factors and solves; issue 67: the closed form with M = 8,000 over MNIST's 10
    #: classes passed a check without them, reached 23 GB, 4.5 such matrices of 5.1 GB, and was killed)
    SQUARE_COPIES: ClassVar[int] = 6

    @classmethod
    def working_bytes(cls, _n_rows: int, n_classes: int, n_inducing: int, itemsize: int, _exact: bool) -> int:
        """Bytes of the matrices over the inducing points (the rows, for an exact posterior) a fit of
        ``n_rows`` rows of ``n_classes`` classes with ``n_inducing`` of them, ``exact`` or not, in
        floats of ``itemsize`` bytes holds at its peak (the memory check's count; a method with
        another layout says its own)."""
        return n_classes * n_inducing * n_inducing * itemsize * cls.SQUARE_COPIES

    @classmethod
    def minimum_seconds(cls, _n_rows: int, _n_classes: int) -> float:
        """A lower bound on the seconds of any fit of ``n_rows`` rows of ``n_classes`` classes (the
        least work the method can do: none beyond a step for the sparse methods, whose step the
        trainer times): a fit's ``max_time`` below it is refused before the fit."""
        return 0.0

    def holds_a_fit(self) -> bool:
        """Whether the model as built already predicts as a fit (its kernel start's search left
        its state): the trainer then takes no step where the budget left cannot hold one. None of
        the methods but exact EP's."""
        return False

    def state_problems(self) -> list[str]:
        """What in the method's state (as a model file gave it) no fit could have left, said in
        words (a loaded file with any is refused); none for the methods without such state."""
        return []

    @classmethod
    def auto_n_inducing(cls, _n_rows: int, _n_classes: int, _itemsize: int, _max_time: float | None) -> int | None:
        """``n_inducing="auto"`` beyond the exact rows, for ``n_rows`` rows of ``n_classes`` classes in
        floats of ``itemsize`` bytes and a fit of at most ``max_time`` seconds: the method's
        ``AUTO_SETTINGS`` count (``None``: the planner's)."""
        return cls.AUTO_SETTINGS.get("n_inducing")

    def __init__(self, inducing_points: torch.Tensor, kernel: Kernel, likelihood):
        super().__init__()
        C = kernel.n_latent
        if likelihood.N_LATENT is not None and C != likelihood.N_LATENT:
            raise ValueError(f"the {type(likelihood).__name__} needs {likelihood.N_LATENT} latent function(s), "
                             f"the kernel has {C}")
        if likelihood.N_LATENT is None and C < 2:
            raise ValueError("multi-class GP classification needs at least 2 latent functions")
        if inducing_points.shape[0] not in (1, C) or inducing_points.dim() != 3:
            raise ValueError(f"inducing_points must have shape [{C}, M, D] or [1, M, D] (one set shared by all "
                             f"classes), got {list(inducing_points.shape)}")
        if inducing_points.shape[0] == 1 and kernel.groups != 1:
            raise ValueError("one set of inducing points shared by all classes needs the shared kernel "
                             "(shared_hyperparameters=True)")
        self.kernel = kernel
        self.inducing_points = nn.Parameter(inducing_points.clone())
        self.likelihood = likelihood
        self.n_classes = C
        self.register_buffer("n_skipped_updates", torch.zeros((), dtype=torch.long))
        self.register_buffer("n_improper_cavities", torch.zeros((), dtype=torch.long))
        #: sums across the processes of a data-parallel fit (:mod:`alphagp.distributed`)
        self.reducer = Reducer()
    # ------------------------------------------------------------------ the class split
    @property
    def _own_classes(self) -> slice:
        """The latent functions this process computes: all of them, or its block in a class split
        (:mod:`alphagp.distributed`)."""
        return self.reducer.class_slice(self.n_classes)

    def _own(self, tensor: torch.Tensor) -> torch.Tensor:
        """This process's block (a view) of a per-class tensor ``[C, ...]``."""
        return tensor if self.reducer.class_blocks == 1 else tensor[self._own_classes]

    def _all_classes(self, local: torch.Tensor) -> torch.Tensor:
        """``[C, ...]`` from this process's block ``[C_own, ...]`` and the other processes' (the
        identity without a class split); gradients reach only the own block."""
        return self.reducer.gather_classes(local, self.n_classes)

    def _whitened_kernel(self, X: torch.Tensor, classes: torch.Tensor | None = None):
        """L ``[C,M,M]`` (chol K_uu), Psi = L^{-1} K_uf ``[C,M,B]``, FITC variances s ``[C,B]``.

        With one inducing set and kernel shared by all classes (``inducing_points`` ``[1, M, D]``)
        K_uu, its factor and Psi are computed once and returned as views expanded over C.
        ``classes`` ``[K]``: the same for those latent functions only (leading dimension K), at
        the cost of K of them; by default this process's own classes (all without a class split).
        """
        if classes is None and self.reducer.class_blocks > 1:
            classes = torch.arange(self.n_classes, device=X.device)[self._own_classes]
        Z = self.inducing_points
        if classes is not None and Z.shape[0] > 1:
            Z = Z[classes]
        Kuu, Kuf = self.kernel.inducing_covariances(Z, X, expand=False, classes=classes)    # [C or 1, ...]
        jitter = 1e-6 * self.kernel.parameter_rows(self.kernel.amplitude, classes)[:, None, None]
        L = stable_cholesky(Kuu + jitter * torch.eye(Z.shape[1], dtype=Z.dtype, device=Z.device))
        Psi = triangular_inverse(L) @ Kuf
        q_diag = torch.linalg.vector_norm(Psi, dim=1).square()              # diag(Q_ff), one fused pass
        s = (self.kernel.diag(X, classes) - q_diag).clamp_min(MIN_VARIANCE)
        C = self.n_classes if classes is None else len(classes)
        return L.expand(C, -1, -1), Psi.expand(C, -1, -1), s

    #: state names of files and checkpoints written before a buffer was renamed: ``{old: new}``
    RENAMED_STATE: ClassVar[dict[str, str]] = {}

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Read a state written under the names of :attr:`RENAMED_STATE` (model files and
        checkpoints alike) as the current names."""
        for old, new in self.RENAMED_STATE.items():
            if prefix + old in state_dict and prefix + new not in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @property
    def capabilities(self) -> Capabilities:
        """The class's :data:`CAPABILITIES`, refined by the model's arguments: one latent function
        (the ordinal likelihood) has no classes to split across processes, and subclasses refine
        further (natural-gradient VI). What the estimator reads before the method is built
        (``mini_batches``, ``damping``, ``inducing_on_mini_batches``) is never refined here
        (:func:`alphagp.testing.check_capabilities_before_build`)."""
        if self.n_classes == 1 and self.CAPABILITIES.class_parallel:
            return replace(self.CAPABILITIES, class_parallel=False)
        return self.CAPABILITIES

    def _data_scale(self, idx: torch.Tensor) -> float:
        """N / |B| for the global batch of which ``idx`` ``[b]`` is this process's share (for
        closed-form steps; the objective's scaling is the trainer's)."""
        return self.n_data / self.reducer.batch_size(idx.numel())

    #: constructor arguments a model file does not store: the tensors and the likelihood (stored apart),
    #: and whether the per-point training state is allocated (the file says whether it holds it)
    NOT_CONFIG: ClassVar[tuple[str, ...]] = ("inducing_points", "kernel", "likelihood", "site_storage")

    def config(self) -> dict:
        """The constructor's other arguments (read along the class hierarchy's constructors, as
        :meth:`~alphagp.likelihoods.base.Likelihood.config` reads its own), from the attributes of
        the same names: with the registry name and the state's shapes they rebuild the method."""
        names: list[str] = []
        for cls in type(self).__mro__:
            init = cls.__dict__.get("__init__")
            if init is None:
                continue
            parameters = inspect.signature(init).parameters.values()
            names += [p.name for p in parameters if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            if not any(p.kind == p.VAR_KEYWORD for p in parameters):
                break
        return {name: getattr(self, name) for name in dict.fromkeys(names) if name not in self.NOT_CONFIG}

    def _count_refusals(self, improper: torch.Tensor, skipped: torch.Tensor, kept: torch.Tensor | None = None,
                        global_batch: bool = True) -> float | None:
        """Add a step's refused updates to ``n_improper_cavities`` (the factor's cavity had no
        proper Gaussian) and ``n_skipped_updates`` (the new site was invalid), summed over the
        global batch's processes (``global_batch``; GFITC steps on all rows in one process);
        returns the global sum of ``kept`` where given (SEP's count of updated factors)."""
        counts = torch.stack([improper.double(), skipped.double(), *([] if kept is None else [kept.double()])])
        if global_batch:
            counts = self.reducer.sum_rows_(counts)
        self.n_improper_cavities += int(counts[0])
        self.n_skipped_updates += int(counts[1])
        return None if kept is None else float(counts[2])

    def after_fit(self, X, y) -> None:
        """Called once after the training epochs with all training rows (``[N, D]``, standardised)
        and class indices ``[N]``; a no-op except for methods with a second stage (sampling)."""

    def leave_one_out(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """``(proba [n, C], y [n], weight [n])``: the class probabilities of each row the fitted model
        conditions on given its other rows (a weighted row left out with all its weight, the kernel
        fixed), with the row's class index and weight, in the model's order, where the model gives
        them in closed form; ``None`` for a model that does not."""
        return None

    def diagnostics(self) -> dict:
        """Plain-data facts about the fit (counters of refused updates, sampler diagnostics)."""
        return {"n_skipped_updates": int(self.n_skipped_updates),
                "n_improper_cavities": int(self.n_improper_cavities)}

    def objective(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The method's objective on the batch ``idx`` (all of it in this process), scaled to the data
        set, at the current q: :meth:`_objective`'s terms combined by
        :meth:`~alphagp.objective.ObjectiveTerms.total`."""
        return self._objective(*self._whitened_kernel(X), y, idx).total(self.n_data, idx.numel())

    @torch.no_grad()
    def predict_f(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginal means and variances ``[N, C]`` of f(x), additive noise included (EP eq. 65-67,
        A.31-A.33); in a class split (validation during training) every process computes its own
        classes' and gathers the rest."""
        L, Psi, s = self._whitened_kernel(X)
        mean, var = self._latent_marginals(L, Psi)
        mean, var = self._all_classes(torch.stack((mean, s + var.clamp_min(MIN_VARIANCE)), 1)).unbind(1)
        return mean.T, var.T

    @torch.no_grad()
    def predict_proba(self, X: torch.Tensor) -> torch.Tensor:
        """``[N, C]`` class probabilities by 1-D quadrature (EP eq. 68, alpha paper A.34)."""
        return self.likelihood.predict_proba(*self.predict_f(X))


class StoredQ:
    """Mixin for methods that compute q(w) in whitened coordinates at the current kernel and keep
    it for prediction: buffers ``site_precision`` ``[C, M, M]`` and ``site_natural`` ``[C, M]``
    hold q's natural parameters minus the prior's in u-space, so predictions stay consistent
    with whatever kernel the module holds (as the EP methods' running sums do)."""

    def _register_stored_q(self, C: int, M: int, dtype) -> None:
        self.register_buffer("site_precision", torch.zeros(C, M, M, dtype=dtype))
        self.register_buffer("site_natural", torch.zeros(C, M, dtype=dtype))

    @torch.no_grad()
    def _store_q(self, L, Bm, b) -> None:
        """Store whitened q = (precision ``Bm``, natural mean ``b``) as u-space sites:
        L^{-T} (B - I) L^{-1} and L^{-T} b."""
        L_inv = triangular_inverse(L)
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        self.site_precision.copy_(L_inv.mT @ (Bm - eye) @ L_inv)
        self.site_natural.copy_((L_inv.mT @ b[..., None])[..., 0])

    def _latent_marginals(self, L, Psi):
        mean, var, _ = projected_marginals(*whitened_sites(L, self._own(self.site_precision),
                                                           self._own(self.site_natural)), Psi)
        return mean, var

    # ------------------------------------------------------------------ Gaussian algebra
    @staticmethod
    def _scaled_gram(Psi, weights):
        """Psi diag(w) Psi' ``[C, M, M]`` for ``Psi`` ``[C, M, B]`` and ``weights`` ``[B, C]``."""
        return (Psi * weights.T[:, None, :]) @ Psi.transpose(-1, -2)

    @staticmethod
    def _weighted_sum(Psi, weights):
        """Psi w ``[C, M]`` for ``Psi`` ``[C, M, B]`` and ``weights`` ``[B, C]``."""
        return (Psi @ weights.T[..., None])[..., 0]

    @staticmethod
    def _to_u_space(L, gram, vec):
        """Whitened natural parameters (L' Lambda L, L' eta) back to u-space (Lambda, eta)."""
        Lt = L.transpose(-1, -2)
        half = torch.linalg.solve_triangular(Lt, gram, upper=True)                 # L^{-T} G
        precision = torch.linalg.solve_triangular(Lt, half.transpose(-1, -2), upper=True)
        natural = torch.linalg.solve_triangular(Lt, vec[..., None], upper=True)[..., 0]
        return 0.5 * (precision + precision.transpose(-1, -2)), natural


class SiteMethod(StoredQ, SparseGPMethod):
    """Methods whose q is the prior times rank-one Gaussian sites along the directions v_i^c.

    Buffers ``site_precision`` ``[C, M, M]`` and ``site_natural`` ``[C, M]`` hold the running sum
    of all sites' natural parameters in u-space (the tied factor for stochastic EP). Untied
    methods also keep, per point, the sites' total precision and natural mean per class
    (subclass-specific layout) and ``factor_v`` ``[N, C, M]``, the v_i^c they were stored with,
    so a mini-batch can take its own old contribution out of the running sum exactly.
    """

    #: a step's sums over the batch are all-reduced and per-point sites copied to every process.
    #: Per-point sites (EP, REP, PEP) may not move the inducing inputs on mini-batches (SEP's tied
    #: factor may, and declares so): they sit in the running sum along the directions v_i of their
    #: last refresh, once per epoch; moving inducing inputs changes what u means at every step, so
    #: the unrefreshed sites go stale and, without the forgetting of SEP's tied factor, drive the
    #: new ones to grow without bound. Measured (BENCHMARKS.md, "Per-point EP on mini-batches"): on
    #: MNIST, EP and PEP with learnt inducing inputs diverge at every Adam rate from 0.01 down to
    #: 0.0003, and are stable and improving with them fixed.
    CAPABILITIES = Capabilities(damping=True, data_parallel=True, sample_weight=True, inducing_on_mini_batches=False)

    def __init__(self, inducing_points, kernel, likelihood, n_data: int, alpha: float, damping: float,
                 per_point: bool):
        super().__init__(inducing_points, kernel, likelihood)
        if not 0.0 < damping <= 1.0:
            raise ValueError(f"damping must lie in (0, 1], got {damping}")
        C, M = self.n_classes, inducing_points.shape[1]
        dtype = inducing_points.dtype
        self.alpha = float(alpha)
        self.damping = float(damping)
        self.n_data = int(n_data)
        self._register_stored_q(C, M, dtype)
        self.per_point = bool(per_point)
        if per_point:
            self.register_buffer("factor_v", torch.zeros(n_data, C, M, dtype=dtype))
            # False once a full-batch update stored sites without refreshing factor_v
            self.register_buffer("factor_v_current", torch.ones((), dtype=torch.bool))

    # ------------------------------------------------------------------ per-point bookkeeping
    def _whole_batch(self, idx: torch.Tensor) -> bool:
        """Whether the global batch of which ``idx`` is this process's share is all N rows."""
        return self.reducer.batch_size(idx.numel()) == self.n_data

    def _rest_of_sum(self, prec: torch.Tensor, nat: torch.Tensor, idx: torch.Tensor):
        """Running u-space sum minus the global batch's stored sites (this process's totals
        ``prec``, ``nat`` ``[B, C]``; the other processes' parts are summed in)."""
        if self._whole_batch(idx):
            return torch.zeros_like(self.site_precision), torch.zeros_like(self.site_natural)
        if not bool(self.factor_v_current):
            raise RuntimeError("this EP model was trained with full-batch updates; mini-batch updates "
                               "after them are not supported (the stored v_i are stale)")
        v = self.factor_v[idx]                                       # [B, C, M]
        lam = self.reducer.sum_rows_(torch.einsum("bcm,bc,bcn->cmn", v, prec, v))
        eta = self.reducer.sum_rows_(torch.einsum("bcm,bc->cm", v, nat))
        return self.site_precision - lam, self.site_natural - eta

    def _batch_marginals(self, Bm, b, Psi, prec, nat):
        """Marginals ``[C, B]`` at the batch's columns of q restricted to the global batch, and
        g(q) - g(prior) ``[C]`` (:func:`.projection.projected_marginals`): q is the rest of the
        sum (whitened ``Bm``, ``b``) plus the global batch's sites along the current directions.
        This process's sites are ``prec``, ``nat`` ``[B, C]`` along ``Psi`` ``[C, M, B]``; in a
        row split the other processes' parts are summed in, differentiably (their gradient
        reaches each process's own Psi)."""
        if self.reducer.row_blocks == 1:
            return projected_marginals(Bm, b, Psi, prec.T, nat.T)
        gram = self.reducer.sum_rows(self._scaled_gram(Psi, prec))
        vec = self.reducer.sum_rows(self._weighted_sum(Psi, nat))
        return projected_marginals(Bm + gram, b + vec, Psi)

    @torch.no_grad()
    def _store_batch_sites(self, L, Psi, idx, rest, prec, nat) -> None:
        """Running sum = ``rest`` + the global batch's new site totals along the current v_i (this
        process's ``prec``, ``nat`` ``[B, C]``); in a row split every process then copies the
        other processes' rows of the per-point buffers, so all hold the same sites."""
        gram = self.reducer.sum_rows_(self._scaled_gram(Psi, prec))
        vec = self.reducer.sum_rows_(self._weighted_sum(Psi, nat))
        batch_prec, batch_nat = self._to_u_space(L, gram, vec)
        self.site_precision.copy_(rest[0] + batch_prec)
        self.site_natural.copy_(rest[1] + batch_nat)
        whole = self._whole_batch(idx)
        if whole:
            self.factor_v_current.fill_(False)
        else:  # mini-batches take their old sites out along these v_i
            self.factor_v[idx] = (triangular_inverse(L).transpose(-1, -2) @ Psi).permute(2, 0, 1)
        if self.reducer.row_blocks > 1:
            rows = self.reducer.gather_rows(idx)
            for name in self.TRAINING_STATE:
                buffer = getattr(self, name)
                if buffer.dim() and buffer.shape[0] == self.n_data and not (whole and name == "factor_v"):
                    buffer[rows] = self.reducer.gather_rows(buffer[idx])

    def _require_training_state(self) -> None:
        if not self.site_storage:
            raise RuntimeError("this EP model was loaded without its training state (per-point sites); "
                               "it can predict but not train; a fit is continued from its checkpoint "
                               "(GPClassifier(checkpoint=...))")
