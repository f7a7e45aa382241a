"""Deep GPs trained by approximate power EP with tied factors (deep-GP paper, section 4).

Model (eq. 6): L layers; layer l has H_l independent GPs on the outputs of layer l - 1 (the
inputs X for l = 1), each with its own ARD kernel and M inducing points ``Z[h]``; hidden layers
add a fixed linear mean x W, and the noise sigma_{l,h}^2 of each unit (the kernel's ``noise``):
inter-layer noise in hidden layers, the likelihood's variance (regression) or latent noise
(classification) in the last.

Approximation (eq. 10-11 with SEP's tied factors): q(u_h) is proportional to p(u_h) times one
factor, the N tied sites together. q is stored whitened, q(w_h) = N(m_h, S_h S_h') with
u_h = L_h w_h and K_uu = L_h L_h' (S lower triangular with a positive diagonal exp(raw)); its
natural parameters, B = (S S')^{-1} = I + L' Lambda L and b = B m, are those of the u-space
factor (precision Lambda, natural mean eta = L^{-T} b) in whitened coordinates, so this is the
paper's q, only stored differently. The cavity removes alpha / N of the factor:
B\\ = (1 - alpha / N) B + (alpha / N) I, b\\ = (1 - alpha / N) b, proper for every alpha <= 1.
The deep-GP authors (and this module before) stored the factor itself, (Lambda = R R', eta):
on MNIST's 60,000 rows, Adam's first steps on R threw q far from the prior (BENCHMARKS.md,
"Deep GPs at the paper's settings"); the whitened q starts at the prior (m = 0, S = I) and
moves smoothly.

Energy (eq. 15-17, tied):

    log Z_q = sum_units [g(theta) - g(theta_prior) + (N / alpha)(g(theta\\) - g(theta))]
              + (1 / alpha) sum_i log Z_i,

with sum_i over a mini-batch scaled by N / |B|. log Z_i is estimated by propagating S samples
through the layers (eq. 18-19): at each layer the cavity's marginals m, v of every unit at the
sampled inputs, then f = m + sqrt(v + sigma^2) eps; the last layer is integrated by the
likelihood given its inputs (``log_expected_power``), and log Z_i ~ logsumexp_s(log Z_{i,s}) - log S.
Prediction (end of section 4.2) uses q instead of the cavity (alpha = 1) and S = 100 samples.

All units of a layer share the layer's inputs, so the kernel quantities of a layer are one
batched computation over ``[H, M, S n]`` (whitened: w = L^{-1} u, K_uu = L L').
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import torch
from scipy.cluster.vq import kmeans2
from scipy.spatial.distance import pdist
from torch import nn

from ..distributed import Reducer, local_rows
from ..gaussians import tied_cavity_log_normaliser_gap
from ..kernels import ARDKernel, PolynomialKernel, kernel_from_spec
from ..likelihoods import likelihood_class
from ..numerics import stable_cholesky, step_generator, triangular_inverse
from ..objective import ObjectiveTerms
from .base import MIN_VARIANCE, Capabilities, WeightedRows
from .projection import projected_marginals

#: the deep-GP paper's settings of the registered likelihoods it uses: its robust-max likelihood
#: draws a wrong label (probability 1e-3, the default) from the C - 1 other classes
DGP_LIKELIHOOD_ARGS = {"robust_max": {"errors_to": "other"}}
#: the likelihoods of a deep GP's last layer
DGP_LIKELIHOODS = ("gaussian", "probit", "robust_max")


def output_likelihood(name: str):
    """The likelihood of the last layer: ``"gaussian"``, ``"probit"`` (2 classes) or ``"robust_max"``
    (C > 2 classes), from :data:`~alphagp.likelihoods.LIKELIHOODS` with the paper's settings."""
    if name not in DGP_LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {DGP_LIKELIHOODS}, got {name!r}")
    return likelihood_class(name)(**DGP_LIKELIHOOD_ARGS.get(name, {}))


class DGPLayer(nn.Module):
    """One layer of H GPs with M inducing points each on D-dimensional inputs.

    Parameters
    ----------
    inducing_points
        ``[H, M, D]``.
    kernel
        ``ARDKernel(n_latent=H, n_features=D)`` (or ``PolynomialKernel``); its ``noise`` is
        sigma^2 of each unit.
    mean_weights
        ``[D, H]`` fixed linear mean (zeros for the last layer).
    """

    def __init__(self, inducing_points: torch.Tensor, kernel: ARDKernel, mean_weights: torch.Tensor):
        super().__init__()
        H, M, D = inducing_points.shape
        if kernel.n_latent != H or kernel.raw_lengthscale.shape != (H, D):
            raise ValueError(f"the kernel must have {H} latent functions with {D} lengthscales each")
        if mean_weights.shape != (D, H):
            raise ValueError(f"mean_weights must have shape [{D}, {H}], got {list(mean_weights.shape)}")
        dtype = inducing_points.dtype
        self.kernel = kernel
        self.inducing_points = nn.Parameter(inducing_points.clone())
        self.whitened_mean = nn.Parameter(torch.zeros(H, M, dtype=dtype))       # m [H, M]: q at the prior
        self.whitened_scale_raw = nn.Parameter(torch.zeros(H, M, M, dtype=dtype))  # S = I
        self.register_buffer("mean_weights", mean_weights.to(dtype).clone())
        #: propagated variances raised to MIN_VARIANCE in training passes (rounding can take
        #: k_ff - Q_ff + the q term, non-negative in exact arithmetic, below it); counted since
        #: the model was built or loaded, not saved
        self.register_buffer("n_clamped_variances", torch.zeros((), dtype=torch.long), persistent=False)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, M, D): units, inducing points per unit, input dimension."""
        return tuple(self.inducing_points.shape)

    def whitened_scale(self) -> torch.Tensor:
        """S ``[H, M, M]``: the strictly lower part of ``whitened_scale_raw`` + diag(exp(its diagonal))."""
        raw = self.whitened_scale_raw
        return torch.tril(raw, -1) + torch.diag_embed(torch.exp(torch.diagonal(raw, 0, -2, -1)))

    def whitened_natural(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q's whitened natural parameters B = S^{-T} S^{-1} ``[H, M, M]``, b = B m ``[H, M]``, and
        g(q) - g(N(0, I)) = log|S| + m' B m / 2 ``[H]``."""
        S_inv = triangular_inverse(self.whitened_scale())
        white = (S_inv @ self.whitened_mean[..., None])[..., 0]                         # S^{-1} m
        B = S_inv.transpose(-1, -2) @ S_inv
        b = (S_inv.transpose(-1, -2) @ white[..., None])[..., 0]
        g_q = -torch.log(torch.diagonal(S_inv, 0, -2, -1)).sum(-1) + 0.5 * white.square().sum(-1)
        return B, b, g_q

    @torch.no_grad()
    def set_from_factor(self, precision: torch.Tensor, natural: torch.Tensor) -> None:
        """Set q from a u-space factor (``precision`` Lambda ``[H, M, M]``, ``natural`` eta ``[H, M]``),
        the form deep-GP model files stored before format 3: B = I + L' Lambda L, b = L' eta."""
        L = stable_cholesky(self._inducing_prior()[0])
        eye = torch.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        B = eye + L.transpose(-1, -2) @ precision @ L
        b = (L.transpose(-1, -2) @ natural[..., None])[..., 0]
        L_B = stable_cholesky(B)
        S = stable_cholesky(torch.cholesky_inverse(L_B))
        self.whitened_mean.copy_(torch.cholesky_solve(b[..., None], L_B)[..., 0])
        self.whitened_scale_raw.copy_(torch.tril(S, -1) + torch.diag_embed(torch.log(torch.diagonal(S, 0, -2, -1))))

    def _inducing_prior(self, X: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """K_uu + jitter ``[H, M, M]`` (jitter 1e-6 times the mean prior variance at Z) and K_uf at
        ``X`` (or at no rows)."""
        _, M, D = self.shape
        if X is None:
            X = self.inducing_points.new_zeros(0, D)
        Kuu, Kuf = self.kernel.inducing_covariances(self.inducing_points, X)
        eye = torch.eye(M, dtype=Kuu.dtype, device=Kuu.device)
        jitter = 1e-6 * torch.diagonal(Kuu, dim1=-2, dim2=-1).mean(-1)
        return Kuu + jitter[:, None, None] * eye, Kuf

    def forward(self, F: torch.Tensor, cavity_scale: float):
        """Marginals of the layer's units at inputs ``F`` ``[..., D]``.

        Parameters
        ----------
        F
            inputs, ``[n, D]`` or ``[S, n, D]`` (propagated samples).
        cavity_scale
            c = 1 - alpha / N for the cavity (1 for q itself).

        Returns
        -------
        ``mean``, ``var`` ``[..., H]`` (noise-free: m = k_fu K^-1 mu\\ + x W,
        v = k_ff + k_fu K^-1 (Sigma\\ - K) K^-1 k_uf, eq. 18), and ``[H]`` each of
        g(q) - g(prior) and g(cavity) - g(q) (0 for q itself), the latter formed without
        cancellation (:func:`~alphagp.numerics.tied_cavity_log_normaliser_gap`).
        """
        H, M, D = self.shape
        X = F.reshape(-1, D)
        Kuu, Kuf = self._inducing_prior(X)
        Psi = triangular_inverse(stable_cholesky(Kuu)) @ Kuf                            # [H, M, R]
        B_q, b_q, g_q = self.whitened_natural()
        if cavity_scale == 1.0:
            B_c, b_c, gap = B_q, b_q, torch.zeros_like(g_q)
        else:
            eye = torch.eye(M, dtype=X.dtype, device=X.device)
            B_c, b_c = cavity_scale * B_q + (1.0 - cavity_scale) * eye, cavity_scale * b_q
            gap = tied_cavity_log_normaliser_gap(B_q, b_q, 1.0 - cavity_scale)
        mean, var_w, _ = projected_marginals(B_c, b_c, Psi)                           # [H, R]
        var = self.kernel.prior_variance(X) - Psi.square().sum(1) + var_w
        if torch.is_grad_enabled():
            self.n_clamped_variances += (var.detach() < MIN_VARIANCE).sum()
        var = var.clamp_min(MIN_VARIANCE)
        mean = mean.T.reshape(*F.shape[:-1], H) + F @ self.mean_weights
        return mean, var.T.reshape(*F.shape[:-1], H), g_q, gap


class DeepGP(WeightedRows, nn.Module):
    """Deep GP with tied power-EP factors, trained by gradients on the energy (eq. 15-19).

    The method interface of the trainer (DESIGN.md): ``local_update`` returns the batch energy
    (no closed-form step), ``objective``, ``config()``, ``TRAINING_STATE``.

    Parameters
    ----------
    layers
        the :class:`DGPLayer` s, inputs to outputs; each layer's D is the previous layer's H.
    likelihood
        ``"gaussian"``, ``"probit"`` or ``"robust_max"`` (see :func:`output_likelihood`).
    n_data
        N, training rows.
    alpha
        power of the alpha-divergence in (0, 1]; alpha -> 0 is VI, 1 is EP.
    n_samples
        S, samples propagated per point in training (eq. 19).
    n_predict_samples
        S for predictions.
    seed
        the draws of step t come from a generator seeded by (seed, t), so a resumed fit
        repeats them.
    """

    TRAINING_STATE: tuple[str, ...] = ()
    #: buffers each process counts on its own rows; a data-parallel fit sums them at its end
    PROCESS_COUNTERS: tuple[str, ...] = ("n_clamped_variances",)

    def holds_a_fit(self) -> bool:
        """A deep GP is fitted by its steps alone (the trainer's question of
        :meth:`~alphagp.methods.base.SparseGPMethod.holds_a_fit`)."""
        return False

    def __init__(self, layers: list[DGPLayer], likelihood: str, n_data: int, alpha: float = 0.5,
                 n_samples: int = 20, n_predict_samples: int = 100, seed: int = 0):
        super().__init__()      # alpha in (0, 1]: the deep estimators' constraint checks it (and their files')
        if n_samples < 1 or n_predict_samples < 1:
            raise ValueError("n_samples and n_predict_samples must be at least 1")
        for below, above in itertools.pairwise(layers):
            if above.shape[2] != below.shape[0]:
                raise ValueError(f"a layer with {below.shape[0]} units feeds one with {above.shape[2]} inputs")
        self.layers = nn.ModuleList(layers)
        self.likelihood_name = likelihood
        self.likelihood = output_likelihood(likelihood)
        self.n_data, self.alpha = int(n_data), float(alpha)
        self.n_samples, self.n_predict_samples, self.seed = int(n_samples), int(n_predict_samples), int(seed)
        self.register_buffer("n_steps", torch.zeros((), dtype=torch.long))
        #: the process group's reducer in a data-parallel fit (set by the trainer): the draws' rows
        self.reducer = Reducer()

    def after_fit(self, X, y) -> None:
        """Called once after training, as on every method (:meth:`~alphagp.methods.SparseGPMethod.after_fit`):
        a deep GP has no second stage."""

    def diagnostics(self) -> dict:
        """Plain-data facts about the fit: ``n_clamped_variances``, the propagated variances of all
        layers raised to the floor ``MIN_VARIANCE`` in training passes (where the authors' code
        takes the absolute value)."""
        return {"n_clamped_variances": int(sum(int(layer.n_clamped_variances) for layer in self.layers))}

    def config(self) -> dict:
        """Plain-data arguments that rebuild this model (:meth:`from_config`) before loading its state."""
        return {"architecture": [list(layer.shape) for layer in self.layers],
                "kernels": [layer.kernel.spec() for layer in self.layers], "likelihood": self.likelihood_name,
                "n_data": self.n_data, "alpha": self.alpha, "n_samples": self.n_samples,
                "n_predict_samples": self.n_predict_samples, "seed": self.seed}

    @classmethod
    def from_config(cls, config: dict, dtype=torch.float64) -> DeepGP:
        """A model of the shapes in ``config`` with placeholder values (load a state dict next)."""
        specs = config.get("kernels", [{"type": "ard"}] * len(config["architecture"]))
        layers = [DGPLayer(torch.zeros(H, M, D, dtype=dtype), kernel_from_spec(spec, H, D, dtype),
                           torch.zeros(D, H, dtype=dtype)) for (H, M, D), spec in zip(config["architecture"], specs)]
        return cls(layers, **{k: v for k, v in config.items() if k not in ("architecture", "kernels")})

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """:meth:`torch.nn.Module.load_state_dict`, which also reads the factor form of q that deep-GP
        files held before format 3 (``layers.k.factor_raw``, ``layers.k.factor_natural``: Lambda = R R'
        with R's diagonal stored as its log, and eta) and converts it to the same q, whitened."""
        state = dict(state_dict)
        factors = {}
        for k in range(len(self.layers)):
            raw, natural = state.pop(f"layers.{k}.factor_raw", None), state.pop(f"layers.{k}.factor_natural", None)
            if raw is not None and natural is not None:
                factors[k] = (raw, natural)
                layer = self.layers[k]
                state[f"layers.{k}.whitened_mean"] = layer.whitened_mean.detach().clone()
                state[f"layers.{k}.whitened_scale_raw"] = layer.whitened_scale_raw.detach().clone()
        result = super().load_state_dict(state, strict=strict, assign=assign)
        for k, (raw, natural) in factors.items():
            R = torch.tril(raw, -1) + torch.diag_embed(torch.exp(torch.diagonal(raw, 0, -2, -1)))
            self.layers[k].set_from_factor(R @ R.transpose(-1, -2), natural)
        return result

    #: the deep GP is trained by Adam on mini-batches; its energy is global terms plus a sum over
    #: the batch, and the draws are made for the global batch, so a step splits across processes
    CAPABILITIES = Capabilities(batch_optimizer="adam", data_parallel=True, sample_weight=True)

    @property
    def capabilities(self) -> Capabilities:
        return self.CAPABILITIES

    # ------------------------------------------------------------------ energy
    def _generator(self, step: int) -> torch.Generator:
        return step_generator(self.seed, step)

    def propagate(self, X: torch.Tensor, n_samples: int, cavity_scale: float, generator: torch.Generator,
                  shared_draws: bool = False, rows: tuple[int, slice] | None = None):
        """Push ``n_samples`` samples of ``X`` ``[n, D]`` through the hidden layers (eq. 18-19).

        Each point, unit and sample gets its own standard-normal draw; with ``shared_draws`` all
        rows reuse the same ``[S, H]`` draws of a layer, which leaves each row's distribution as it
        is but makes a row's result independent of the other rows passed with it. Draws are made in
        float64 and cast, so a float32 model sees the same draws as a float64 one. ``rows``:
        ``(n, part)``: draw for ``n`` rows and use those of ``part`` (a process's share of a global
        batch then gets the draws it would get in one process).

        Returns the last layer's ``mean``, ``var`` ``[S, n, H_L]`` (noise-free; S = 1 for one layer,
        whose inputs are not random) and the sum over all units of the g-terms of the energy,
        g(q) - g(prior) + (N / alpha)(g(cavity) - g(q)) (used only when ``cavity_scale`` < 1).
        """
        F, global_terms = X, X.new_zeros(())
        for depth, layer in enumerate(self.layers):
            mean, var, g_q, gap = layer(F, cavity_scale)
            global_terms = global_terms + (g_q + (self.n_weighted / self.alpha) * gap).sum()
            if depth == len(self.layers) - 1:
                break
            n, part = (1, slice(None)) if shared_draws else rows or (X.shape[0], slice(None))
            eps = torch.randn((n_samples, n, layer.shape[0]), generator=generator, dtype=torch.float64)[:, part]
            eps = eps.to(X.device, X.dtype)
            F = mean + torch.sqrt(var + layer.kernel.noise) * eps
        if mean.dim() == 2:
            mean, var = mean[None], var[None]
        return mean, var, global_terms

    def log_z_hat(self, X: torch.Tensor, y: torch.Tensor, n_samples: int, generator: torch.Generator,
                  alpha: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """log Z-hat_i ``[n]`` (eq. 19) at the cavity of power ``alpha`` (default: the model's),
        and the g-terms of the energy. In a data-parallel step ``X`` is this process's share of
        the global batch, and the draws are those of its rows in the global batch."""
        alpha = self.alpha if alpha is None else alpha
        mean, var, global_terms = self.propagate(X, n_samples, 1.0 - alpha / self.n_weighted, generator,
                                                 rows=local_rows(self.reducer, X.shape[0]))
        log_t = self.sample_log_normalisers(mean, var, y, alpha)
        return torch.logsumexp(log_t, 0) - math.log(log_t.shape[0]), global_terms

    def sample_log_normalisers(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                               alpha: float) -> torch.Tensor:
        """log E[p(y_i | f)^alpha] ``[S, n]`` for each propagated sample's last-layer moments ``mean``,
        ``var`` ``[S, n, H_L]`` (noise-free) and the targets ``y`` ``[n]``: log Z_{i,s} of eq. 19."""
        likelihood, mean, var = self.likelihood.with_output_noise(mean, var, self.layers[-1].kernel.noise)
        S, n, H = mean.shape
        return likelihood.log_expected_power(mean.reshape(S * n, H), var.reshape(S * n, H), y.repeat(S),
                                             alpha).reshape(S, n)

    def energy_terms(self, X: torch.Tensor, y: torch.Tensor, generator: torch.Generator,
                     idx: torch.Tensor | None = None) -> ObjectiveTerms:
        """log Z_q's terms (eq. 15-17): the global terms, and the data term of the rows ``X`` ``[n, D]``,
        ``y`` ``[n]`` (1 / alpha times the sum of log Z-hat_i, each times its row's weight when the
        fit has sample weights: ``idx`` ``[n]`` the rows' indices among the training rows)."""
        log_z, global_terms = self.log_z_hat(X, y, self.n_samples, generator)
        if idx is not None:
            log_z = self._weighted(log_z, idx)
        return ObjectiveTerms(global_terms, log_z.sum() / self.alpha)

    def energy(self, X: torch.Tensor, y: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """log Z_q (eq. 15-17) with the data term of the rows ``X`` ``[n, D]`` scaled by N / n."""
        return self.energy_terms(X, y, generator).total(self.n_data, X.shape[0])

    def forward(self, X: torch.Tensor, y: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """The module's output is its energy (:meth:`energy`), so ``torch.func.functional_call`` differentiates it."""
        return self.energy(X, y, generator)

    def objective(self, X: torch.Tensor, y: torch.Tensor, _idx: torch.Tensor) -> torch.Tensor:
        """The energy on a batch with the draws of the current step."""
        return self.energy(X, y, self._generator(int(self.n_steps)))

    def local_update(self, X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> ObjectiveTerms:
        """No closed-form step: the batch energy's terms (then the step counter advances, so each step
        draws anew)."""
        value = self.energy_terms(X, y, self._generator(int(self.n_steps)), idx)
        self.n_steps += 1
        return value

    # ------------------------------------------------------------------ prediction
    @torch.no_grad()
    def predict_output(self, X: torch.Tensor, n_samples: int | None = None, seed: int | None = None):
        """The last layer's means and noise-free variances ``[S, n, H_L]`` under q (alpha = 1),
        from ``n_samples`` (default ``n_predict_samples``) propagated samples. The draws are fixed by
        ``seed`` (default: the model's) and shared by all rows, so a point's prediction repeats and
        does not depend on the order or the company of the rows it is predicted with."""
        generator = torch.Generator().manual_seed(self.seed if seed is None else int(seed))
        mean, var, _ = self.propagate(X, n_samples or self.n_predict_samples, 1.0, generator, shared_draws=True)
        return mean, var

    def output_probabilities(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[S, n, C]`` class probabilities given each propagated sample's last-layer moments
        ``mean``, ``var`` ``[S, n, H_L]`` (from :meth:`predict_output`; classification likelihoods)."""
        likelihood, mean, var = self.likelihood.with_output_noise(mean, var, self.output_noise)
        S, n, H = mean.shape
        return likelihood.predict_proba(mean.reshape(S * n, H), var.reshape(S * n, H)).reshape(S, n, -1)

    @property
    def output_noise(self) -> torch.Tensor:
        """sigma^2 of the last layer's units ``[H_L]`` (the Gaussian likelihood's variance), detached."""
        return self.layers[-1].kernel.noise.detach()


# ---------------------------------------------------------------------- initialisation
def linear_mean_weights(inputs: np.ndarray, n_units: int) -> np.ndarray:
    """W ``[D, H]`` of a hidden layer's mean x W: the identity (H = D), the identity padded with zero
    columns (H > D) or the top-H principal directions of ``inputs`` ``[n, D]`` (H < D)."""
    d = inputs.shape[1]
    if n_units >= d:
        return np.eye(d, n_units)
    _, _, Vt = np.linalg.svd(inputs, full_matrices=False)
    return Vt[:n_units].T


def median_squared_distance(inputs: np.ndarray, rng: np.random.Generator, n_rows: int = 1000) -> float:
    """Median squared distance between rows of ``inputs`` (a sample of up to ``n_rows``); 1 if it is 0."""
    rows = inputs[rng.choice(len(inputs), min(len(inputs), n_rows), replace=False)]
    value = float(np.median(pdist(rows, "sqeuclidean"))) if len(rows) > 1 else 0.0
    return value if value > 0 else 1.0


#: the first layer's kernels: the kernel class and its keyword arguments
FIRST_LAYER_KERNELS = {"rbf": (ARDKernel, {}), "polynomial": (PolynomialKernel, {}),
                       "normalized_polynomial": (PolynomialKernel, {"normalized": True})}


def initial_layers(X: np.ndarray, n_outputs: int, n_layers: int, n_hidden: int, n_inducing: int,
                   rng: np.random.Generator, hidden_noise: float = 1e-5, output_noise: float = 1e-2,
                   first_kernel: str = "rbf", hidden_mean_scale: float = 0.0, positive: str = "log",
                   dtype=torch.float64) -> list[DGPLayer]:
    """Layers initialised as in the paper.

    Z of the first layer from k-means (``kmeans2``, ``minit="points"``) on up to 10,000 rows of
    ``X`` ``[n, D]`` (standardised), carried through the hidden layers' means as the inputs are;
    lengthscale^2 = the median squared distance of each layer's (carried) inputs; amplitude 1;
    noise ``hidden_noise`` in hidden layers and ``output_noise`` in the last; positive kernel
    parameters stored as ``positive`` says (logs, as the authors do; ``"softplus"`` for comparison). q starts at the prior, except that with
    ``hidden_mean_scale`` > 0 each hidden unit's whitened mean is drawn from N(0, scale^2 I): at
    scale 1 its mean function is a draw from its prior. That separates hidden units that would
    otherwise be exchangeable (same Z, kernel and q when H > D), as the scripts behind the paper's
    UCI and synthetic numbers did with a random natural mean and a factor precision near I; the
    authors' code at its latest revision starts every factor near zero instead.
    ``first_kernel``: a key of :data:`FIRST_LAYER_KERNELS`; ``"polynomial"`` is the degree-9 ARD
    polynomial kernel of the paper's MNIST model, ``"normalized_polynomial"`` its normalised form
    (:class:`~alphagp.kernels.PolynomialKernel`), with the same lengthscale initialisation.
    """
    if first_kernel not in FIRST_LAYER_KERNELS:
        raise ValueError(f"first_kernel must be one of {sorted(FIRST_LAYER_KERNELS)}, got {first_kernel!r}")
    rows = X if len(X) <= 10_000 else X[rng.choice(len(X), 10_000, replace=False)]
    rows = np.asarray(rows, dtype=np.float64)
    with warnings.catch_warnings():  # an empty cluster keeps its starting row: harmless when M is close to n
        warnings.filterwarnings("ignore", message="One of the clusters is empty")
        Z = kmeans2(rows, n_inducing, minit="points", seed=rng)[0]
    layers = []
    for depth in range(n_layers):
        last = depth == n_layers - 1
        H, d = (n_outputs if last else n_hidden), rows.shape[1]
        W = np.zeros((d, H)) if last else linear_mean_weights(rows, H)
        kernel_cls, options = FIRST_LAYER_KERNELS[first_kernel] if depth == 0 else (ARDKernel, {})
        kernel = kernel_cls(H, d, lengthscale=math.sqrt(median_squared_distance(rows, rng)), amplitude=1.0,
                            noise=output_noise if last else hidden_noise, dtype=dtype, positive=positive, **options)
        Z_t = torch.as_tensor(Z, dtype=dtype).expand(H, -1, -1)
        layer = DGPLayer(Z_t, kernel, torch.as_tensor(W, dtype=dtype))
        if not last and hidden_mean_scale > 0:
            with torch.no_grad():
                layer.whitened_mean.copy_(torch.as_tensor(hidden_mean_scale * rng.standard_normal((H, n_inducing))))
        layers.append(layer)
        rows, Z = rows @ W, Z @ W
    return layers
