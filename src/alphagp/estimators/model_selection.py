"""``method="auto"``: validated model selection over a portfolio of candidate settings.

:class:`~alphagp.GPClassifier` with ``method="auto"`` fits every candidate of :data:`PORTFOLIO`
that suits the data, scores each on held-out rows of the training data, keeps the one with
the lowest mean held-out negative log-likelihood (NLL) and fits it on all training rows. The
held-out schemes are records of :mod:`.held_out_schemes`; :func:`select` reads the estimator's
values and its fit of one candidate (a :class:`Selector`), not the estimator:

* below :data:`CV_ROWS` training rows, stratified k-fold cross-validation (``cv`` folds, at
  most as many as the smallest class has rows), so that a validation split of a dozen rows
  does not decide; below :data:`~.held_out_schemes.TINY_ROWS` rows the folds are drawn
  :data:`~.held_out_schemes.TINY_REPEATS` times,
  and integer weights (a count-weighted table) split the rows' copies across the folds, not the
  rows. The candidates are scored fold by fold and race where the held-out folds have at least
  :data:`RACE_ROWS` rows: after each fold, one whose mean NLL on the folds so far exceeds that of
  the round's best on the same folds by more than :data:`RACE_MARGIN` is not fitted on the rest
  (:func:`behind`);
* from :data:`CV_ROWS` rows on, one stratified split: each candidate trains with validated
  early stopping on the same held-out ``validation_fraction`` of the rows, and is scored by
  the NLL of the state it returns (the best one on those rows). The winner's fit is then the
  final fit already and is kept, unless callbacks or a checkpoint ask for a fit of their own, or
  the winner is a closed form from its own start (one start and one step on every row). The closed
  form's inducing points grow with the rows, the memory and each fit's share of the budget (its
  ``auto_n_inducing``), so a candidate is scored at the capacity its refit has.

Below :data:`CV_ROWS` rows the closed form is one candidate (:data:`CLOSED_FORM_BY_LOO`) whose
fit on a fold's training rows tries every point of :data:`LOO_DIRICHLET_GRID` (``alpha_eps``,
``noise_scale``) at the fold's kernel start and keeps the one whose exact leave-one-out predictive
of those rows is best (:func:`fit_candidate`; one factorisation a point); the fold's held-out rows
then score it like any candidate, and the final fit takes the point its folds chose most often.
Scoring the candidates themselves by leave-one-out on every row instead of folds leaks: the
kernel start fitted on every row saw the row left out, and its leave-one-out NLL falls below that
of fits refitted without each row, below the class frequencies' on tables of noise (issue 79:
``benchmarks/loo_leak.py``, ``report.py looleak``).

The class frequencies (:data:`FREQUENCIES`, the features ignored) are a candidate too: where
nothing beats them on the held-out rows they are the model, with a warning (issue 73: on a 58-row
table the closed form's best grid point scored 1.33 against the frequencies' 1.00).

A candidate is a set of estimator parameters (method, inducing points, schedule). Its values
fill only the parameters the user left at their defaults: ``GPClassifier(n_inducing=100)``
tries every candidate with 100 inducing points. A candidate whose method cannot take an
explicit ``alpha``, ``epsilon``, ``damping``, mini-batch ``batch_size`` or inducing points the user
set is left out. With ``max_time``, the kernel starts of every split are fitted first, then every
fit of a fold gets the same share of the time left (a final fit counted as one more where there is
one), so the whole selection stays within the budget up to one step of each fit and no candidate's
share depends on its place in the portfolio.

The kernel starts the candidates share (:data:`~alphagp.kernel_start.SHARED_STARTS`: the regression of the labels, up to
:data:`START_FEATURES` features unless the user sets it, and the Dirichlet GP's,
:mod:`alphagp.kernel_start`) are fitted once per split, on its training rows alone, and every
candidate that starts from one gets it there: no candidate is scored on rows its kernel saw. The
final fit fits the shared start again on every row, with the folds' settings. With ``max_time`` the starts take at most
:data:`~alphagp.kernel_start.BUDGET_SHARE` of the budget.

Where no stratified held-out share exists (a class with a single row), no candidate can be
scored: the first candidate that suits the data is fitted, and ``cv_results_`` says so. A
candidate whose fit fails numerically (a non-finite objective, a failed factorisation, a refusal
of its rows) is left unscored, ranks last and its reason is in ``cv_results_["failure"]``; when
every candidate fails, their failures are raised; a winner that fails on every row is replaced by
the next candidate by rank, with a warning.

The portfolio and the thresholds are measured (BENCHMARKS.md, "The default as validated model
selection"); every number there was chosen on validation rows of the training data.
"""

from __future__ import annotations

import contextlib
import itertools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from ..data.held_out import held_out_problem
from ..kernel_start import BUDGET_SHARE, SHARED_STARTS, STARTS, KernelStart, describe_start, fit_kernel_start
from ..labels import encode_labels
from ..methods import free_alpha, method_spec, resolve_alpha, takes
from ..methods.class_frequencies import PRIOR_COUNT
from ..metrics import negative_log_likelihood
from ..numerics import CholeskyError
from ..training import uses_mini_batches
from ..training.progress import progress
from .fit_plan import is_own_start, kernel_start_of
from .held_out_schemes import CV_ROWS, Fold, HeldOutScheme, scheme_for
from .inputs import feature_groups
from .run import standardisation


@dataclass(frozen=True)
class Candidate:
    """One setting of the portfolio: a ``name`` for the progress output and ``cv_results_``,
    the estimator ``params`` it sets, the training rows it is tried at (``min_rows <= N < max_rows``;
    batch methods cost O(N) memory and time per step; exact EP at most ``max_factors`` pair factors)
    and the settings its own leave-one-out chooses in each fit (``loo_grid``)."""

    name: str
    params: dict = field(default_factory=dict)
    min_rows: int = 0
    max_rows: int | None = None
    max_factors: int | None = None
    #: ``method_params`` its fit chooses between on the rows it is fitted on, by the fitted model's
    #: own leave-one-out predictive (:func:`fit_candidate`): name -> values, every combination tried
    loo_grid: dict = field(default_factory=dict)

    def suits(self, n_rows: int, n_classes: int = 2) -> bool:
        """Whether the candidate runs on ``n_rows`` training rows of ``n_classes`` classes: its row
        window, and at most ``max_factors`` pair factors N (C - 1) (exact EP's cost grows as their
        cube)."""
        return (n_rows >= self.min_rows and (self.max_rows is None or n_rows < self.max_rows)
                and (self.max_factors is None or n_rows * (n_classes - 1) <= self.max_factors))


_MINI_BATCHES = {"batch_size": 128, "inducing_init": "kmeans", "early_stopping": True}
#: the closed form's settings that validation chooses between: the Dirichlet prior count at a tenth of
#: the transformed labels' noise (its kernel held at the shared Dirichlet start; issue 73's study: the
#: other four points of issue 67's grid, alpha_eps 1e-2 and the paper's noise, were the best candidate
#: on none of 16 sets)
DIRICHLET_GRID = {"alpha_eps": (1e-3, 1e-4), "noise_scale": (0.1,)}
#: below :data:`CV_ROWS` rows (the closed form exact, each point one factorisation at the fit's kernel
#: start) the closed form is one candidate that chooses its point of this grid in each fit by its
#: own leave-one-out on the fit's rows (issue 79: on real tables the larger alpha_eps and noise_scale
#: were the closed form's best where the two points above scored worse than the class frequencies)
LOO_DIRICHLET_GRID = {"alpha_eps": (1e-4, 1e-3, 1e-2, 1e-1), "noise_scale": (0.1, 1.0)}
#: the EP family runs below this many rows and from :data:`CV_ROWS` on (``sep``), not in between, where
#: the closed form won on every set of the study (digits, banknote) by a wide margin
EP_BELOW = 1_000
#: exact EP (issue 73) runs where its pair factors N (C - 1) are at most this many (a sweep costs
#: their cube: about a second on 1,000 of them on one thread; Vehicle's 1,776 took 65 s for 3 folds)
EXACT_EP_FACTORS = 1_000


def _closed_form(alpha_eps: float, noise_scale: float) -> Candidate:
    return Candidate(f"dirichlet(alpha_eps={alpha_eps:g}, noise_scale={noise_scale:g})",
                     {"method": "dirichlet", "kernel_init": "dirichlet",
                      "method_params": {"alpha_eps": alpha_eps, "noise_scale": noise_scale}}, min_rows=CV_ROWS)


#: the closed form below :data:`CV_ROWS` rows, its point chosen in each fit by its leave-one-out
CLOSED_FORM_BY_LOO = Candidate("dirichlet(alpha_eps, noise_scale by leave-one-out)",
                               {"method": "dirichlet", "kernel_init": "dirichlet"}, max_rows=CV_ROWS,
                               loo_grid=LOO_DIRICHLET_GRID)


def _exact(method: str, lengthscales: str) -> Candidate:
    return Candidate(f"{method}(lengthscales={lengthscales})",
                     {"method": method, "kernel_init": "exact_ep", "method_params": {"lengthscales": lengthscales}},
                     max_factors=EXACT_EP_FACTORS)


#: the class frequencies, scored like every candidate and kept where nothing beats them
FREQUENCIES = Candidate("class_frequencies", {"method": "class_frequencies"})
#: the candidates, cheapest first, each a plan that names its kernel start: the closed form (below
#: CV_ROWS rows one candidate choosing its point of LOO_DIRICHLET_GRID by its leave-one-out in each
#: fit, issue 79; from there on two points of DIRICHLET_GRID; the same from the RBF-and-linear start
#: as a second candidate won one development table and lost two sets, benchmarks/docs/defaults.md),
#: exact EP and exact power EP (alpha = 0.5) with one lengthscale, each its own kernel search (exact
#: power EP with one lengthscale per table column in place of exact EP lost on both panels, issue 79:
#: benchmarks/docs/defaults.md, "Kernels per table"), stochastic EP from the regression of the labels
#: in its row windows, and the class frequencies. Issue 73's study (16 sets, validation rows only; BENCHMARKS.md, "The gold standard in
#: seconds"): of its 13 candidates (issue 67's portfolio, exact EP with one lengthscale and with ARD,
#: exact power EP, the frequencies), the cheapest sub-portfolio whose choice came within 1 % of the best
#: candidate's held-out NLL (geometric mean over the sets)
PORTFOLIO: tuple[Candidate, ...] = (
    CLOSED_FORM_BY_LOO,
    *(_closed_form(eps, scale) for eps in DIRICHLET_GRID["alpha_eps"] for scale in DIRICHLET_GRID["noise_scale"]),
    _exact("exact_ep", "one"),
    _exact("exact_pep", "one"),
    Candidate("sep", {"method": "sep", **_MINI_BATCHES, "kernel_init": "regression"}, max_rows=EP_BELOW),
    Candidate("sep", {"method": "sep", **_MINI_BATCHES, "kernel_init": "regression"}, min_rows=2_000),
    FREQUENCIES,
)
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


def explicit_parameters(params: dict, defaults: dict) -> dict:
    """The parameters ``params`` (an estimator's ``get_params()``) the user set to other values than
    the ``defaults`` (its class's)."""
    return {k: v for k, v in params.items() if not _same(v, defaults.get(k))}


@dataclass(frozen=True)
class Selector:
    """What a selection reads of the estimator that asks for it (issue 79: :func:`select` takes
    values, not the estimator): its parameters (``get_params()``), those the user set to other
    values than the defaults (``explicit``), the table column of each feature (``groups``, what a
    kernel term is bound to), and ``fit``: the fit of one candidate's parameters,
    ``(params, X, y_idx, classes, weight, callbacks, start, max_time, own) -> FitResult``
    (:meth:`~alphagp.GPClassifier._fit_result`)."""

    params: dict
    explicit: dict
    groups: np.ndarray
    fit: Callable

    @property
    def name(self) -> str:
        """What the progress lines call the selection: ``method='auto'``, ``alpha='auto'`` or both."""
        return ", ".join(f"{k}='auto'" for k in ("method", "alpha") if self.params.get(k) == "auto")


def selector_of(estimator, n_features: int) -> Selector:
    """The :class:`Selector` of ``estimator`` for rows of ``n_features`` features."""
    def fit(params, X, y_idx, classes, weight, callbacks, start, max_time, own):
        return estimator._fit_result(params, X, y_idx, classes, weight, callbacks, start=start, max_time=max_time,
                                     own=own)
    params = estimator.get_params()
    return Selector(params, explicit_parameters(params, type(estimator)().get_params()),
                    feature_groups(getattr(estimator, "table_encoding_", None), n_features), fit)


def candidates_for(selector: Selector, n_rows: int, portfolio=None, weighted: bool = False,
                   n_classes: int = 2) -> list[tuple[Candidate, dict]]:
    """``[(candidate, params)]``: the candidates that suit ``n_rows`` training rows of ``n_classes`` classes and the user's
    explicit settings (``weighted``: sample weights, which only some methods take), each with the
    estimator parameters it is fitted with (its own values where the user kept the default).

    The candidates are ``portfolio``'s (default: :data:`PORTFOLIO` with ``method="auto"``, else the
    one method the user named); with ``alpha="auto"`` each one whose method takes a free alpha
    becomes one candidate per value of the alpha grid (:func:`alpha_grid`), named
    ``"<candidate>(alpha=<value>)"``, and the others are left out: the alpha grid is scored, raced
    and budgeted like any other candidates."""
    explicit, method = selector.explicit, selector.params["method"]
    if portfolio is None:
        portfolio = PORTFOLIO if method == "auto" else (Candidate(method, {"method": method}),)
    auto_alpha = explicit.get("alpha") == "auto"
    if auto_alpha and method != "auto" and not free_alpha(method):
        resolve_alpha(method, 0.5)                               # the method's reason, as a ValueError
    chosen = []
    mini = isinstance(explicit.get("batch_size"), int) and uses_mini_batches(explicit["batch_size"], n_rows)
    given = {k: explicit[k] for k in _METHOD_ARGUMENTS if k in explicit and not (k == "alpha" and auto_alpha)}
    for candidate in portfolio:
        method = candidate.params["method"]
        capabilities = method_spec(method).cls.CAPABILITIES
        inducing = "n_inducing" in explicit or "inducing_points" in explicit      # not every row: a sparse form
        if (not candidate.suits(n_rows, n_classes) or not takes(method, **given) or (auto_alpha and not free_alpha(method))
                or (mini and not capabilities.mini_batches) or (weighted and not capabilities.sample_weight)
                or (inducing and not capabilities.sparse)):
            continue
        own = {k: v for k, v in candidate.params.items() if k not in explicit}
        params = {**own, "checkpoint": None, "verbose": False}
        if not auto_alpha:
            chosen.append((candidate, params))
            continue
        for a in alpha_grid(selector.params["alpha_grid"]):
            chosen.append((replace(candidate, name=f"{candidate.name}(alpha={a:g})",
                                   params={**candidate.params, "alpha": a}), {**params, "alpha": a}))
    return chosen


def alpha_grid(given) -> list[float]:
    """The values ``alpha="auto"`` chooses from: the ``alpha_grid`` parameter ``given``, or
    :data:`DEFAULT_ALPHA_GRID` where it is ``None``; a ``ValueError`` for an empty grid or a value
    outside (0, 1]."""
    grid = [float(a) for a in (DEFAULT_ALPHA_GRID if given is None else given)]
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
    scored fit is the final one (one split), its :class:`~.run.FitResult`, the candidates' shared
    kernel starts by surrogate (empty: none was fitted) and every candidate scored (in
    ``cv_results_``'s order: a final fit that fails falls back on the next by rank)."""

    candidate: Candidate
    params: dict
    cv_results: dict
    held_out: HeldOutScheme
    fitted: object | None = None
    kernel_starts: dict = field(default_factory=dict)
    candidates: tuple = ()

    @property
    def scheme(self) -> str:
        """The held-out scheme's name (``selection_scheme_``)."""
        return self.held_out.name


def shared_kernel_starts(selector: Selector, X, y_idx: np.ndarray, surrogates, weight=None,
                         max_seconds: float | None = None) -> dict[str, KernelStart]:
    """The kernel starts of the candidates, one per surrogate of ``surrogates`` (module
    docstring), for rows ``X`` ``[N, D]`` with class indices ``y_idx`` and weights ``weight`` ``[N]``
    (or ``None``), standardised as a fit would, each fitted with the surrogate's default settings
    (:attr:`~alphagp.kernel_start.StartSpec.settings` at no ``method_params``); none where the ``kernel_params``
    give the lengthscales already. With ``max_seconds``, the searches share it. A search that fails
    numerically is left out: each candidate that starts from it then searches its own start in its
    fit, where a failure is that candidate's alone. The user's kernel term (``kernel``) is the one
    the starts search."""
    params = selector.params
    if "lengthscale" in (params["kernel_params"] or {}) or not surrogates:
        return {}
    Xs = standardisation(X, params["standardize"], weight)     # read lazily: only the sampled rows
    share = None if max_seconds is None else max_seconds / len(surrogates)
    term = {} if isinstance(params["kernel"], str) else {"term": params["kernel"].bound(selector.groups)}
    starts = {}
    for surrogate in sorted(surrogates):
        try:
            starts[surrogate] = fit_kernel_start(Xs, y_idx, int(y_idx.max()) + 1, surrogate=surrogate, weight=weight,
                                                 rng=np.random.default_rng(params["random_state"]), max_seconds=share,
                                                 **STARTS[surrogate].settings({}, None), **term)
        except _NUMERICAL_FAILURES:
            continue
    return starts


def class_frequency_nll(y_idx: np.ndarray, held_out: list[Fold]) -> float:
    """The held-out NLL of the model that predicts every row's class by the training class
    frequencies (weighted, each count plus one half so no class gets probability 0: the
    ``class_frequencies`` method's), averaged over the folds ``held_out`` as the candidates'
    scores are: the bar a classifier must clear to say anything about its features."""
    C = int(y_idx.max()) + 1
    scores = []
    for fold in held_out:
        counts = np.bincount(y_idx[fold.train], weights=fold.train_weight, minlength=C) + PRIOR_COUNT
        proba = np.broadcast_to(counts / counts.sum(), (len(fold.test), C))
        scores.append(negative_log_likelihood(proba, y_idx[fold.test], fold.test_weight))
    return float(np.mean(scores))


def select(selector: Selector, X, y, y_idx, *, portfolio=None, keep_split_fit: bool = True,
           clock=None, weight=None, race: bool = True) -> Selection:
    """Score the candidates (module docstring) of ``selector`` (the estimator's values and its fit,
    :func:`selector_of`) on ``X`` ``[N, D]`` with labels ``y`` ``[N]`` (class indices ``y_idx``) by
    the held-out scheme of :func:`~.held_out_schemes.scheme_for` and return the :class:`Selection`.
    No row outside ``X`` is read. ``keep_split_fit``: on one split, the winner's fit will be kept as
    the final one, so the budget holds no share for a final fit there. ``weight`` ``[N]`` (sample
    times class weights): every fit takes its rows' weights and every held-out score is their
    weighted mean NLL. ``race=False`` scores every candidate on every fold (the studies that choose
    the portfolio). ``clock``: the time source of the budget (default ``time.perf_counter``; tests
    pass a fake one)."""
    clock = clock or time.perf_counter
    given, name = selector.params, selector.name
    n = len(y)
    seed = int(np.random.default_rng(given["random_state"]).integers(2**31 - 1))
    choices = candidates_for(selector, n, portfolio, weighted=weight is not None, n_classes=int(y_idx.max()) + 1)
    if not choices:
        raise ValueError(f"{name} found no candidate method that takes the settings given "
                         f"(alpha={given['alpha']!r}, epsilon={given['epsilon']!r}, damping={given['damping']!r}); "
                         "choose a method")
    scheme = scheme_for(y_idx, given["cv"], given["validation_fraction"], seed, weight)
    folds = scheme.folds
    began, budget = clock(), given["max_time"]
    if X.shape[1] > START_FEATURES:       # wider data: the candidates' own regression starts become fixed ones
        choices = [(c, {**p, "kernel_init": "fixed"} if p.get("kernel_init") == "regression" else p) for c, p in choices]
    if not folds:
        candidate, params = choices[0]
        params = _feasible({**params, "random_state": seed}, y_idx, given["validation_fraction"])
        return Selection(candidate, params, _results([candidate], [params], [[]], [[]]), scheme)
    surrogates = {kernel_start_of({**given, **params}) for _, params in choices} & SHARED_STARTS
    limit = None if budget is None else BUDGET_SHARE * budget / len(folds)
    starts: dict[int, dict] = {}

    def starts_of(k: int) -> dict:
        """The shared kernel starts of split ``k``, fitted on its training rows alone (once)."""
        if k not in starts:
            fold = folds[k]
            starts[k] = shared_kernel_starts(selector, X[fold.train], y_idx[fold.train], surrogates,
                                             fold.train_weight, limit)
            if given["verbose"] is True:
                for fitted_start in starts[k].values():
                    print(f"{name}: kernel start of split {k}: {describe_start(fitted_start)}", flush=True)
        return starts[k]

    # verbose="auto": a bar of the candidates' fits once the selection has run AUTO_DELAY seconds
    bar = progress(len(choices) * len(folds), 0, "auto" if given["verbose"] == "auto" else False,
                   desc=f"{name}: candidate fits")
    for k in range(len(folds)):           # one-time costs first, so the budget's shares are the fits' alone
        starts_of(k)
    classes = encode_labels(y)[0]
    if isinstance(given["n_inducing"], int) and given["n_inducing"] > n:     # said once, of the rows given
        warnings.warn(f"n_inducing={given['n_inducing']} is larger than the {n} training rows; the candidates "
                      "use at most the rows they fit on", UserWarning, stacklevel=4)
    count = len(choices)
    scores: list[list[float]] = [[] for _ in range(count)]
    seconds: list[list[float]] = [[] for _ in range(count)]
    fitted: list = [None] * count
    failures, failed, dropped = {}, set(), {}          # failures: candidate -> why; dropped: -> the one ahead
    chosen: list[list[dict]] = [[] for _ in range(count)]     # a loo_grid's point in each fold
    fits_left = count * len(folds) + (not scheme.keeps_fit or not keep_split_fit)
    # fold by fold, every candidate still in the race in each round, all with the round's share of the
    # budget (a candidate-major order gave the first candidate the others' time its overruns took)
    racing = race and scheme.races and min(len(f.test) for f in folds) >= RACE_ROWS
    for k, fold in enumerate(folds):
        live = [i for i in range(count) if i not in failed and i not in dropped and len(scores[i]) == k]
        share = None if budget is None else max(budget - (clock() - began), 0.0) / max(fits_left, 1)
        for i in live:
            candidate, params = choices[i]
            fits_left -= 1
            if share is not None and (share <= 0.0 or clock() - began >= budget):
                continue                   # the budget is spent: left unscored on this fold and the next
            params = scheme.fit_params({**params, "random_state": seed})
            rows, rows_weight = scheme.fit_rows(fold, weight)
            fit_params = {**given, **_feasible(params, y_idx[rows], given["validation_fraction"])}
            t0 = clock()
            try:
                with _clip_said():
                    result = fit_candidate(selector, candidate, fit_params, X[rows], y_idx[rows], classes,
                                           rows_weight, start=starts_of(k), max_time=share)
            except _NUMERICAL_FAILURES as err:       # a candidate that fails numerically is left out, said
                failures[i] = f"{type(err).__name__}: {err}"
                scores[i], fitted[i], result = [], None, None
                failed.add(i)
            finally:
                seconds[i].append(clock() - t0)
                bar.update(1)
            if result is None:
                fits_left -= len(folds) - k - 1
                continue
            point = {key: value for key, value in (getattr(result.plan, "method_params", None) or {}).items()
                     if key in candidate.loo_grid}
            if point:
                chosen[i].append(point)
            scores[i].append(scheme.score(result, fold, X, y_idx, len(classes), given["n_jobs"]))
            if scheme.keeps_fit:
                fitted[i] = result
        complete = [i for i in live if len(scores[i]) == k + 1]
        if racing and k + 1 < len(folds) and complete:
            ahead = min(complete, key=lambda i: np.mean(scores[i]))
            for i in complete:
                if behind(scores[i], scores[ahead]):
                    dropped[i] = ahead
                    fits_left -= len(folds) - k - 1
        if given["verbose"] is True and len(folds) > 1:       # progress as it runs: the folds left at this fold's pace
            going = [i for i in complete if i not in dropped]
            print(f"{name}: fold {k + 1} of {len(folds)}: {len(complete)} candidate(s) scored in "
                  f"{sum(seconds[i][-1] for i in live if len(seconds[i]) > k):.1f} s, {len(going)} still in the race; "
                  f"about {(len(folds) - k - 1) * sum(seconds[i][-1] for i in going):.0f} s of folds left", flush=True)
    if given["verbose"] is True:
        for i, (candidate, _) in enumerate(choices):
            own = scores[i]
            mean = f"{np.mean(own):.4f}" if own else (f"failed ({failures[i]})" if i in failed
                                                      else "not scored (budget spent)")
            note = ""
            if i in dropped:
                note = (f", dropped: its held-out NLL on its first {len(own)} of {len(folds)} folds is more "
                        f"than {RACE_MARGIN:.0%} above that of {choices[dropped[i]][0].name} on the same folds")
            print(f"{name}: {candidate.name}: held-out NLL {mean} "
                  f"({scheme.scored_on(len(own))}, {sum(seconds[i]):.1f} s{note})", flush=True)
    bar.close()
    if not any(scores) and not failures:
        raise ValueError(f"{name}: max_time={budget!r} s was spent before any candidate could be scored; "
                         "give it more time, or name a method")
    if not any(scores):
        raise FloatingPointError(f"{name}: every candidate failed numerically: "
                                 + "; ".join(f"{choices[i][0].name}: {why}" for i, why in failures.items()))
    # a candidate's params name its start (kernel_init), which a fit on other rows fits on them
    results = _results([c for c, _ in choices], [{**p, "random_state": seed} for _, p in choices], scores, seconds,
                       failures=[failures.get(i) for i in range(count)])
    results["loo_choices"] = [points if choices[i][0].loo_grid else None for i, points in enumerate(chosen)]
    best = results["rank_test_nll"].index(1)
    frequencies = class_frequency_nll(y_idx, folds)
    if given["verbose"] is True:
        print(f"{name}: the training class frequencies: held-out NLL {frequencies:.4f}", flush=True)
    _warn_if_no_better_than_frequencies(name, choices, results, best, frequencies)
    candidate, params = choices[best]
    params = scheme.fit_params({**params, "random_state": seed})
    candidate, params = settled(candidate, params, chosen[best])
    return Selection(candidate, _feasible(params, y_idx, given["validation_fraction"]), results, scheme,
                     fitted[best], starts.get(0, {}), tuple(c for c, _ in choices))


#: what a candidate's fit may raise on some rows and not on others (a failed factorisation, a
#: non-finite objective, a refusal of the rows it was given, an error of PyTorch or of memory): the selection
#: records it and goes on
_NUMERICAL_FAILURES = (ArithmeticError, CholeskyError, torch.linalg.LinAlgError, ValueError, RuntimeError, MemoryError)
#: racing needs held-out folds of at least this many rows: on smaller ones a fold's NLL is too noisy
#: to drop a candidate on (issue 79: an 84-row table, folds of 19 rows, dropped every model)
RACE_ROWS = 200


def fit_candidate(selector: Selector, candidate: Candidate, params: dict, X, y_idx: np.ndarray, classes, weight=None, *,
                  callbacks=None, start: dict | None = None, max_time: float | None = None, own: bool = False):
    """The :class:`~.run.FitResult` of ``candidate`` with the estimator parameters ``params`` on rows
    ``X`` ``[n, D]`` (class indices ``y_idx`` of ``classes``, weights ``weight`` ``[n]`` or ``None``),
    from the kernel starts ``start`` within ``max_time`` (shared by its fits). A candidate with a
    :attr:`~Candidate.loo_grid` is fitted at every point of it and the point whose fitted model
    predicts these rows best by its own leave-one-out (:meth:`~alphagp.methods.SparseGPMethod.leave_one_out`:
    the closed form's, for every row from one factorisation) is kept; a point that fails numerically
    is passed over (every point failing raises the last failure), and a model without a leave-one-out
    (a sparse fit) keeps the grid's first point. Only these rows are read: a selection scores the
    result on rows it has not seen. ``own``: the estimator's own fit (the final one: its checkpoint,
    progress and ``callbacks``), not a selection's scored fit; ``selector``'s fit runs it."""
    def fit(point: dict, share):
        with_point = {**params, "method_params": {**(params.get("method_params") or {}), **point}} if point else params
        return selector.fit(with_point, X, y_idx, classes, weight, callbacks, start, share, own)
    points = [dict(zip(candidate.loo_grid, values)) for values in itertools.product(*candidate.loo_grid.values())]
    if not points:
        return fit({}, max_time)
    share = None if max_time is None else max_time / len(points)
    best, best_nll, failure = None, np.inf, None
    for point in points:
        try:
            result = fit(point, share)
        except _NUMERICAL_FAILURES as err:
            failure = err
            continue
        nll = leave_one_out_nll(result)
        if nll is None:                      # no closed-form leave-one-out: the first point that fits
            return result
        if best is None or nll < best_nll:
            best, best_nll = result, nll
    if best is None:
        raise failure
    return best


def leave_one_out_nll(result) -> float | None:
    """The weighted mean NLL of the leave-one-out predictive of the rows a fit's model conditions on
    (:meth:`~alphagp.methods.SparseGPMethod.leave_one_out`; the fit's :class:`~.run.FitResult`), or
    ``None`` where its model gives none."""
    leave_one_out = getattr(result.model, "leave_one_out", None)
    held = None if leave_one_out is None else leave_one_out()
    if held is None:
        return None
    proba, y, weight = (t.detach().cpu().numpy() for t in held)
    return negative_log_likelihood(proba, y, weight)


def settled(candidate: Candidate, params: dict, points: list[dict]) -> tuple[Candidate, dict]:
    """``(candidate, params)`` of a final fit: a candidate with a ``loo_grid`` whose folds chose
    ``points`` takes the point chosen most often (the first of a tie) and no grid; others as they are."""
    if not candidate.loo_grid or not points:
        return candidate, params
    point = max(points, key=points.count)
    return replace(candidate, loo_grid={}), {**params, "method_params": {**(params.get("method_params") or {}), **point}}


def _warn_if_no_better_than_frequencies(name: str, choices, results: dict, best: int, frequencies: float) -> None:
    """The warning where no model of the features beat the class frequencies on the held-out rows:
    where :data:`FREQUENCIES` is a candidate it won (and is kept), else the best candidate did not
    clear that bar (and is kept)."""
    means = results["mean_test_nll"]
    models = [i for i, (c, _) in enumerate(choices) if c is not FREQUENCIES and np.isfinite(means[i])]
    chose_frequencies = choices[best][0] is FREQUENCIES
    if not models and not chose_frequencies:
        return
    if models:
        top = min(models, key=lambda i: means[i])
        if means[top] < frequencies and not chose_frequencies:
            return
        best_model = f"best: {choices[top][0].name}, NLL {means[top]:.4f}"
    else:
        best_model = "no model of the features was scored"
    kept = ("the model predicts the class frequencies (method_='class_frequencies')" if chose_frequencies
            else f"kept {choices[best][0].name}")
    warnings.warn(f"{name}: no candidate's held-out NLL on the training rows was below that of the "
                  f"training class frequencies ({best_model}; the class frequencies: {frequencies:.4f}; "
                  f"cv_results_ has every candidate's); {kept}", UserWarning, stacklevel=5)


def fit_selected(selector: Selector, X, y, y_idx, classes, callbacks, weight=None, clock=None):
    """The fit of an estimator that selects (``method="auto"``, ``alpha="auto"``; its
    :class:`Selector`, :func:`selector_of`): the candidate
    with the best held-out NLL (:func:`select`), fitted on all of ``X`` ``[N, D]``, ``y`` (class
    indices ``y_idx`` of ``classes``; rows weighted by ``weight`` ``[N]``, class weights included,
    where given): the winner's parameters over the user's become the final fit's plan (the user's
    parameters are never changed), or on one split the winner's fit is the final one (unless
    callbacks or a checkpoint ask for a fit of their own, or the winner is a closed form from its
    own start, which is refitted on every row: one start and one step); the final fit gets the
    time ``max_time`` has left. A winner whose folds chose their points of its ``loo_grid`` is
    refitted at the point they chose most often. Where the winner's final fit fails numerically, the next
    candidate by rank is fitted, with a warning. Where no held-out rows exist (a class of one row)
    the first candidate is fitted, with a warning. ``clock``: as :func:`select`'s. Returns ``(result,
    record)``: the final fit's :class:`~.run.FitResult` and the selection's record for
    :func:`.fitted.record_fit` (the candidate's name, the scheme, ``cv_results_``)."""
    clock = clock or time.perf_counter
    start = clock()
    given, name = selector.params, selector.name
    reuse = not callbacks and not given["checkpoint"]
    selection = select(selector, X, y, y_idx, keep_split_fit=reuse, weight=weight, clock=clock)
    if not selection.held_out.folds:
        warnings.warn(f"no held-out rows to choose on (a class has a single row): fitted the first candidate, "
                      f"{selection.candidate.name}, without a selection", UserWarning, stacklevel=4)
    if given["verbose"] is True:
        print(f"{name} chose {selection.candidate.name} ({selection.scheme}): "      # as it runs
              + ", ".join(f"{k}={selection.params.get(k, v)!r}" for k, v in selection.candidate.params.items()),
              flush=True)
    params = {**given, **selection.params}
    one_step = is_own_start(params)       # a closed form from its own start: refitted on every row in one step
    if selection.fitted is not None and reuse and not one_step:
        return selection.fitted, (selection.candidate.name, selection.scheme, selection.cv_results)
    if one_step:                                             # every row, none held out to stop on
        params = selection.held_out.refit_params(params, given)
    results, candidate = selection.cv_results, selection.candidate
    runners_up = [i for i in np.argsort(results["rank_test_nll"]) if np.isfinite(results["mean_test_nll"][i])
                  and results["candidate"][i] != candidate.name]
    while True:
        try:
            return (_final_fit(selector, candidate, params, X, y_idx, classes, callbacks, weight, clock, start),
                    (candidate.name, selection.scheme, results))
        except _NUMERICAL_FAILURES as err:        # on every row the winner fails: the next candidate, said
            if not runners_up:
                raise
            i = runners_up.pop(0)
            warnings.warn(f"{name}: the chosen {candidate.name} failed on every training row "
                          f"({type(err).__name__}: {err}); fitted the next candidate, {results['candidate'][i]}",
                          UserWarning, stacklevel=4)
            candidate, params = settled(selection.candidates[i], {**given, **_feasible(
                results["params"][i], y_idx, given["validation_fraction"])}, results["loo_choices"][i] or [])
            if params.get("early_stopping") is True and is_own_start(params):
                params = selection.held_out.refit_params(params, given)


def _final_fit(selector: Selector, candidate: Candidate, params: dict, X, y_idx, classes, callbacks, weight, clock,
               start: float):
    """The final fit of ``candidate`` with ``params`` on every row (:func:`fit_candidate`), with the time
    ``max_time`` has left since ``start`` (``clock``'s) and the shared kernel start fitted again on
    every row with the settings the folds' had: the kernel validated is the kernel kept."""
    budget = selector.params["max_time"]
    remaining = None if budget is None else max(budget - (clock() - start), 1e-6)
    shared = {kernel_start_of(params)} & SHARED_STARTS
    limit = None if remaining is None else BUDGET_SHARE * remaining
    with _clip_said():
        return fit_candidate(selector, candidate, params, X, y_idx, classes, weight, callbacks=callbacks,
                             start=shared_kernel_starts(selector, X, y_idx, shared, weight, limit) or None,
                             max_time=remaining, own=True)


@contextlib.contextmanager
def _clip_said():
    """The fits of a selection without the warning that ``n_inducing`` exceeds their rows: the
    selection says it once, of the rows the user gave (:func:`select`)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="n_inducing=.* is larger than", category=UserWarning)
        yield


def behind(scores: list[float], leader: list[float] | None, margin: float | None = None) -> bool:
    """Racing: whether a candidate whose first folds scored ``scores`` is clearly behind
    ``leader`` (the scores of the round's best candidate on at least those folds; ``None``: none),
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


def _results(candidates, params, scores, seconds, failures=None) -> dict:
    """scikit-learn's ``cv_results_`` shape: one entry per candidate in every list, the NLL of
    each split the most scored candidate reached (``NaN`` where racing dropped the candidate or the
    budget ran out before it), their mean and spread over the splits the candidate was scored on
    (``n_test_splits``; ``NaN`` for a candidate scored on none), why a candidate failed (``failure``: ``None`` where it did not), the mean seconds of a fit
    and the rank (1 = chosen: the lowest mean; candidates scored on some splits rank after those
    scored on all, by their partial mean, and unscored candidates last; the first candidate wins
    when none was scored). :func:`select` adds ``loo_choices``: the points of a candidate's
    ``loo_grid`` its own leave-one-out chose in each fold (``None`` for a candidate without one)."""
    width = max((len(s) for s in scores), default=0)
    table = np.full((len(candidates), width), np.nan)
    for i, s in enumerate(scores):
        table[i, :len(s)] = s
    scored = np.array([len(s) == width and width > 0 for s in scores])
    mean = np.array([np.mean(s) if s else np.nan for s in scores])
    # every fold scored first (by mean), then candidates raced out or out of budget (by their partial
    # mean), then candidates without a score
    key = [(0, m) if ok else (1, m) if s else (2, 0.0) for s, ok, m in zip(scores, scored, mean)]
    order = sorted(range(len(candidates)), key=lambda i: key[i])
    rank = np.empty(len(candidates), dtype=int)
    rank[order] = np.arange(1, len(candidates) + 1)
    results = {"candidate": [c.name for c in candidates], "params": [dict(p) for p in params],
               "mean_test_nll": mean.tolist(),
               "std_test_nll": [float(np.std(s)) if s else float("nan") for s in scores],
               "n_test_splits": [len(s) for s in scores],
               "mean_fit_time": [float(np.mean(s)) if s else float("nan") for s in seconds],
               "rank_test_nll": rank.tolist(),
               "failure": list(failures) if failures is not None else [None] * len(candidates)}
    for k in range(width):
        results[f"split{k}_test_nll"] = table[:, k].tolist()
    return results
