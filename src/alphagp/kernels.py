"""ARD squared-exponential covariance with amplitude and additive noise, batched over latent functions.

The papers' choice (scalable EP, section 4): for latent function c,

    k_c(x, x') = a_c exp(-1/2 sum_d (x_d - x'_d)^2 / l_{c,d}^2) + n_c [x = x'],

where the additive noise n_c only enters the prior variance of a training or test point,
never the covariance between inducing points. With ``linear`` the kernel has a linear term too,
b_c x'x' (issue 79: a table's linear signal, which logistic regression takes and the RBF alone
needs many rows to), so that k_c(x, x') above gains b_c sum_d x_d x'_d. Positive parameters are stored unconstrained,
through a softplus (the default; the GP classifiers' studied settings) or a log (``positive="log"``,
the deep GPs, as in the deep-GP authors' code): Adam's steps then change a value by a share of
itself, not by an absolute amount, which matters for lengthscales far from 1.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.functional import softplus


def inverse_softplus(x: torch.Tensor) -> torch.Tensor:
    """Inverse of softplus for positive ``x`` (stable for large x)."""
    return x + torch.log(-torch.expm1(-x))


#: the maps from stored (raw) values to positive parameters, and back
POSITIVE_TRANSFORMS = {"softplus": (softplus, inverse_softplus), "log": (torch.exp, torch.log)}


def _check_positive(positive: str) -> str:
    if positive not in POSITIVE_TRANSFORMS:
        raise ValueError(f"positive must be one of {sorted(POSITIVE_TRANSFORMS)}, got {positive!r}")
    return positive


class _Gram(torch.autograd.Function):
    """S S' for ``S`` ``[..., n, D]`` with the one-product backward (G + G') S (autodiff of
    ``S @ S.mT`` makes two products of that size, one per factor)."""

    @staticmethod
    def forward(ctx, S):
        ctx.save_for_backward(S)
        return S @ S.transpose(-1, -2)

    @staticmethod
    def backward(ctx, grad):
        (S,) = ctx.saved_tensors
        return (grad + grad.transpose(-1, -2)) @ S


def _expanded(name: str, value, shape: tuple[int, ...], dtype) -> torch.Tensor:
    """An initial kernel hyper-parameter broadcast to ``shape`` (``[G]``, or ``[G, D]`` for the
    lengthscales, G kernels), or a ``ValueError`` that says how many values the model takes."""
    tensor = torch.as_tensor(value, dtype=dtype)
    try:
        return tensor.expand(*shape).clone()
    except RuntimeError:
        groups = shape[0]
        per = "one per feature, " if len(shape) == 2 else ""
        raise ValueError(
            f"kernel_params['{name}'] has shape {list(tensor.shape)}, but this model has {groups} kernel"
            f"{'s' if groups > 1 else ''} (one per latent function; an ordinal model has one latent function, and "
            f"shared_hyperparameters=True gives one kernel for all classes): give one number, {per}or a row per "
            f"kernel, shape {list(shape)}") from None


class Kernel(nn.Module):
    """What a method reads of its kernel, for ``n_latent`` latent functions whose parameters come in
    :attr:`groups` rows (1: shared by all, else one per latent function): ``amplitude`` ``[G]`` (the
    unit of the jitter), the additive ``noise`` ``[G]`` on the data, :meth:`cross` and
    :meth:`inducing_covariances`, the prior variances (:meth:`prior_variance` without the noise,
    :meth:`diag` with it) and :meth:`spec`, plain data for :func:`kernel_from_spec`. The kernels:
    :class:`ARDKernel` (the papers' RBF, with a linear term), :class:`PolynomialKernel` (the deep
    GPs' first layer) and :class:`TermKernel` (any composition of :mod:`alphagp.kernel_terms`)."""

    n_latent: int

    @property
    def groups(self) -> int:
        """The rows of every parameter (1: one set for all latent functions)."""
        raise NotImplementedError

    def parameter_rows(self, value: torch.Tensor, classes: torch.Tensor | None) -> torch.Tensor:
        """The rows of a ``[G, ...]`` parameter for latent functions ``classes`` (all if None;
        shared parameters have one row for every class)."""
        return value if classes is None or value.shape[0] == 1 else value[classes]

    def diag(self, X: torch.Tensor, classes: torch.Tensor | None = None) -> torch.Tensor:
        """Prior variance of data points ``X`` ``[n, D]`` including the additive noise: ``[C, n]``
        (``[K, n]`` for the latent functions ``classes``)."""
        prior = self.prior_variance(X)
        prior = prior if classes is None else prior[classes]
        return prior + self.parameter_rows(self.noise, classes)[:, None]


class ARDKernel(Kernel):
    """ARD squared-exponential kernel for ``n_latent`` latent functions.

    Parameters have shape ``[G, ...]`` where G is ``n_latent``, or 1 when the
    hyper-parameters are shared across latent functions (then they broadcast).

    Parameters
    ----------
    n_latent
        number of latent functions C.
    n_features
        input dimension D.
    shared
        one set of hyper-parameters for all latent functions.
    lengthscale, amplitude, noise
        initial values (scalars, or arrays broadcastable to
        ``[G, D]``, ``[G]``, ``[G]``).
    linear
        the initial variance b of the linear term (``[G]`` or a scalar); ``None``: no linear term.
    positive
        how the positive parameters are stored, ``"softplus"`` or ``"log"``
        (:data:`POSITIVE_TRANSFORMS`).
    """

    def __init__(self, n_latent: int, n_features: int, shared: bool = False,
                 lengthscale=None, amplitude=1.0, noise=0.1, dtype=torch.float64, positive: str = "softplus",
                 linear=None):
        super().__init__()
        self.positive = _check_positive(positive)
        to_raw = POSITIVE_TRANSFORMS[positive][1]
        groups = 1 if shared else n_latent
        if lengthscale is None:
            lengthscale = math.sqrt(n_features)
        ls = _expanded("lengthscale", lengthscale, (groups, n_features), dtype)
        amp = _expanded("amplitude", amplitude, (groups,), dtype)
        nz = _expanded("noise", noise, (groups,), dtype)
        values = [("lengthscale", ls), ("amplitude", amp), ("noise", nz)]
        if linear is not None:
            values.append(("linear", _expanded("linear", linear, (groups,), dtype)))
        for name, value in values:
            if not torch.all(torch.isfinite(value)) or torch.any(value <= 0):
                raise ValueError(f"kernel {name} must be finite and positive, got {value.tolist()}")
        self.n_latent = n_latent
        self.raw_lengthscale = nn.Parameter(to_raw(ls))
        self.raw_amplitude = nn.Parameter(to_raw(amp))
        self.raw_noise = nn.Parameter(to_raw(nz))
        self.raw_linear = None if linear is None else nn.Parameter(to_raw(values[-1][1]))

    @property
    def lengthscale(self) -> torch.Tensor:
        """``[G, D]``"""
        return POSITIVE_TRANSFORMS[self.positive][0](self.raw_lengthscale)

    @property
    def amplitude(self) -> torch.Tensor:
        """``[G]``"""
        return POSITIVE_TRANSFORMS[self.positive][0](self.raw_amplitude)

    @property
    def noise(self) -> torch.Tensor:
        """``[G]``"""
        return POSITIVE_TRANSFORMS[self.positive][0](self.raw_noise)

    @property
    def linear(self) -> torch.Tensor | None:
        """``[G]``: the linear term's variance b (``None``: no linear term)."""
        return None if self.raw_linear is None else POSITIVE_TRANSFORMS[self.positive][0](self.raw_linear)

    def _with_linear(self, K: torch.Tensor, A: torch.Tensor, B: torch.Tensor, classes=None) -> torch.Tensor:
        """``K`` ``[G', n, m]`` plus the linear term b_g A B' (``A`` ``[C or G, n, D]`` or ``[n, D]``, ``B``
        likewise), broadcast over the leading dimension; ``K`` itself without a linear term."""
        if self.raw_linear is None:
            return K
        b = self.parameter_rows(self.linear, classes)[:, None, None]
        return K + b * (A @ B.transpose(-1, -2))

    @property
    def groups(self) -> int:
        return self.raw_lengthscale.shape[0]

    def _weighted(self, A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``A`` times the inverse squared lengthscales and the squared norms ``|A / l|^2``.

        ``A`` is ``[C, n, D]`` (per-latent inputs) or ``[n, D]`` (shared, broadcast over the
        hyper-parameter groups); returns ``[G', n, D]`` and ``[G', n]``.
        """
        weighted = A * self.lengthscale.pow(-2)[:, None, :]
        return weighted, (weighted * A).sum(-1)

    @staticmethod
    def _shared_sq_norms(B: torch.Tensor, lengthscale: torch.Tensor) -> torch.Tensor:
        """``|B / l_g|^2`` ``[G, m]`` for shared inputs ``B`` ``[m, D]``, as one small product."""
        return lengthscale.pow(-2) @ (B * B).T

    def _from_products(self, products: torch.Tensor, sq_A: torch.Tensor, sq_B: torch.Tensor,
                       expand: bool = True, classes: torch.Tensor | None = None) -> torch.Tensor:
        """a exp(A_i' W B_j - |A_i|_W^2 / 2 - |B_j|_W^2 / 2) with W = diag(l^-2), i.e. the kernel.

        ``products`` ``[G', n, m]``, ``sq_A`` ``[G', n]``, ``sq_B`` ``[G'', m]``; returns ``[C, n, m]``
        (``expand=False``: ``[1, n, m]`` when inputs and hyper-parameters are shared by all C;
        ``classes``: only those latent functions).
        """
        row = torch.log(self.parameter_rows(self.amplitude, classes))[:, None] - 0.5 * sq_A
        K = torch.exp(products + (row[..., None] - 0.5 * sq_B[:, None, :]))
        count = self.n_latent if classes is None else len(classes)
        return K.expand(count, -1, -1) if expand and K.shape[0] == 1 else K

    def cross(self, A: torch.Tensor, B: torch.Tensor, expand: bool = True) -> torch.Tensor:
        """Noise-free covariance between ``A`` and ``B``.

        Parameters
        ----------
        A
            ``[C, n, D]`` (per-latent inputs, e.g. inducing points) or ``[n, D]`` (shared).
        B
            ``[C, m, D]`` or ``[m, D]``.
        expand
            ``False`` keeps a leading 1 where the inputs and hyper-parameters are shared.

        Returns
        -------
        ``[C, n, m]`` (``[1, n, m]`` shared and not expanded).
        """
        A_w, sq_A = self._weighted(A)
        sq_B = self._shared_sq_norms(B, self.lengthscale) if B.dim() == 2 else self._weighted(B)[1]
        K = self._with_linear(self._from_products(A_w @ B.transpose(-1, -2), sq_A, sq_B, False), A, B)
        return K.expand(self.n_latent, -1, -1) if expand and K.shape[0] == 1 else K

    def inducing_covariances(self, Z: torch.Tensor, X: torch.Tensor, expand: bool = True,
                             classes: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """K_uu ``[C, M, M]`` and K_uf ``[C, M, n]`` for inducing points ``Z`` and data ``X``.

        Same values as ``cross(Z, Z)`` and ``cross(Z, X)``. K_uu comes from the Gram matrix of
        S = Z / l (one product forward and one backward, with the squared norms on its
        diagonal); the data enter only through one product of Z / l^2 with the shared ``X'``
        (a single matrix product over all classes) and their weighted squared norms (a
        ``[G, D] x [D, n]`` product): no per-class copy of X is made in the forward or the
        backward pass. Those copies were the step's largest memory passes when D is large (MNIST).

        Parameters
        ----------
        Z
            ``[C, M, D]``, ``[1, M, D]`` or ``[M, D]``; X: ``[n, D]``.
        expand
            ``False`` keeps a leading 1 where Z and the hyper-parameters are shared, so
            one set of covariances (and its Cholesky factor) serves every latent function.
        classes
            ``[K]`` indices of the latent functions wanted (``None``: all C); ``Z`` then
            holds their inducing points (``[K, M, D]``) or the shared set. The cost is that
            of K latent functions (class subsampling).
        """
        lengthscale = self.parameter_rows(self.lengthscale, classes)
        inv_l = lengthscale.reciprocal()[:, None, :]
        S = Z * inv_l
        gram = _Gram.apply(S)
        sq_Z = torch.diagonal(gram, dim1=-2, dim2=-1)
        if self.raw_linear is None:
            Kuu = self._from_products(gram, sq_Z, sq_Z, expand, classes)
            Kuf = self._from_products((S * inv_l) @ X.T, sq_Z, self._shared_sq_norms(X, lengthscale), expand, classes)
            return Kuu, Kuf
        count = self.n_latent if classes is None else len(classes)
        Kuu = self._with_linear(self._from_products(gram, sq_Z, sq_Z, False, classes), Z, Z, classes)
        Kuf = self._with_linear(self._from_products((S * inv_l) @ X.T, sq_Z, self._shared_sq_norms(X, lengthscale),
                                                    False, classes), Z, X, classes)
        if expand and Kuu.shape[0] == 1:
            Kuu, Kuf = Kuu.expand(count, -1, -1), Kuf.expand(count, -1, -1)
        return Kuu, Kuf

    def spec(self) -> dict:
        """Plain data naming this kernel type (model files; :func:`kernel_from_spec`)."""
        return {"type": "ard", "positive": self.positive, **({"linear": True} if self.raw_linear is not None else {})}

    def prior_variance(self, X: torch.Tensor) -> torch.Tensor:
        """Noise-free prior variances k(x, x) ``[C, n]`` at inputs ``X`` ``[n, D]`` (the amplitude, plus
        b |x|^2 with a linear term)."""
        variance = self.amplitude[:, None].expand(self.n_latent, X.shape[0])
        if self.raw_linear is None:
            return variance
        return variance + self.linear[:, None] * (X * X).sum(-1)[None]

    def diag(self, X: torch.Tensor, classes: torch.Tensor | None = None) -> torch.Tensor:
        """Prior variance of data points ``X`` ``[n, D]`` including the additive noise: ``[C, n]``
        (``[K, n]`` for the latent functions ``classes``)."""
        count, n = self.n_latent if classes is None else len(classes), X.shape[0]
        total = self.parameter_rows(self.amplitude + self.noise, classes)[:, None].expand(count, n)
        if self.raw_linear is None:
            return total
        return total + self.parameter_rows(self.linear, classes)[:, None] * (X * X).sum(-1)[None]


class PolynomialKernel(Kernel):
    """ARD polynomial kernel k_c(x, x') = a_c (x' W_c x' + 1)^degree with W_c = diag(l_c^-2), plus
    additive noise n_c on the data (the first layer of the deep-GP paper's MNIST model, degree 9,
    as in the authors' code). Same parameters (``[C, D]`` lengthscales, ``[C]`` amplitudes and
    noises, stored as ``positive`` says) and the same interface as :class:`ARDKernel` where the deep
    GP uses it.

    ``normalized=True`` divides by the geometric mean of the two points' own values,

        k_c(x, x') = a_c p(x, x') / sqrt(p(x, x) p(x', x')),   p(x, x') = (x' W_c x' + 1)^degree,

    a kernel again (a positive semi-definite kernel scaled by f(x) f(x')) whose prior variance is
    a_c at every input. The plain kernel's prior variance grows like |x|^(2 degree): on MNIST's
    standardised pixels (rare pixels reach |x| ~ 100) it spans 6 to 7.5e15 across images, and
    the deep GP's first layer then propagates samples of standard deviation in the thousands
    (BENCHMARKS.md, "Deep GPs at the paper's settings"). The deep-GP authors' layer never meets
    this: it takes the amplitude as k(x, x) for every kernel (written for the RBF), which is
    exactly the normalised kernel's diagonal but not its off-diagonal.
    """

    def __init__(self, n_latent: int, n_features: int, degree: int = 9, lengthscale=None, amplitude=1.0,
                 noise=0.1, dtype=torch.float64, positive: str = "softplus", normalized: bool = False):
        super().__init__()
        if degree < 1:
            raise ValueError(f"degree must be a positive integer, got {degree}")
        if lengthscale is None:
            lengthscale = math.sqrt(n_features)
        values = {"lengthscale": torch.as_tensor(lengthscale, dtype=dtype).expand(n_latent, n_features).clone(),
                  "amplitude": torch.as_tensor(amplitude, dtype=dtype).expand(n_latent).clone(),
                  "noise": torch.as_tensor(noise, dtype=dtype).expand(n_latent).clone()}
        for name, value in values.items():
            if not torch.all(torch.isfinite(value)) or torch.any(value <= 0):
                raise ValueError(f"kernel {name} must be finite and positive, got {value.tolist()}")
        self.positive = _check_positive(positive)
        to_raw = POSITIVE_TRANSFORMS[positive][1]
        self.n_latent, self.degree, self.normalized = n_latent, int(degree), bool(normalized)
        self.raw_lengthscale = nn.Parameter(to_raw(values["lengthscale"]))
        self.raw_amplitude = nn.Parameter(to_raw(values["amplitude"]))
        self.raw_noise = nn.Parameter(to_raw(values["noise"]))

    lengthscale = ARDKernel.lengthscale
    amplitude = ARDKernel.amplitude
    noise = ARDKernel.noise
    groups = ARDKernel.groups

    def spec(self) -> dict:
        return {"type": "polynomial", "degree": self.degree, "positive": self.positive, "normalized": self.normalized}

    def _self_bases(self, A: torch.Tensor) -> torch.Tensor:
        """x' W_c x + 1 ``[C, n]`` for ``A`` ``[C, n, D]`` or ``[n, D]``."""
        weights = self.lengthscale.pow(-2)
        if A.dim() == 2:
            return weights @ (A * A).T + 1.0
        return (A * A * weights[:, None, :]).sum(-1) + 1.0

    def cross(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """``[C, n, m]`` covariances between ``A`` (``[C, n, D]`` or ``[n, D]``) and ``B`` (same forms)."""
        A_w = A * self.lengthscale.pow(-2)[:, None, :]                               # [C, n, D]
        base = A_w @ B.transpose(-1, -2) + 1.0
        if self.normalized:   # cosine of the angle in the feature space of x -> (x / l, 1)
            base = base * torch.rsqrt(self._self_bases(A))[:, :, None] * torch.rsqrt(self._self_bases(B))[:, None, :]
        return self.amplitude[:, None, None] * base.pow(self.degree)

    def inducing_covariances(self, Z: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """K_uu ``[C, M, M]`` and K_uf ``[C, M, n]`` for ``Z`` ``[C, M, D]`` and ``X`` ``[n, D]``."""
        return self.cross(Z, Z), self.cross(Z, X)

    def prior_variance(self, X: torch.Tensor) -> torch.Tensor:
        """Noise-free k(x, x) ``[C, n]`` at ``X`` ``[n, D]`` (the amplitude when normalised)."""
        if self.normalized:
            return self.amplitude[:, None].expand(self.n_latent, X.shape[0])
        return self.amplitude[:, None] * self._self_bases(X).pow(self.degree)


class TermKernel(Kernel):
    """A kernel composed of :mod:`alphagp.kernel_terms` (``GPClassifier(kernel=...)``) for
    ``n_latent`` latent functions over ``n_features`` features: the term's theta ``[G, P]`` per
    parameter group (``shared``: G = 1) and an additive noise ``[G]`` on the data, both stored as
    logs (Adam and the sign-adaptive steps move them by shares of themselves). ``theta``: the
    initial logs (``[P]`` or ``[G, P]``; default: :meth:`~alphagp.kernel_terms.Term.initial` at
    variance 1 and lengthscale sqrt(D), the fixed start of :class:`ARDKernel`); ``noise``: the
    initial noise."""

    def __init__(self, term, n_latent: int, n_features: int, shared: bool = False, theta=None, noise=0.1,
                 dtype=torch.float64):
        super().__init__()
        self.term, self.n_latent, self.n_features = term, int(n_latent), int(n_features)
        groups, width = 1 if shared else n_latent, term.n_params(n_features)
        if theta is None:
            theta = term.initial(n_features, 1.0, math.sqrt(n_features))
        values = _expanded("theta", theta, (groups, width), dtype)
        nz = _expanded("noise", noise, (groups,), dtype)
        if not torch.all(torch.isfinite(values)) or not torch.all(torch.isfinite(nz)) or torch.any(nz <= 0):
            raise ValueError(f"kernel {term!r}: its parameters must be finite and its noise positive, got theta "
                             f"{values.tolist()} and noise {nz.tolist()}")
        self.raw_theta = nn.Parameter(values)
        self.raw_noise = nn.Parameter(torch.log(nz))

    @property
    def groups(self) -> int:
        return self.raw_theta.shape[0]

    @property
    def noise(self) -> torch.Tensor:
        """``[G]``"""
        return self.raw_noise.exp()

    @property
    def amplitude(self) -> torch.Tensor:
        """``[G]``: the term's scale (:meth:`~alphagp.kernel_terms.Term.variance`)."""
        return torch.stack([self.term.variance(theta, self.n_features) for theta in self.raw_theta])

    def values(self) -> list[dict]:
        """Each group's parameters as positive values by name, and its noise (plain floats)."""
        return [{**self.term.values(theta.detach().cpu().numpy(), self.n_features), "noise": float(noise)}
                for theta, noise in zip(self.raw_theta, self.noise.detach().cpu())]

    def _covariances(self, A: torch.Tensor, B: torch.Tensor, classes: torch.Tensor | None, expand: bool):
        """``[G', n, m]`` between ``A`` and ``B`` (``[n, D]``, or ``[K or 1, n, D]`` per latent function)."""
        theta = self.parameter_rows(self.raw_theta, classes)
        count = self.n_latent if classes is None else len(classes)
        batch = max([theta.shape[0], *(T.shape[0] for T in (A, B) if T.dim() == 3)])

        def at(T, g):
            return T if T.dim() == 2 else T[g if T.shape[0] > 1 else 0]

        K = torch.stack([self.term.matrix(theta[g if theta.shape[0] > 1 else 0], at(A, g), at(B, g))
                         for g in range(batch)])
        return K.expand(count, -1, -1) if expand and batch == 1 else K

    def cross(self, A: torch.Tensor, B: torch.Tensor, expand: bool = True) -> torch.Tensor:
        """Noise-free covariances ``[C, n, m]`` between ``A`` and ``B`` (``[n, D]`` or ``[C, n, D]``;
        ``expand=False`` keeps a leading 1 where inputs and parameters are shared)."""
        return self._covariances(A, B, None, expand)

    def inducing_covariances(self, Z: torch.Tensor, X: torch.Tensor, expand: bool = True,
                             classes: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """K_uu ``[C, M, M]`` and K_uf ``[C, M, n]`` (:meth:`ARDKernel.inducing_covariances`' contract)."""
        return self._covariances(Z, Z, classes, expand), self._covariances(Z, X, classes, expand)

    def prior_variance(self, X: torch.Tensor) -> torch.Tensor:
        """Noise-free k(x, x) ``[C, n]`` at ``X`` ``[n, D]``."""
        prior = torch.stack([self.term.diagonal(theta, X) for theta in self.raw_theta])
        return prior.expand(self.n_latent, -1)

    def spec(self) -> dict:
        return {"type": "term", "term": self.term.spec()}


def kernel_from_spec(spec: dict, n_latent: int, n_features: int, dtype=torch.float64, shared: bool = False
                     ) -> nn.Module:
    """A kernel of the type ``spec`` names (``ARDKernel.spec()``, ``PolynomialKernel.spec()``,
    ``TermKernel.spec()``) with placeholder parameters, to load a state dict into."""
    if spec["type"] == "term":
        from .kernel_terms import term_from_spec
        return TermKernel(term_from_spec(spec["term"]), n_latent, n_features, shared=shared, dtype=dtype)
    positive = spec.get("positive", "softplus")          # files written before log storage: softplus
    if spec["type"] == "ard":
        return ARDKernel(n_latent, n_features, dtype=dtype, positive=positive,
                         linear=1.0 if spec.get("linear") else None)
    if spec["type"] == "polynomial":
        return PolynomialKernel(n_latent, n_features, degree=int(spec["degree"]), dtype=dtype, positive=positive,
                                normalized=bool(spec.get("normalized", False)))
    raise ValueError(f"unknown kernel type {spec['type']!r}")
