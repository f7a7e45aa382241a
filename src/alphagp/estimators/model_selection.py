"""``method="auto"``: validated model selection over a portfolio of candidate settings.

:class:`~alphagp.GPClassifier` with ``method="auto"`` fits every candidate of :data:`PORTFOLIO`
that suits the data, scores each on held-out rows of the training data, keeps the one with
the lowest mean held-out negative log-likelihood (NLL) and fits it on all training rows:

* below :data:`CV_ROWS` training rows, stratified k-fold cross-validation (``cv`` folds, at
  most as many as the smallest class has rows), so that a validation split of a dozen rows
  does not decide. Candidates race: once one candidate is scored on every fold, a later one whose mean NLL on
  its first folds exceeds the leader's on the same folds by more than :data:`RACE_MARGIN` is
  not fitted on the rest (:func:`behind`);
* from :data:`CV_ROWS` rows on, one stratified split: each candidate trains with validated
  early stopping on the same held-out ``validation_fraction`` of the rows, and is scored by
  the NLL of the state it returns (the best one on those rows). The winner's fit is then the
  final fit already and is kept, unless callbacks or a checkpoint ask for a fit of their own.

A candidate is a set of estimator parameters (method, inducing points, schedule). Its values
fill only the parameters the user left at their defaults: ``GPClassifier(n_inducing=100)``
tries every candidate with 100 inducing points. A candidate whose method cannot take an
explicit ``alpha``, ``epsilon``, ``damping`` or mini-batch ``batch_size`` the user set is left
out. With ``max_time``, every fit gets an equal share of the time left (a final fit counted as
one more where there is one), so the whole selection stays within the budget up to one step of
each fit.

The kernel start (``kernel_init="regression"``, :mod:`alphagp.kernel_start`; up to
:data:`START_FEATURES` features, unless the user sets it) is fitted once, on the standardised
training rows, and every candidate that starts from it gets its lengthscales:
the start is a hyper-parameter of all candidates alike, and fitting it once instead of once per
candidate and fold takes it from a dozen surrogate fits to one (the folds' held-out rows take
part in this one start, a small leak into the folds' scores that all candidates share). With ``max_time`` it takes at most
:data:`~alphagp.kernel_start.BUDGET_SHARE` of the budget.

Where no stratified held-out share exists (a class with a single row), no candidate can be
scored: the first candidate that suits the data is fitted, and ``cv_results_`` says so. A
candidate whose fit fails numerically (a non-finite objective, a failed factorisation) is left
unscored and ranks last; when every candidate fails, their failures are raised.

The portfolio and the thresholds are measured (BENCHMARKS.md, "The default as validated model
selection"); every number there was chosen on validation rows of the training data.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.base import clone

from ..data.held_out import class_counts, held_out_problem, held_out_rows
from ..data.streaming import StandardizedRows, column_mean_std
from ..kernel_start import BUDGET_SHARE, SURROGATES, KernelStart, describe_start, fit_kernel_start
from ..labels import encode_labels
from ..methods import free_alpha, method_spec, resolve_alpha, takes
from ..metrics import negative_log_likelihood
from ..numerics import CholeskyError
from ..training import uses_mini_batches
from . import fitted
from .build import start_settings
from .fit_plan import is_own_start, kernel_start_of


@dataclass(frozen=True)
class Candidate:
    """One setting of the portfolio: a ``name`` for the progress output and ``cv_results_``,
    the estimator ``params`` it sets, and the training rows it is tried at
    (``min_rows <= N < max_rows``; batch methods cost O(N) memory and time per step)."""

    name: str
    params: dict = field(default_factory=dict)
    min_rows: int = 0
    max_rows: int | None = None

    def suits(self, n_rows: int) -> bool:
        return n_rows >= self.min_rows and (self.max_rows is None or n_rows < self.max_rows)


_MINI_BATCHES = {"batch_size": 128, "inducing_init": "kmeans", "early_stopping": True}
#: the closed form's settings that validation chooses between: the Dirichlet prior count and a
#: factor on the transformed labels' noise (its kernel held at the shared Dirichlet start)
DIRICHLET_GRID = {"alpha_eps": (1e-2, 1e-3, 1e-4), "noise_scale": (1.0, 0.1)}
#: the EP family runs below this many rows and from :data:`CV_ROWS` on (``sep``), not in between, where
#: the closed form won on every set of the study (digits, banknote) by a wide margin
EP_BELOW = 1_000


def _closed_form(alpha_eps: float, noise_scale: float) -> Candidate:
    return Candidate(f"dirichlet(alpha_eps={alpha_eps:g}, noise_scale={noise_scale:g})",
                     {"method": "dirichlet", "kernel_init": "dirichlet",
                      "method_params": {"alpha_eps": alpha_eps, "noise_scale": noise_scale}})


#: the candidates, cheapest first, each a plan that names its kernel start. The closed form first
#: (the Dirichlet GP at the grid's settings, its kernel the shared Dirichlet start's), then stochastic
#: EP and power EP (alpha = 0.5) from the regression of the labels: of 24 candidates (the grid at 12
#: points, issue 44's four methods from the Dirichlet start's kernel, today's four) scored on held-out
#: rows of 16 data sets, the cheapest portfolio whose choice came within 2 % of the best candidate's
#: held-out NLL (geometric mean over the sets; BENCHMARKS.md, "A GP classifier in closed form"); the
#: EP family's row windows (:data:`EP_BELOW`, :data:`CV_ROWS`) cost nothing on the study's sets.
PORTFOLIO: tuple[Candidate, ...] = (
    *(_closed_form(eps, scale) for eps in DIRICHLET_GRID["alpha_eps"] for scale in DIRICHLET_GRID["noise_scale"]),
    Candidate("sep", {"method": "sep", **_MINI_BATCHES, "kernel_init": "regression"}, max_rows=EP_BELOW),
    Candidate("sep", {"method": "sep", **_MINI_BATCHES, "kernel_init": "regression"}, min_rows=2_000),
    Candidate("pep", {"method": "pep", "kernel_init": "regression"}, max_rows=EP_BELOW),
)
#: below this many training rows the candidates are compared by k-fold cross-validation
CV_ROWS = 2_000
#: the candidates start from the regression of the labels only up to this many features, the widest
#: data the study measured it on (digits); on MNIST's 784 pixels it raised the held-out NLL of both
#: mini-batch candidates (MNIST-5000: SEP 0.268 -> 0.372, VI 0.231 -> 0.420; BENCHMARKS.md). A
#: ``kernel_init`` the user sets applies at any width.
START_FEATURES = 64
#: racing: a candidate whose first folds' mean held-out NLL exceeds the leader's on the same folds
#: by more than this share is dropped (fixed before the study; replayed on its folds it changed no
#: choice: BENCHMARKS.md, "One strong fit")
RACE_MARGIN = 0.10
#: the estimator parameters a method may refuse (the registry decides: :func:`~alphagp.methods.takes`)
_METHOD_ARGUMENTS = ("alpha", "epsilon", "damping")
#: the values of ``alpha="auto"`` when ``alpha_grid`` is not given
DEFAULT_ALPHA_GRID = (0.001, 0.25, 0.5, 0.75, 1.0)


def explicit_parameters(estimator) -> dict:
    """The parameters of ``estimator`` the user set to other values than the defaults."""
    defaults = type(estimator)().get_params()
    return {k: v for k, v in estimator.get_params().items() if not _same(v, defaults.get(k))}


def candidates_for(estimator, n_rows: int, portfolio=None, weighted: bool = False) -> list[tuple[Candidate, dict]]:
    """``[(candidate, params)]``: the candidates that suit ``n_rows`` training rows and the user's
    explicit settings (``weighted``: sample weights, which only some methods take), each with the
    estimator parameters it is fitted with (its own values where the user kept the default).

    The candidates are ``portfolio``'s (default: :data:`PORTFOLIO` with ``method="auto"``, else the
    one method the user named); with ``alpha="auto"`` each one whose method takes a free alpha
    becomes one candidate per value of the alpha grid (:func:`alpha_grid`), named
    ``"<candidate>(alpha=<value>)"``, and the others are left out: the alpha grid is scored, raced
    and budgeted like any other candidates."""
    explicit = explicit_parameters(estimator)
    if portfolio is None:
        portfolio = PORTFOLIO if estimator.method == "auto" else (Candidate(estimator.method,
                                                                            {"method": estimator.method}),)
    auto_alpha = explicit.get("alpha") == "auto"
    if auto_alpha and estimator.method != "auto" and not free_alpha(estimator.method):
        resolve_alpha(estimator.method, 0.5)                     # the method's reason, as a ValueError
    chosen = []
    mini = isinstance(explicit.get("batch_size"), int) and uses_mini_batches(explicit["batch_size"], n_rows)
    given = {k: explicit[k] for k in _METHOD_ARGUMENTS if k in explicit and not (k == "alpha" and auto_alpha)}
    for candidate in portfolio:
        method = candidate.params["method"]
        capabilities = method_spec(method).cls.CAPABILITIES
        if (not candidate.suits(n_rows) or not takes(method, **given) or (auto_alpha and not free_alpha(method))
                or (mini and not capabilities.mini_batches) or (weighted and not capabilities.sample_weight)):
            continue
        own = {k: v for k, v in candidate.params.items() if k not in explicit}
        params = {**own, "checkpoint": None, "verbose": False}
        if not auto_alpha:
            chosen.append((candidate, params))
            continue
        for a in alpha_grid(estimator):
            chosen.append((replace(candidate, name=f"{candidate.name}(alpha={a:g})",
                                   params={**candidate.params, "alpha": a}), {**params, "alpha": a}))
    return chosen


def alpha_grid(estimator) -> list[float]:
    """The values ``alpha="auto"`` chooses from: ``alpha_grid``, or :data:`DEFAULT_ALPHA_GRID`;
    a ``ValueError`` for an empty grid or a value outside (0, 1]."""
    grid = [float(a) for a in (DEFAULT_ALPHA_GRID if estimator.alpha_grid is None else estimator.alpha_grid)]
    if not grid or not all(0.0 < a <= 1.0 for a in grid):
        raise ValueError(f"alpha_grid must hold values in (0, 1], got {grid}")
    return grid


def _same(a, b) -> bool:
    """Whether parameter values ``a`` and ``b`` are equal (an array is never a default)."""
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else False
    except (TypeError, ValueError):
        return False


@dataclass
class Selection:
    """What :func:`select` found: the winner's parameters, ``cv_results_``, where the winner's
    scored fit is the final one (one split), that fitted estimator, and the candidates' shared
    kernel starts by surrogate (empty: none was fitted)."""

    candidate: Candidate
    params: dict
    cv_results: dict
    scheme: str
    fitted: object | None = None
    kernel_starts: dict = field(default_factory=dict)


def shared_kernel_starts(estimator, X, y_idx: np.ndarray, surrogates, weight=None,
                         max_seconds: float | None = None) -> dict[str, KernelStart]:
    """The kernel starts of the candidates, one per surrogate of ``surrogates`` (module
    docstring), for rows ``X`` ``[N, D]`` with class indices ``y_idx`` and weights ``weight`` ``[N]``
    (or ``None``), standardised as a fit would, each fitted with the surrogate's default settings
    (:func:`~alphagp.estimators.build.start_settings`); none where the ``kernel_params``
    give the lengthscales already. With ``max_seconds``, the searches share it."""
    if "lengthscale" in (estimator.kernel_params or {}) or not surrogates:
        return {}
    d = X.shape[1]
    mean, scale = column_mean_std(X, weight=weight) if estimator.standardize else (np.zeros(d), np.ones(d))
    Xs = StandardizedRows(X, mean, np.where(scale > 0, scale, 1.0))     # read lazily: only the sampled rows
    share = None if max_seconds is None else max_seconds / len(surrogates)
    return {surrogate: fit_kernel_start(Xs, y_idx, int(y_idx.max()) + 1, weight=weight,
                                        rng=np.random.default_rng(estimator.random_state), max_seconds=share,
                                        **start_settings(surrogate, {}))
            for surrogate in sorted(surrogates)}


def with_start(params: dict, estimator, starts: dict[str, KernelStart]) -> dict:
    """A candidate's ``params`` with its start's kernel (the lengthscales; the Dirichlet start's
    amplitude and noise too) as its initial kernel (the candidate's or the user's ``kernel_params``
    win), where the candidate starts from a surrogate of ``starts``, and held there where the start
    is the closed-form method's own search (so the params fit what the selection fitted); unchanged
    otherwise."""
    merged = {**estimator.get_params(), **params}
    start = starts.get(kernel_start_of(merged))
    if start is None:
        return params
    given = merged["kernel_params"] or {}                                     # the candidate's own, or the user's
    own = is_own_start(merged)
    held = {"optimize_hyperparameters": False, **({"optimize_inducing": False}
                                                  if params.get("optimize_inducing", estimator.optimize_inducing) == "auto"
                                                  else {})}
    return {**params, "kernel_params": {**start.kernel_params(), **given},
            **(held if own else {})}                                         # the start was its kernel's search


def _folds(y_idx: np.ndarray, n_rows: int, cv: int, fraction: float, seed: int):
    """The held-out scheme: ``("cv", [(train, test), ...])`` below :data:`CV_ROWS` rows,
    ``("split", None)`` from there on, ``("none", None)`` where no stratified share exists."""
    from sklearn.model_selection import StratifiedKFold
    counts = class_counts(y_idx)
    smallest = int(counts[counts > 0].min())
    if smallest < 2:
        return "none", None
    if n_rows >= CV_ROWS:
        return ("split" if held_out_problem(y_idx, fraction, stratify=True) is None else "none"), None
    k = min(cv, smallest)
    return "cv", list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(n_rows), y_idx))


def class_frequency_nll(y_idx: np.ndarray, weight: np.ndarray | None, held_out) -> float:
    """The held-out NLL of the model that predicts every row's class by the training class
    frequencies (weighted, each count plus one half so no class gets probability 0), averaged over
    the ``(train, test)`` row splits of ``held_out`` as the candidates' scores are: the bar a
    classifier must clear to say anything about its features."""
    C = int(y_idx.max()) + 1
    w = np.ones(len(y_idx)) if weight is None else np.asarray(weight, dtype=np.float64)
    scores = []
    for train, test in held_out:
        counts = np.bincount(y_idx[train], weights=w[train], minlength=C) + 0.5
        proba = np.broadcast_to(counts / counts.sum(), (len(test), C))
        scores.append(negative_log_likelihood(proba, y_idx[test], None if weight is None else w[test]))
    return float(np.mean(scores))


def select(estimator, X, y, y_idx, *, portfolio=None, keep_split_fit: bool = True,
           clock=None, weight=None, race: bool = True) -> Selection:
    """Score the candidates (module docstring) on ``X`` ``[N, D]`` with labels ``y`` ``[N]`` (class
    indices ``y_idx``) and return the :class:`Selection`. No row outside ``X`` is read.
    ``keep_split_fit``: on one split, the winner's fit will be kept as the final one, so the
    budget holds no share for a final fit there. ``weight`` ``[N]`` (sample times class weights):
    every fit takes its rows' weights and every held-out score is their weighted mean NLL.
    ``race=False`` scores every candidate on every fold (the studies that choose the portfolio).
    ``clock``: the time source of the budget (default ``time.perf_counter``; tests pass a fake one)."""
    clock = clock or time.perf_counter
    n = len(y)
    seed = int(np.random.default_rng(estimator.random_state).integers(2**31 - 1))
    choices = candidates_for(estimator, n, portfolio, weighted=weight is not None)
    if not choices:
        raise ValueError(f"{_what(estimator)} found no candidate method that takes the settings given "
                         f"(alpha={estimator.alpha!r}, epsilon={estimator.epsilon!r}, damping={estimator.damping!r}); "
                         "choose a method")
    scheme, folds = _folds(y_idx, n, estimator.cv, estimator.validation_fraction, seed)
    began, budget = clock(), estimator.max_time
    if X.shape[1] > START_FEATURES:       # wider data: the candidates' own regression starts become fixed ones
        choices = [(c, {**p, "kernel_init": "fixed"} if p.get("kernel_init") == "regression" else p) for c, p in choices]
    surrogates = {kernel_start_of({**estimator.get_params(), **params}) for _, params in choices} & set(SURROGATES)
    limit = None if budget is None else BUDGET_SHARE * budget
    kernel = shared_kernel_starts(estimator, X, y_idx, surrogates, weight, limit)
    if estimator.verbose:
        for fitted_start in kernel.values():
            print(f"{_what(estimator)}: kernel start: {describe_start(fitted_start)}", flush=True)
    if scheme == "none":
        candidate, params = choices[0]
        params = _feasible({**params, "random_state": seed}, y_idx, estimator.validation_fraction)
        return Selection(candidate, params, _results([candidate], [with_start(params, estimator, kernel)], [[]], [[]]),
                         scheme, kernel_starts=kernel)
    fits_left = len(choices) * (len(folds) if scheme == "cv" else 1) + (scheme == "cv" or not keep_split_fit)
    scores, seconds, fitted, failures, leader = [], [], [], [], None
    classes = encode_labels(y)[0]
    if isinstance(estimator.n_inducing, int) and estimator.n_inducing > n:     # said once, of the rows given
        warnings.warn(f"n_inducing={estimator.n_inducing} is larger than the {n} training rows; the candidates "
                      "use at most the rows they fit on", UserWarning, stacklevel=4)
    for index, (candidate, params) in enumerate(choices):
        params = {**params, "random_state": seed}
        if scheme == "split":
            params["early_stopping"] = True
        own_scores, own_seconds, model, raced = [], [], None, False
        splits = folds if scheme == "cv" else [(None, None)]
        for k, (train, test) in enumerate(splits):
            share = None if budget is None else max(budget - (clock() - began), 0.0) / fits_left
            fits_left -= 1
            if share is not None and share <= 0.0:
                break
            rows = slice(None) if train is None else train
            model = clone(estimator).set_params(checkpoint=None, verbose=False)
            model.classes_ = classes
            t0 = clock()
            try:
                with _clip_said():
                    model._fit_params({**estimator.get_params(),
                                       **_feasible(params, y_idx[rows], estimator.validation_fraction)},
                                      X[rows], y_idx[rows], None if weight is None else weight[rows],
                                      start=kernel, max_time=share)
                if scheme == "cv":
                    own_scores.append(negative_log_likelihood(model._proba(X[test]), y_idx[test],
                                                              None if weight is None else weight[test]))
                else:
                    own_scores.append(float(model.validation_scores_[model.best_iteration_ - 1]))
            except (FloatingPointError, CholeskyError) as err:       # a candidate that fails numerically
                failures.append(f"{candidate.name}: {err}")           # is left unscored, ranked last
                own_scores, model = [], None
                break
            finally:
                own_seconds.append(clock() - t0)
            if race and k + 1 < len(splits) and behind(own_scores, None if leader is None else scores[leader]):
                raced, fits_left = True, fits_left - (len(splits) - k - 1)
                break
        scores.append(own_scores)
        seconds.append(own_seconds)
        fitted.append(model if scheme == "split" else None)
        if len(own_scores) == len(splits) and (leader is None or np.mean(own_scores) < np.mean(scores[leader])):
            leader = index
        if estimator.verbose:
            mean = f"{np.mean(own_scores):.4f}" if own_scores else "not scored (budget spent)"
            note = f", dropped: behind {choices[leader][0].name} by more than {RACE_MARGIN:.0%}" if raced else ""
            print(f"{_what(estimator)}: {candidate.name}: held-out NLL {mean} "
                  f"({len(own_scores)} {'folds' if scheme == 'cv' else 'split'}, {sum(own_seconds):.1f} s{note})",
                  flush=True)
    if not any(scores) and not failures:
        raise ValueError(f"{_what(estimator)}: max_time={budget!r} s was spent before any candidate could be scored; "
                         "give it more time, or name a method")
    if not any(scores):
        raise FloatingPointError(f"{_what(estimator)}: every candidate failed numerically: " + "; ".join(failures))
    results = _results([c for c, _ in choices], [with_start({**p, "random_state": seed}, estimator, kernel)
                                                 for _, p in choices], scores, seconds)
    best = results["rank_test_nll"].index(1)
    held_out = folds if scheme == "cv" else [held_out_rows(y_idx, estimator.validation_fraction, True, seed)]
    frequencies = class_frequency_nll(y_idx, weight, held_out)
    if estimator.verbose:
        print(f"{_what(estimator)}: the training class frequencies: held-out NLL {frequencies:.4f}", flush=True)
    if results["mean_test_nll"][best] >= frequencies:
        warnings.warn(f"{_what(estimator)}: no candidate beat the training class frequencies on the held-out rows "
                      f"(best: {choices[best][0].name}, NLL {results['mean_test_nll'][best]:.4f}; the class "
                      f"frequencies: {frequencies:.4f}): the features, as given, tell the model less than the "
                      "labels' proportions do; check their encoding (categorical_features, identifiers given as "
                      "numbers) or use another model", UserWarning, stacklevel=4)
    candidate, params = choices[best]
    params = {**params, "random_state": seed, **({"early_stopping": True} if scheme == "split" else {})}
    return Selection(candidate, _feasible(params, y_idx, estimator.validation_fraction), results, scheme,
                     fitted[best], kernel)


def fit_selected(estimator, X, y, y_idx, callbacks, weight=None, clock=None):
    """The fit of an ``estimator`` that selects (``method="auto"``, ``alpha="auto"``): the candidate
    with the best held-out NLL (:func:`select`), fitted on all of ``X`` ``[N, D]``, ``y`` (class
    indices ``y_idx``; rows weighted by ``weight`` ``[N]``, class weights included, where given):
    the winner's parameters over the user's become the final fit's plan (the user's parameters
    are never changed), or on one split the winner's fit is the final one (unless callbacks or a
    checkpoint ask for a fit of their own); the final fit gets the time ``max_time`` has left.
    Where no held-out rows exist (a class of one row) the first candidate is fitted, with a
    warning. ``clock``: as :func:`select`'s. Returns ``estimator``."""
    clock = clock or time.perf_counter
    start = clock()
    reuse = not callbacks and not estimator.checkpoint
    selection = select(estimator, X, y, y_idx, keep_split_fit=reuse, weight=weight, clock=clock)
    if selection.scheme == "none":
        warnings.warn(f"no held-out rows to choose on (a class has a single row): fitted the first candidate, "
                      f"{selection.candidate.name}, without a selection", UserWarning, stacklevel=4)
    if estimator.verbose:
        print(f"{_what(estimator)} chose {selection.candidate.name} ({selection.scheme}): "      # as it runs
              + ", ".join(f"{k}={selection.params.get(k, v)!r}" for k, v in selection.candidate.params.items()),
              flush=True)
    if selection.fitted is not None and reuse:
        fitted.record_fit_of(estimator, selection.fitted, keep=_INPUT_ATTRIBUTES)
    else:
        budget = estimator.max_time
        remaining = None if budget is None else max(budget - (clock() - start), 1e-6)
        with _clip_said():
            estimator._fit_params({**estimator.get_params(), **selection.params}, X, y_idx, weight, callbacks,
                                  start=selection.kernel_starts, max_time=remaining)
    fitted.record_selection(estimator, selection.candidate.name, selection.scheme, selection.cv_results)
    return estimator


def _what(estimator) -> str:
    """What the progress lines call the selection: ``method='auto'``, ``alpha='auto'`` or both."""
    return ", ".join(f"{k}='auto'" for k in ("method", "alpha") if getattr(estimator, k) == "auto")


@contextlib.contextmanager
def _clip_said():
    """The fits of a selection without the warning that ``n_inducing`` exceeds their rows: the
    selection says it once, of the rows the user gave (:func:`select`)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="n_inducing=.* is larger than", category=UserWarning)
        yield


#: the attributes a fit sets from the user's input columns, which a candidate's fit (on the
#: validated, encoded rows) does not have and the final estimator keeps
_INPUT_ATTRIBUTES = ("n_features_in_", "feature_names_in_", "table_encoding_")


def behind(scores: list[float], leader: list[float] | None, margin: float | None = None) -> bool:
    """Racing: whether a candidate whose first folds scored ``scores`` is clearly behind the
    best fully scored candidate so far (``leader``, its scores on every fold; ``None``: none yet),
    that is, its mean held-out NLL on those folds exceeds the leader's on the same folds by more
    than ``margin`` (default :data:`RACE_MARGIN`) of it. Such a candidate is not fitted on the
    remaining folds."""
    if leader is None or not scores:
        return False
    margin = RACE_MARGIN if margin is None else margin
    return float(np.mean(scores)) > (1.0 + margin) * float(np.mean(leader[:len(scores)]))


def _feasible(params: dict, y_idx: np.ndarray, fraction: float) -> dict:
    """``params`` for a fit on rows of class indices ``y_idx``: a candidate's validated early
    stopping is left out where those rows cannot give a stratified held-out share (a class of
    one row, or fewer held-out rows than classes: tiny data or a small fold)."""
    if params.get("early_stopping") is not True or held_out_problem(y_idx, fraction, stratify=True) is None:
        return params
    return {**params, "early_stopping": False}


def _results(candidates, params, scores, seconds) -> dict:
    """scikit-learn's ``cv_results_`` shape: one entry per candidate in every list, the NLL of
    each split (``NaN`` where racing dropped the candidate or the budget ran out before it), their
    mean and spread (``NaN`` for a candidate not scored on every split), the mean seconds of a fit
    and the rank (1 = chosen: the lowest mean; candidates scored on some splits rank after those
    scored on all, by their partial mean, and unscored candidates last; the first candidate wins
    when none was scored)."""
    width = max((len(s) for s in scores), default=0)
    table = np.full((len(candidates), width), np.nan)
    for i, s in enumerate(scores):
        table[i, :len(s)] = s
    scored = np.array([len(s) == width and width > 0 for s in scores])
    mean = np.array([np.mean(s) if ok else np.nan for s, ok in zip(scores, scored)])
    # every fold scored first (by mean), then candidates raced out or out of budget (by their partial
    # mean), then candidates without a score
    key = [(0, m) if ok else (1, float(np.mean(s))) if s else (2, 0.0) for s, ok, m in zip(scores, scored, mean)]
    order = sorted(range(len(candidates)), key=lambda i: key[i])
    rank = np.empty(len(candidates), dtype=int)
    rank[order] = np.arange(1, len(candidates) + 1)
    results = {"candidate": [c.name for c in candidates], "params": [dict(p) for p in params],
               "mean_test_nll": mean.tolist(),
               "std_test_nll": [float(np.std(s)) if ok else float("nan") for s, ok in zip(scores, scored)],
               "mean_fit_time": [float(np.mean(s)) if s else float("nan") for s in seconds],
               "rank_test_nll": rank.tolist()}
    for k in range(width):
        results[f"split{k}_test_nll"] = table[:, k].tolist()
    return results
