"""The likelihood contract: what every method and the deep GPs ask of p(y | f).

A likelihood is p(y | f) for one data point with a latent vector f of C values (C classes of a
multi-class likelihood, one for probit and Gaussian). Every method needs expectations of it
under independent Gaussians f^c ~ N(mean_c, var_c), one name per quantity:

* :meth:`Likelihood.log_expected_power` -- log E[p(y | f)^alpha], alpha in (0, 1]: the tilted
  normaliser log Z of power EP (alpha paper eq. 8, A.22; EP at alpha = 1);
* :meth:`Likelihood.expected_log_lik` -- E[log p(y | f)], the data term of VI (EP paper eq. 15,
  alpha paper eq. 5), the alpha -> 0 limit of (1 / alpha) log E[p^alpha];
* :meth:`Likelihood.tilted_derivatives` -- log Z and its derivatives in the means and variances,
  which give the tilted distribution's moments (alpha paper A.14-A.15); by autodiff through
  :meth:`~Likelihood.log_expected_power` unless a subclass knows them in closed form;
* :meth:`CategoricalLikelihood.predict_proba` -- the predictive class probabilities E[p(y = c | f)];
* :meth:`Likelihood.log_prob` -- log p(y | f) at given latent values (what the tests' Monte Carlo
  estimates of the other quantities average).

Shapes, for all of them: ``mean``, ``var`` ``[N, C]``, ``y`` ``[N]`` (class indices, or real
targets for the Gaussian likelihood); per-point results ``[N]``; probabilities ``[N, C]``.

Each concrete likelihood is registered by name in :data:`alphagp.likelihoods.LIKELIHOODS`; the
method registry names the likelihood of each method, and the contract tests
(``tests/likelihoods/test_likelihood_contracts.py``) check every registered likelihood against Monte Carlo
estimates and fail when a likelihood class is not registered.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import ClassVar

import torch


class Likelihood(ABC):
    """p(y | f) for a latent vector f ``[C]`` per data point (see the module docstring)."""

    #: :meth:`expected_log_lik` is a Monte Carlo estimate: callers pass a ``generator``
    STOCHASTIC: ClassVar[bool] = False
    #: latent values per point: ``None`` for one per class, else a fixed count (probit: 1 for 2 classes)
    N_LATENT: ClassVar[int | None] = None
    #: scikit-learn constraints of the constructor's arguments that users may set (``epsilon``
    #: through the estimator, the others through ``method_params`` where a method lets them through)
    PARAMETERS: ClassVar[dict] = {}

    @abstractmethod
    def log_prob(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | f) ``[..., N]`` for latent values ``f`` ``[..., N, C]`` and targets ``y`` ``[N]``."""

    @abstractmethod
    def log_expected_power(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                           alpha: float) -> torch.Tensor:
        """log E[p(y | f)^alpha] ``[N]`` under f ~ N(mean, diag(var)), differentiable in ``mean`` and ``var``."""

    @abstractmethod
    def expected_log_lik(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor,
                         generator: torch.Generator | None = None,
                         rows: tuple[int, slice] | None = None) -> torch.Tensor:
        """E[log p(y | f)] ``[N]`` under f ~ N(mean, diag(var)), differentiable in ``mean`` and ``var``.

        ``generator`` and ``rows`` matter only where :attr:`STOCHASTIC` is true (Monte Carlo): the
        draws' generator, and ``(n, part)`` to draw for ``n`` rows and keep those of ``part`` (one
        process's share of a batch split across processes).
        """

    def state_problems(self) -> list[str]:
        """What in the likelihood's learnt state (as a model file gave it) no fit leaves behind, one
        phrase each; ``[]`` for a likelihood with nothing learnt."""
        return []

    def tilted_derivatives(self, mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor, alpha: float):
        """log Z = log E[p(y | f)^alpha] and its derivatives in the means and variances.

        Returns ``(log_Z [N], dlogZ_dmean [N, C], dlogZ_dvar [N, C])``, detached; the tilted
        distribution p(y | f)^alpha N(f | mean, var) / Z has means ``mean + var * dlogZ_dmean`` and
        variances ``var - var^2 (dlogZ_dmean^2 - 2 dlogZ_dvar)`` (alpha paper A.14-A.15). This
        default differentiates :meth:`log_expected_power` by autodiff.
        """
        with torch.enable_grad():
            m = mean.detach().requires_grad_(True)
            v = var.detach().requires_grad_(True)
            log_z = self.log_expected_power(m, v, y, alpha)
            g_m, g_v = torch.autograd.grad(log_z.sum(), (m, v))
        return log_z.detach(), g_m, g_v

    def with_output_noise(self, mean: torch.Tensor, var: torch.Tensor, noise: torch.Tensor):
        """``(likelihood, mean, var)`` seen at a deep GP's last layer, whose units have noise ``noise``
        ``[C]`` and noise-free outputs ``N(mean, var)`` ``[N, C]``: by default the noise is part of
        the latent values (the classification likelihoods), so the variances grow by it."""
        return self, mean, var + noise

    def config(self) -> dict:
        """The constructor's arguments: ``type(self)(**config())`` rebuilds the likelihood."""
        return {name: getattr(self, name) for name in inspect.signature(type(self).__init__).parameters
                if name != "self"}


class CategoricalLikelihood(Likelihood):
    """A likelihood over C classes (y a class index), with predictive class probabilities."""

    @abstractmethod
    def predict_proba(self, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        """``[N, C]`` E[p(y = c | f)] under f ~ N(mean, diag(var)) ``[N, C]``; rows sum to one."""
