"""Inference methods and their registry.

Each method is a ``torch.nn.Module`` (see :class:`~alphagp.methods.base.SparseGPMethod`) with
``local_update`` (returns the batch objective), ``objective``, ``predict_f``,
``predict_proba``, ``config()`` and a ``TRAINING_STATE`` tuple of buffer names needed only to
continue training (see DESIGN.md). The estimator finds a method by name in :data:`METHODS` and
never branches on names itself.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

from torch import nn

from ..constraints import validate_parameter_constraints
from ..likelihoods import likelihood_class
from .augmented import AugmentedGibbs, AugmentedVI
from .base import Capabilities, SiteMethod, SparseGPMethod
from .class_frequencies import ClassFrequencies
from .dirichlet import DirichletGP
from .ep import EP, SEP, ScalableEP
from .exact_ep import ExactEP
from .gaussian_q import APEP, ARPEP, RPAPEP, GaussianQMethod, SparseVI
from .gfitc import GFITC
from .gibbs import GibbsSampler
from .label_regression import LabelRegression
from .laplace import LaplaceSoftmax
from .pep import PowerEP


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its class, a one-line summary, its likelihood, arguments the name fixes,
    and defaults for unset ones.

    ``likelihood`` names an entry of :data:`~alphagp.likelihoods.LIKELIHOODS`; ``build_method``
    constructs it with the arguments named in ``likelihood_args`` (``epsilon`` from the estimator,
    the others from ``method_params``; a name the method's constructor also declares goes to both)
    and hands it to the method.
    """

    cls: type
    summary: str
    likelihood: str
    likelihood_args: tuple[str, ...] = ()
    fixed: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)


_EPSILON = ("epsilon",)
_MONTE_CARLO = ("n_mc_samples", "seed")

#: name -> :class:`MethodSpec`
METHODS: dict[str, MethodSpec] = {
    "dirichlet": MethodSpec(DirichletGP, "Dirichlet-based GP classification: a GP regression of transformed labels in "
                            "closed form, exact up to a few thousand rows and Titsias' sparse bound beyond, its "
                            "kernel by L-BFGS on the marginal likelihood (Milios et al. 2018)", "softmax",
                            ("n_predictive_samples", "seed")),
    "ep": MethodSpec(EP, "scalable EP, Heaviside likelihood, one factor per (point, class)", "heaviside"),
    "exact_ep": MethodSpec(ExactEP, "EP on a full GP (every training row, no inducing points), Heaviside likelihood, "
                           "binary probit and multi-class; its kernel by L-BFGS on EP's own evidence with the gradient "
                           "at the fixed point (Rasmussen & Williams 3.6, 5.5)", "heaviside", fixed={"alpha": 1.0}),
    "exact_pep": MethodSpec(ExactEP, "power EP on a full GP, as exact_ep with the power alpha", "heaviside",
                            defaults={"alpha": 0.5}),
    "sep": MethodSpec(SEP, "stochastic EP: EP with tied factors, memory independent of N", "heaviside"),
    "rep": MethodSpec(PowerEP, "EP with the robust-max likelihood, one factor per point (thesis 5.2.1)",
                      "robust_max", _EPSILON, fixed={"alpha": 1.0}),
    "pep": MethodSpec(PowerEP, "power EP, robust-max likelihood (alpha paper 3.1)", "robust_max", _EPSILON,
                      defaults={"alpha": 0.5}),
    "apep": MethodSpec(APEP, "approximate power EP: tied factor fitted by gradients (alpha paper 3.2)",
                       "robust_max", _EPSILON),
    "arpep": MethodSpec(ARPEP, "approximate reparameterised power EP, free Gaussian q (alpha paper 3.3)",
                        "robust_max", _EPSILON),
    "rpapep": MethodSpec(RPAPEP, "refined-prior approximate power EP (alpha paper 3.4)", "robust_max", _EPSILON),
    "gfitc": MethodSpec(GFITC, "EP on the exact Heaviside factors with the FITC prior, batch only "
                        "(Naish-Guzman & Holden 2008)", "heaviside", fixed={"alpha": 1.0}),
    "gibbs": MethodSpec(GibbsSampler, "Gibbs sampling of the posterior at hyper-parameters from an EP (rep) fit "
                        "(alpha paper, Appendix C)", "robust_max", _EPSILON, fixed={"alpha": 1.0}),
    "laplace": MethodSpec(LaplaceSoftmax, "Laplace approximation, softmax likelihood, hyper-parameters from an EP "
                          "(rep) fit (alpha paper, Appendix C)", "robust_max", _EPSILON, fixed={"alpha": 1.0}),
    "label_regression": MethodSpec(LabelRegression, "exact sparse GP regression on one-hot labels, batch only "
                                   "(alpha paper, Appendix C)", "heaviside"),
    "vi": MethodSpec(SparseVI, "sparse variational inference, robust-max likelihood (Hensman et al. 2015)",
                     "robust_max", _EPSILON),
    "vi_softmax": MethodSpec(SparseVI, "sparse VI, softmax likelihood, Monte Carlo expectations "
                             "(logistic-softmax paper 5.1)", "softmax", _MONTE_CARLO),
    "vi_logistic_softmax": MethodSpec(SparseVI, "sparse VI, logistic-softmax likelihood without augmentation, "
                                      "Monte Carlo expectations (logistic-softmax paper 5.2)", "logistic_softmax",
                                      _MONTE_CARLO),
    "ordinal_ep": MethodSpec(PowerEP, "EP for ordered classes: one latent function, probit ordinal likelihood with "
                             "learnt cut points (Chu & Ghahramani 2005), one factor per point", "ordinal",
                             ("n_quadrature",), fixed={"alpha": 1.0}),
    "ordinal_pep": MethodSpec(PowerEP, "power EP for ordered classes, probit ordinal likelihood", "ordinal",
                              ("n_quadrature",), defaults={"alpha": 0.5}),
    "ordinal_vi": MethodSpec(SparseVI, "sparse VI for ordered classes, probit ordinal likelihood", "ordinal",
                             ("n_quadrature",)),
    "augmented": MethodSpec(AugmentedVI, "logistic-softmax likelihood, conjugate augmentation, closed-form "
                            "stochastic VI (Galy-Fajou et al. 2019, Alg. 1; class_batch_size: Alg. 2)",
                            "logistic_softmax", ("n_predictive_samples", "seed")),
    "augmented_gibbs": MethodSpec(AugmentedGibbs, "augmented VI's hyper-parameters, then Gibbs sampling of the "
                                  "augmented logistic-softmax model (Galy-Fajou et al. 2019, 4.3; small data)",
                                  "logistic_softmax", ("n_predictive_samples", "seed")),
    "class_frequencies": MethodSpec(ClassFrequencies, "the training class frequencies, the features ignored: the bar "
                                    "a classifier must clear (method='auto' keeps it where nothing beats it)",
                                    "softmax"),
}

#: the likelihood arguments the estimator sets (its own parameters), not ``method_params``
_ESTIMATOR_LIKELIHOOD_ARGS = ("epsilon",)


def method_spec(name: str) -> MethodSpec:
    """The :class:`MethodSpec` registered as ``name``; ``ValueError`` naming the registered ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {name!r}") from None


def _likelihood_constraints(spec: MethodSpec) -> dict:
    """The constraints of the likelihood arguments ``spec`` lets through."""
    parameters = likelihood_class(spec.likelihood).PARAMETERS
    return {key: parameters[key] for key in spec.likelihood_args}


def _own_constraints(spec: MethodSpec) -> dict:
    """``OWN_PARAMETERS`` of the method's class and its bases (a subclass's entries win), and the
    constraints of the likelihood arguments it lets through."""
    merged: dict = {}
    for klass in reversed(spec.cls.__mro__):
        merged.update(vars(klass).get("OWN_PARAMETERS", {}))
    return {**_likelihood_constraints(spec), **merged}


def _signature_defaults(*classes: type) -> dict:
    """Keyword defaults of the constructors of ``classes`` and their bases (later ones win)."""
    defaults: dict = {}
    for cls in classes:
        for klass in reversed(cls.__mro__):
            if "__init__" in vars(klass):
                for p in inspect.signature(klass.__init__).parameters.values():
                    if p.default is not inspect.Parameter.empty:
                        defaults[p.name] = p.default
    return defaults


def method_parameters(name: str) -> dict:
    """The ``method_params`` that method ``name`` takes, with their defaults (from the constructors
    of the method and of its likelihood)."""
    spec = method_spec(name)
    defaults = _signature_defaults(likelihood_class(spec.likelihood), spec.cls)
    return {key: defaults.get(key) for key in _own_constraints(spec)
            if key not in spec.fixed and key not in _ESTIMATOR_LIKELIHOOD_ARGS}


def method_table() -> list[tuple[str, str, str]]:
    """``(name, summary, own parameters)`` of every registered method in registry order; the own
    parameters as ``key=default`` text (empty where there are none). The one source of the method
    lists of ``alphagp methods``, the README and :class:`~alphagp.GPClassifier`'s docstring."""
    return [(name, spec.summary, ", ".join(f"{k}={v!r}" for k, v in method_parameters(name).items()))
            for name, spec in METHODS.items()]


def method_bullets(indent: str = "        ") -> str:
    """The registry's methods as a docstring bullet list (``name``: summary; method_params), wrapped
    at 96 columns under ``indent`` (GPClassifier's docstring lists them so)."""
    import textwrap
    lines = []
    for name, summary, own in method_table():
        text = f"``{name}``: {summary}" + (f" (``method_params``: {own})" if own else "") + "."
        lines += textwrap.wrap(text, 96, initial_indent=indent + "- ", subsequent_indent=indent + "  ",
                               break_on_hyphens=False)
    return "\n".join(lines).strip()


def check_method_params(name: str, params: dict | None, reserved: tuple[str, ...] = ()) -> None:
    """``ValueError`` (listing the valid keys) for a ``method_params`` key that method ``name`` does not
    take or that belongs to the estimator (``reserved``), and scikit-learn's ``InvalidParameterError``
    for a value out of range."""
    own = method_parameters(name)
    keys = set(params or {})
    if keys & set(reserved):
        raise ValueError(f"method_params may not set {sorted(keys & set(reserved))}: they are GPClassifier "
                         "parameters; set them there")
    unknown = sorted(keys - set(own))
    if unknown:
        valid = ", ".join(f"{k} (default {v!r})" for k, v in own.items()) or "none"
        raise ValueError(f"method_params has unknown key(s) {unknown} for method={name!r}; its parameters are: "
                         f"{valid}")
    validate_parameter_constraints(_own_constraints(method_spec(name)), dict(params or {}),
                                   caller_name=f"method {name!r} (method_params)")


#: what the estimator passes every method as context; a constructor that does not declare one does without it
_CONTEXT = ("n_data", "site_storage", "exact")


def constructor_parameters(cls: type) -> set[str]:
    """The keyword arguments ``cls`` accepts beyond ``(inducing_points, kernel, likelihood)``: those of its
    ``__init__`` and, through ``**kwargs``, of the base classes it forwards them to."""
    accepted: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        parameters = list(inspect.signature(klass.__init__).parameters.values())[4:]  # self, Z, kernel, likelihood
        accepted |= {p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            break
    return accepted


def _has_alpha(spec: MethodSpec) -> bool:
    """Whether the method of ``spec`` runs with a power alpha (its constructor takes one and does
    not declare it only to refuse it, as VI, the alpha -> 0 limit, does)."""
    return "alpha" in constructor_parameters(spec.cls) and "alpha" not in spec.cls.REFUSES


def _alpha_siblings(spec: MethodSpec) -> list[str]:
    """The registered methods with the likelihood of ``spec`` whose alpha is free (what to suggest
    to a user who gave alpha to a method that fixes or refuses it)."""
    own = likelihood_class(spec.likelihood)
    names = [name for name, other in METHODS.items()
             if likelihood_class(other.likelihood) is own and _has_alpha(other) and "alpha" not in other.fixed]
    return sorted(names, key=lambda name: not name.endswith("pep"))         # power EP first


def resolve_alpha(name: str, alpha: float | None) -> float | None:
    """The power alpha method ``name`` runs with: the one place where alpha's default is decided.

    ``alpha`` where given (in (0, 1]; a name that fixes alpha, ``rep``, ``gfitc``, ``gibbs`` or
    ``laplace``, accepts only its value); otherwise the registry's value for the name
    (``MethodSpec.fixed``, then ``defaults``), otherwise the method's constructor default. ``None``
    for a method without alpha, where a given alpha is a ``ValueError`` with the method's reason
    (``vi``, the alpha -> 0 limit, declares alpha only to refuse it, ``REFUSES``). The registry's
    layer checks alpha here alone: the methods' constructors trust it.
    """
    spec = method_spec(name)
    siblings = _alpha_siblings(spec)
    if not _has_alpha(spec):
        if alpha is not None:
            reason = spec.cls.REFUSES.get("alpha", f"its arguments are {sorted(constructor_parameters(spec.cls))}")
            if any(other not in siblings for other in re.findall(r"method='(\w+)'", reason)):
                reason = (f"it takes no alpha; with its likelihood, {' and '.join(map(repr, siblings))} "
                          f"take{'s' if len(siblings) == 1 else ''} one")
            raise ValueError(f"method {name!r} has no alpha (got {alpha!r}): {reason}")
        return None
    fixed = spec.fixed.get("alpha")
    if alpha is not None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must lie in (0, 1], got {alpha}")
        if fixed is not None and alpha != fixed:
            other = f"; use method={siblings[0]!r} for alpha < 1" if siblings else ""
            raise ValueError(f"method {name!r} has alpha={fixed}; got alpha={alpha}{other}")
        return float(alpha)
    default = {**_signature_defaults(spec.cls), **spec.defaults, **spec.fixed}["alpha"]
    return None if default is None else float(default)      # None: the alpha -> 0 limit (vi)


def build_method(name: str, inducing_points, kernel, **config) -> nn.Module:
    """Construct method ``name`` with its registered likelihood and the arguments its constructor declares.

    ``None`` values in ``config`` mean "the default"; the likelihood is built from the arguments
    the registry lets through to it (``MethodSpec.likelihood_args``) and, where its constructor
    declares it, ``n_classes`` (the ordinal likelihood's count of grades); the context of
    :data:`_CONTEXT` (``n_data``, ``site_storage``) goes only to constructors that declare it; any
    other value the method does not take (``alpha``, ``epsilon``, ``damping`` where it has none)
    is a ``ValueError`` with the method's reason (``REFUSES``). The arguments are checked against
    the method's ``OWN_PARAMETERS`` and the likelihood's ``PARAMETERS``, and the registry's fixed
    values against the given ones. The likelihood's own parameters take ``inducing_points``' dtype.
    """
    spec = method_spec(name)
    n_classes = config.pop("n_classes", None)
    config = _checked_config(name, {k: v for k, v in config.items() if v is not None})
    likelihood_cls = likelihood_class(spec.likelihood)
    context = {"n_classes": n_classes} if n_classes is not None and "n_classes" in _signature_defaults(likelihood_cls) \
        else {}
    likelihood = likelihood_cls(**context, **{k: config[k] for k in spec.likelihood_args if k in config})
    if isinstance(likelihood, nn.Module):               # its own parameters (ordinal cut points) in the model's dtype
        likelihood.to(dtype=inducing_points.dtype)
    accepted = constructor_parameters(spec.cls)
    config = {k: v for k, v in {**spec.defaults, **config, **spec.fixed}.items() if k in accepted}
    return spec.cls(inducing_points, kernel, likelihood, **config)


def _checked_config(name: str, config: dict) -> dict:
    """``config`` (no ``None`` values) checked as :func:`build_method` takes it, with alpha resolved
    (:func:`resolve_alpha`); a ``ValueError`` with the method's reason for what it does not take."""
    spec = method_spec(name)
    validate_parameter_constraints(_own_constraints(spec), config, caller_name=f"method {name!r}")
    config = dict(config)
    alpha = resolve_alpha(name, config.pop("alpha", None))
    if alpha is not None:
        config["alpha"] = alpha
    for key, value in spec.fixed.items():
        if key in config and config[key] != value:
            raise ValueError(f"method {name!r} has {key}={value}; got {key}={config[key]}"
                             + ("; use method='pep' for alpha < 1" if key == "alpha" else ""))
    accepted = constructor_parameters(spec.cls)
    for key, value in config.items():
        if key not in accepted and key not in _CONTEXT and key not in spec.likelihood_args:
            reason = spec.cls.REFUSES.get(key, f"its arguments are {sorted(accepted - set(_CONTEXT))}")
            if key in _ESTIMATOR_LIKELIHOOD_ARGS and key not in spec.cls.REFUSES:
                reason = f"{key} belongs to the robust-max likelihood, not to {spec.likelihood!r}"
            raise ValueError(f"method {name!r} has no {key} (got {value!r}): {reason}")
    return config


def ordinal_methods() -> list[str]:
    """The registered methods whose likelihood is the ordinal one (ordered classes)."""
    from ..likelihoods import OrdinalLikelihood
    return [name for name, spec in METHODS.items() if likelihood_class(spec.likelihood) is OrdinalLikelihood]


def free_alpha(name: str) -> bool:
    """Whether method ``name`` runs with an alpha the user may choose (``alpha="auto"``'s grid): it has
    one and its name does not fix it (``rep``, ``gfitc`` fix 1; ``vi`` has none)."""
    spec = method_spec(name)
    return _has_alpha(spec) and "alpha" not in spec.fixed


def takes(name: str, **arguments) -> bool:
    """Whether method ``name`` takes ``arguments`` (``alpha``, ``epsilon``, ``damping``; ``None``
    values are left out), by the registry's rules alone, as :func:`build_method` would check them:
    nothing is built."""
    config = {k: v for k, v in arguments.items() if v is not None}
    try:
        _checked_config(name, config)
    except ValueError:
        return False
    return True


def n_latent(name: str, n_classes: int) -> int:
    """The latent functions method ``name`` models ``n_classes`` classes with: its likelihood's
    fixed count (one for the ordinal likelihood), else one per class."""
    return likelihood_class(method_spec(name).likelihood).N_LATENT or n_classes


def method_config(name: str, model: nn.Module) -> dict:
    """The arguments that rebuild ``model`` (built as method ``name``) with :func:`build_method`:
    the method's ``config()`` and the likelihood arguments the registry lets through."""
    likelihood = model.likelihood.config()
    return {**{key: likelihood[key] for key in method_spec(name).likelihood_args}, **model.config()}


__all__ = [
    "APEP",
    "ARPEP",
    "EP",
    "GFITC",
    "METHODS",
    "RPAPEP",
    "SEP",
    "AugmentedGibbs",
    "AugmentedVI",
    "Capabilities",
    "ClassFrequencies",
    "DirichletGP",
    "ExactEP",
    "GaussianQMethod",
    "GibbsSampler",
    "LabelRegression",
    "LaplaceSoftmax",
    "MethodSpec",
    "PowerEP",
    "ScalableEP",
    "SiteMethod",
    "SparseGPMethod",
    "SparseVI",
    "build_method",
    "check_method_params",
    "constructor_parameters",
    "free_alpha",
    "method_bullets",
    "method_config",
    "method_parameters",
    "method_spec",
    "method_table",
    "n_latent",
    "resolve_alpha",
    "takes",
]
