"""Covariance terms a kernel is composed of (issue 79, item 2): ``GPClassifier(kernel=RBF() + Linear())``.

A term is a covariance function of the standardised rows whose positive parameters are one
vector ``theta`` of their logs (the form the kernel searches of :mod:`alphagp.kernel_start` and
:mod:`alphagp.pair_ep` move by L-BFGS-B, and the kernel of a method, :class:`~alphagp.kernels.TermKernel`,
stores), so that one description serves the search, the method and the model file:

* :class:`RBF`: v exp(-1/2 sum_d (x_d - x'_d)^2 / l_d^2), theta = (log v, log l...), with one
  lengthscale for every feature (``"one"``), one per feature (``"ard"``) or one per column of the
  table the features encode (``"columns"``: a category column's one-hot block shares one
  lengthscale, so the term over a block is a kernel on the column's categories whose one weight is
  learnt, the numeric columns their own, their missing-value indicators their own);
* :class:`Linear`: b x'x', theta = (log b,);
* sums and products of terms (``a + b``, ``a * b``; :class:`Sum`, :class:`Product`), theta the
  parts' in order.

A term with ``"columns"`` lengthscales is bound to the fit's features (:meth:`Term.bound`,
``groups[d]`` the table column of feature d); the bound term's :meth:`Term.spec` is plain JSON
naming it and its groups (model files), :func:`term_from_spec` reads it back, :func:`parse_term`
reads the command line's text form (``"rbf(columns) + linear"``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np
import torch

#: bounds of the positive parameters in a search (standardised features): variances, lengthscales
VARIANCE_BOUNDS = (1e-4, 1e4)
LENGTHSCALE_BOUNDS = (1e-2, 1e3)
LINEAR_BOUNDS = (1e-6, 1e2)
#: the lengthscale forms of :class:`RBF`
LENGTHSCALES = ("one", "ard", "columns")


class Term:
    """A covariance term (module docstring). Subclasses give :meth:`n_params`, :meth:`matrix`,
    :meth:`diagonal`, :meth:`variance`, :meth:`initial`, :meth:`bounds`, :meth:`lengthscale_values`,
    :meth:`bound` and :meth:`names`; ``+`` and ``*`` compose them. A term of its own (a leaf) is also
    its ``KIND``, the name of its description (:meth:`spec`) and of its text form (``linear``, or
    with a setting ``rbf(ard)``): :meth:`from_spec`, :meth:`text` and :meth:`parse` read and write
    them (a leaf without settings needs none of the three), and one line in :data:`_KINDS`
    registers it."""

    #: a leaf's name in its description and its text form
    KIND = ""

    @classmethod
    def from_spec(cls, _spec: dict) -> Term:
        """The leaf term its description (:meth:`spec`) names: here, one without settings."""
        return cls()

    @classmethod
    def parse(cls, setting: str | None) -> Term:
        """The leaf term of the text form ``KIND`` (``setting`` ``None``) or ``KIND(setting)``;
        a ``ValueError`` for a setting the term does not take."""
        if setting is not None:
            raise ValueError(f"{cls.KIND} takes no setting in parentheses")
        return cls()

    @classmethod
    def text_forms(cls) -> list[str]:
        """The leaf's text forms, for messages and help."""
        return [cls.KIND]

    def spec(self) -> dict:
        """Plain JSON naming the term (model files; :func:`term_from_spec` reads it back)."""
        return {"type": self.KIND}

    def text(self) -> str:
        """The term's text form (what :func:`parse_term` reads)."""
        return self.KIND

    def __add__(self, other: Term) -> Term:
        return Sum(_term(self), _term(other))

    def __mul__(self, other: Term) -> Term:
        return Product(_term(self), _term(other))

    def n_params(self, n_features: int) -> int:
        """The length of theta over ``n_features`` features."""
        raise NotImplementedError

    def matrix(self, theta: torch.Tensor, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """``[n, m]`` covariances between rows ``A`` ``[n, D]`` and ``B`` ``[m, D]`` at ``theta``
        ``[n_params]`` (differentiable in theta)."""
        raise NotImplementedError

    def diagonal(self, theta: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        """``[n]`` the prior variances k(x, x) of rows ``A`` ``[n, D]``."""
        raise NotImplementedError

    def jittered(self, theta: torch.Tensor, A: torch.Tensor, jitter: float) -> torch.Tensor:
        """``[n, n]`` the covariance of rows ``A`` ``[n, D]`` with ``jitter`` times the term's scale
        added on the diagonal (a search's Cholesky factor stays defined)."""
        eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
        return self.matrix(theta, A, A) + jitter * self.variance(theta, A.shape[-1]) * eye

    def variance(self, theta: torch.Tensor, n_features: int) -> torch.Tensor:
        """The term's scale (a scalar) over ``n_features`` features: its variance parameters combined
        as the term combines them (the unit of the jitter of its covariance matrices)."""
        raise NotImplementedError

    def initial(self, n_features: int, variance: float, lengthscale: float) -> np.ndarray:
        """theta ``[n_params]`` of a start with every variance ``variance`` (the linear term's a tenth
        of it per feature) and every lengthscale ``lengthscale``."""
        raise NotImplementedError

    def bounds(self, n_features: int, variance: tuple[float, float] = VARIANCE_BOUNDS) -> list[tuple[float, float]]:
        """Bounds of theta's entries for a search: the logs of ``variance`` for an RBF's variance, of
        :data:`LENGTHSCALE_BOUNDS` and :data:`LINEAR_BOUNDS`."""
        raise NotImplementedError

    def lengthscale_values(self, theta, n_features: int) -> np.ndarray | None:
        """``[D]`` the first RBF part's lengthscales at ``theta`` (``None``: the term has no RBF)."""
        raise NotImplementedError

    def bound(self, groups: np.ndarray) -> Term:
        """The term for features whose table columns are ``groups`` ``[D]`` (integers from 0;
        only ``"columns"`` lengthscales read them)."""
        raise NotImplementedError

    def names(self, n_features: int) -> list[str]:
        """theta's entries by name (``rbf.variance``, ``rbf.lengthscale[0]``, ...), for descriptions."""
        raise NotImplementedError

    def values(self, theta, n_features: int) -> dict:
        """theta's entries as positive values by name (plain floats)."""
        return {name: float(math.exp(v)) for name, v in zip(self.names(n_features), np.asarray(theta, dtype=float))}

    def __repr__(self) -> str:
        return describe_spec(self.spec())


def _term(value) -> Term:
    if not isinstance(value, Term):
        raise TypeError(f"a kernel term composes with kernel terms (RBF, Linear and their sums and products), "
                        f"not {type(value).__name__}")
    return value


def _log_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    return math.log(bounds[0]), math.log(bounds[1])


@dataclass(frozen=True, repr=False)
class RBF(Term):
    """v exp(-1/2 sum_d (x_d - x'_d)^2 / l_d^2) with ``lengthscales`` ``"one"``, ``"ard"`` or ``"columns"`` (module
    docstring); ``groups``: the features' table columns, set by :meth:`bound` at a fit."""

    lengthscales: str = "one"
    groups: tuple[int, ...] | None = None

    KIND = "rbf"

    @classmethod
    def from_spec(cls, spec):
        groups = spec.get("groups")
        return cls(str(spec.get("lengthscales", "one")), None if groups is None else tuple(int(g) for g in groups))

    @classmethod
    def parse(cls, setting):
        return cls("one" if setting is None else setting)

    @classmethod
    def text_forms(cls):
        return ["rbf", *(f"rbf({form})" for form in LENGTHSCALES)]

    def text(self):
        return f"rbf({self.lengthscales})"

    def __post_init__(self):
        if self.lengthscales not in LENGTHSCALES:
            raise ValueError(f"RBF lengthscales must be one of {list(LENGTHSCALES)}, got {self.lengthscales!r}")

    def _width(self, n_features: int) -> int:
        if self.lengthscales == "one":
            return 1
        if self.lengthscales == "ard" or self.groups is None:
            return n_features
        if len(self.groups) != n_features:
            raise ValueError(f"the RBF term's column groups cover {len(self.groups)} features, the rows have "
                             f"{n_features}")
        return max(self.groups) + 1

    def n_params(self, n_features: int) -> int:
        return 1 + self._width(n_features)

    def lengthscale(self, theta: torch.Tensor, n_features: int) -> torch.Tensor:
        """``[D]`` the features' lengthscales at ``theta``."""
        logs = theta[1:]
        if self.lengthscales == "columns" and self.groups is not None:
            logs = logs[torch.as_tensor(self.groups, device=theta.device)]
        return logs.exp().expand(n_features)

    def _distance(self, theta, A, B):
        """``[n, m]`` the squared distances sum_d (a_d - b_d)^2 / l_d^2."""
        lengthscale = self.lengthscale(theta, A.shape[-1])
        a = A / lengthscale
        if B is A:                               # one scaled copy (and one path for its gradient)
            sq = a.square().sum(-1)
            return (sq[:, None] + sq[None, :] - 2 * a @ a.T).clamp_min(0)
        b = B / lengthscale
        return (a.square().sum(-1)[:, None] + b.square().sum(-1)[None, :] - 2 * a @ b.T).clamp_min(0)

    def matrix(self, theta, A, B):
        return (theta[0] - 0.5 * self._distance(theta, A, B)).exp()

    def jittered(self, theta, A, jitter):
        """v (exp(-1/2 sum_d (x_d - x'_d)^2 / l_d^2) + jitter I): the jitter in units of the variance,
        as the closed form's start has always added it."""
        eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
        return theta[0].exp() * (torch.exp(-0.5 * self._distance(theta, A, A)) + jitter * eye)

    def diagonal(self, theta, A):
        return theta[0].exp().expand(A.shape[0])

    def variance(self, theta, _n_features):
        return theta[0].exp()

    def initial(self, n_features, variance, lengthscale):
        return np.array([math.log(variance), *[math.log(lengthscale)] * self._width(n_features)])

    def bounds(self, n_features, variance=VARIANCE_BOUNDS):
        return [_log_bounds(variance), *[_log_bounds(LENGTHSCALE_BOUNDS)] * self._width(n_features)]

    def lengthscale_values(self, theta, n_features):
        return self.lengthscale(torch.as_tensor(np.asarray(theta, dtype=np.float64)), n_features).numpy().copy()

    def spec(self):
        return {"type": self.KIND, "lengthscales": self.lengthscales,
                **({} if self.groups is None else {"groups": list(self.groups)})}

    def bound(self, groups):
        if self.lengthscales != "columns":
            return self
        groups = tuple(int(g) for g in np.asarray(groups).ravel())
        if groups and sorted(set(groups)) != list(range(max(groups) + 1)):
            raise ValueError("the RBF term's column groups must number the columns 0, 1, ... without gaps")
        return replace(self, groups=groups)

    def names(self, n_features):
        width = self._width(n_features)
        return ["rbf.variance", *(["rbf.lengthscale"] if width == 1 else [f"rbf.lengthscale[{j}]" for j in range(width)])]


@dataclass(frozen=True, repr=False)
class Linear(Term):
    """b x'x' (module docstring): the linear signal logistic regression takes."""

    KIND = "linear"

    def n_params(self, _n_features):
        return 1

    def matrix(self, theta, A, B):
        return theta[0].exp() * (A @ B.T)

    def diagonal(self, theta, A):
        return theta[0].exp() * A.square().sum(-1)

    def variance(self, theta, _n_features):
        return theta[0].exp()

    def initial(self, n_features, variance, _lengthscale):
        return np.array([math.log(0.1 * variance / max(n_features, 1))])

    def bounds(self, _n_features, _variance=VARIANCE_BOUNDS):
        return [_log_bounds(LINEAR_BOUNDS)]

    def lengthscale_values(self, _theta, _n_features):
        return None

    def bound(self, _groups):
        return self

    def names(self, _n_features):
        return ["linear.variance"]


@dataclass(frozen=True, repr=False)
class _Pair(Term):
    """Two terms combined; theta is ``left``'s then ``right``'s."""

    left: Term
    right: Term

    def n_params(self, n_features):
        return self.left.n_params(n_features) + self.right.n_params(n_features)

    def _split(self, theta, n_features):
        k = self.left.n_params(n_features)
        return theta[:k], theta[k:]

    def initial(self, n_features, variance, lengthscale):
        return np.concatenate([self.left.initial(n_features, variance, lengthscale),
                               self.right.initial(n_features, variance, lengthscale)])

    def bounds(self, n_features, variance=VARIANCE_BOUNDS):
        return self.left.bounds(n_features, variance) + self.right.bounds(n_features, variance)

    def lengthscale_values(self, theta, n_features):
        a, b = self._split(np.asarray(theta, dtype=np.float64), n_features)
        found = self.left.lengthscale_values(a, n_features)
        return self.right.lengthscale_values(b, n_features) if found is None else found

    def spec(self):
        return {"type": self.KIND, "left": self.left.spec(), "right": self.right.spec()}

    def bound(self, groups):
        return type(self)(self.left.bound(groups), self.right.bound(groups))

    def names(self, n_features):
        prefix = ("left.", "right.")
        return [prefix[0] + n for n in self.left.names(n_features)] + [prefix[1] + n for n in self.right.names(n_features)]


@dataclass(frozen=True, repr=False)
class Sum(_Pair):
    """k_left + k_right."""

    KIND = "sum"

    def matrix(self, theta, A, B):
        a, b = self._split(theta, A.shape[-1])
        return self.left.matrix(a, A, B) + self.right.matrix(b, A, B)

    def diagonal(self, theta, A):
        a, b = self._split(theta, A.shape[-1])
        return self.left.diagonal(a, A) + self.right.diagonal(b, A)

    def jittered(self, theta, A, jitter):
        """The left part's jittered covariance plus the right part's (the jitter once)."""
        a, b = self._split(theta, A.shape[-1])
        return self.left.jittered(a, A, jitter) + self.right.matrix(b, A, A)

    def variance(self, theta, n_features):
        a, b = self._split(theta, n_features)
        return self.left.variance(a, n_features) + self.right.variance(b, n_features)


@dataclass(frozen=True, repr=False)
class Product(_Pair):
    """k_left k_right."""

    KIND = "product"

    def matrix(self, theta, A, B):
        a, b = self._split(theta, A.shape[-1])
        return self.left.matrix(a, A, B) * self.right.matrix(b, A, B)

    def diagonal(self, theta, A):
        a, b = self._split(theta, A.shape[-1])
        return self.left.diagonal(a, A) * self.right.diagonal(b, A)

    def variance(self, theta, n_features):
        a, b = self._split(theta, n_features)
        return self.left.variance(a, n_features) * self.right.variance(b, n_features)


_KINDS = {"rbf": RBF, "linear": Linear, "sum": Sum, "product": Product}


def _leaves() -> dict[str, type[Term]]:
    """The registered terms of their own (not a sum or product) by ``KIND``."""
    return {kind: cls for kind, cls in _KINDS.items() if not issubclass(cls, _Pair)}


def text_forms() -> str:
    """Every leaf's text forms in words (``"rbf, rbf(one), ... and linear"``), for messages and help."""
    forms = [form for cls in _leaves().values() for form in cls.text_forms()]
    return ", ".join(forms[:-1]) + " and " + forms[-1]


def term_from_spec(spec: dict) -> Term:
    """The term :meth:`Term.spec` described; a ``ValueError`` for a description of no term."""
    if not isinstance(spec, dict) or spec.get("type") not in _KINDS:
        raise ValueError(f"the kernel description is damaged: {spec!r} names no kernel term "
                         f"(one of {sorted(_KINDS)})")
    cls = _KINDS[spec["type"]]
    if issubclass(cls, _Pair):
        return cls(term_from_spec(spec.get("left")), term_from_spec(spec.get("right")))
    return cls.from_spec(spec)


def describe_spec(spec: dict) -> str:
    """The text form of a term's description (what :func:`parse_term` reads)."""
    kind = spec["type"]
    if not issubclass(_KINDS[kind], _Pair):
        return _KINDS[kind].from_spec(spec).text()
    left, right = describe_spec(spec["left"]), describe_spec(spec["right"])
    # the text reads left to right, * before +: parentheses where the description nests otherwise
    if kind == "product":
        left = f"({left})" if spec["left"]["type"] == "sum" else left
        right = f"({right})" if spec["right"]["type"] in ("sum", "product") else right
        return f"{left} * {right}"
    right = f"({right})" if spec["right"]["type"] == "sum" else right
    return f"{left} + {right}"


#: a leaf's name, with a setting in parentheses or without, an operator or a parenthesis
_TOKEN = re.compile(r"\s*([a-z_]+\s*\(\s*[a-z_]+\s*\)|[a-z_]+|\+|\*|\(|\))")


def parse_term(text: str) -> Term:
    """The term of the text form ``text``: the leaves' forms (:func:`text_forms`: ``rbf``,
    ``rbf(one)``, ``rbf(ard)``, ``rbf(columns)``, ``linear``) joined by ``+`` and ``*`` (``*``
    first) with parentheses; a ``ValueError`` that quotes the text where it is not one."""
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"kernel {text!r}: cannot read {text[position:].strip()!r}; write terms "
                             f"{text_forms()} joined by + and *, e.g. 'rbf(columns) + linear'")
        tokens.append(match.group(1).replace(" ", ""))
        position = match.end()
    term, rest = _sum(tokens, text)
    if rest:
        raise ValueError(f"kernel {text!r}: unexpected {' '.join(rest)!r}")
    return term


def _joined(tokens: list[str], text: str, operator: str, combine, operand):
    """Operands read by ``operand`` joined left to right by ``operator`` into ``combine`` (a pair)."""
    term, tokens = operand(tokens, text)
    while tokens and tokens[0] == operator:
        right, tokens = operand(tokens[1:], text)
        term = combine(term, right)
    return term, tokens


def _sum(tokens: list[str], text: str):
    return _joined(tokens, text, "+", Sum, _product)


def _product(tokens: list[str], text: str):
    return _joined(tokens, text, "*", Product, _atom)


def _atom(tokens: list[str], text: str):
    if not tokens:
        raise ValueError(f"kernel {text!r} ends where a term is expected")
    head, rest = tokens[0], tokens[1:]
    if head == "(":
        term, rest = _sum(rest, text)
        if not rest or rest[0] != ")":
            raise ValueError(f"kernel {text!r}: a parenthesis is not closed")
        return term, rest[1:]
    name, _, setting = head.partition("(")
    if name not in _leaves():
        raise ValueError(f"kernel {text!r}: unexpected {head!r}; write terms {text_forms()} joined by + and *")
    try:
        return _leaves()[name].parse(setting[:-1] if setting else None), rest
    except ValueError as err:
        raise ValueError(f"kernel {text!r}: cannot read {head!r}: {err}") from None
