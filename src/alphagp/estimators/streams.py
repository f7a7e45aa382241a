"""GPClassifier's streams (``partial_fit``), as values: which methods stream, the plan of a stream
from its first call, the refusals and warnings of its calls. A call itself runs through
:func:`.run.run` with the stream's state (:class:`~.run.Stream`), the same stages as ``fit``: the
first call standardises and builds from its rows; every call then takes one Adam step per batch of
its rows, the data terms scaled to the stream's N, or, for a closed form, adds its rows to the
sums; the estimator keeps the stream's state (the optimiser's and its running count of rows and
weight) and its model file too, so that a saved and loaded model streams on.

N is ``n_rows`` where the first call gives it, else the rows the calls have brought so far (a
stream need not know its length in advance; give ``n_rows`` when the calls pass over the same
rows more than once). Rows may be weighted (``sample_weight`` times a ``class_weight`` dict): a
weight raises a row's likelihood to its power, and the counts the methods' tied factors take
(sum_i w_i) are the stream's running total of weight, or, with ``n_rows``, that total's mean per
row times ``n_rows``."""

from __future__ import annotations

import warnings

import numpy as np

from ..methods import METHODS, method_spec
from . import model_selection
from .checks import check_model_size, check_parameters
from .fit_plan import AUTO_INDUCING, DEFAULT_ADAM_LEARNING_RATE, plan_fit

#: a stream's Adam rate above this many times Adam's default warns (its steps are few and unchecked)
_RATE_WARNING = 10


def streams_with(method: str) -> bool:
    """Whether method ``method`` can take a stream's rows (its ``Capabilities.streaming``; ``"auto"``:
    the portfolio has a candidate that can): the one answer to "does it stream?" (``partial_fit``'s
    availability, the stream's candidate, the refusal's list). A fitted model's own answer can
    be narrower (an exact Dirichlet GP's: its ``capabilities``)."""
    if method == "auto":
        return any(streams_with(c.params["method"]) for c in model_selection.PORTFOLIO)
    try:
        return method_spec(method).cls.CAPABILITIES.streaming
    except ValueError:
        return False                                    # an unknown name: fit says so


def streaming_methods() -> list[str]:
    """The registered methods that stream (:func:`streams_with`)."""
    return [name for name in METHODS if streams_with(name)]


def stream_plan(params: dict, explicit: dict, y_idx: np.ndarray, classes: np.ndarray, n_rows, n_features: int,
                feature_groups) -> object:
    """The :class:`~.fit_plan.FitPlan` of a stream from its first call's class indices ``y_idx``
    ``[B]`` of ``classes`` (every label the stream will bring), the estimator's parameters
    ``params`` (``explicit``: those the user set; ``method="auto"``: the portfolio's first candidate
    that streams, the closed form), ``n_rows`` (the stream's N, or ``None``: the rows the calls
    bring) and the features' count and table columns; checked as a fit's parameters and size are,
    with a warning where an Adam rate far above its default would throw the model far."""
    if len(classes) < 2:
        raise ValueError(f"GPClassifier needs at least 2 classes; classes= gives {classes.tolist()}")
    if params["alpha"] == "auto":
        raise ValueError("alpha='auto' chooses alpha on held-out training rows, which a stream does not give "
                         "before it starts; give partial_fit a value of alpha (or None, the method's default)")
    if n_rows is not None and (not isinstance(n_rows, (int, np.integer)) or isinstance(n_rows, bool)
                               or n_rows < len(y_idx)):
        raise ValueError(f"n_rows must be an integer at least the first call's {len(y_idx)} rows, got {n_rows!r}")
    check_parameters(params, n_features, len(classes))
    if params["method"] == "auto":
        candidate = next(c for c in model_selection.PORTFOLIO if streams_with(c.params["method"]))
        params = {**params, **{k: v for k, v in candidate.params.items() if k not in explicit}}
    plan = plan_fit(params, y_idx, alpha=params["alpha"], stream=True, n_rows=None if n_rows is None else int(n_rows),
                    feature_groups=feature_groups)
    check_model_size(plan, len(y_idx), n_features, len(classes))     # a call's rows are in memory
    if plan.optimizer == "adam" and plan.learning_rate > _RATE_WARNING * DEFAULT_ADAM_LEARNING_RATE:
        warnings.warn(f"a stream takes one Adam step per batch, and learning_rate={plan.learning_rate:g} is "
                      f"{plan.learning_rate / DEFAULT_ADAM_LEARNING_RATE:.0f} times Adam's default "
                      f"({DEFAULT_ADAM_LEARNING_RATE:g}): a few such steps can throw the model far from what its rows "
                      "say (issue 69's fuzz: two-call streams below the majority grade's accuracy); use a smaller rate",
                      UserWarning, stacklevel=4)
    return plan


def refusal(plan, method: str, methods: list[str]) -> str:
    """Why a fitted model of ``plan`` (method ``method``; the estimator takes ``methods``) that does
    not stream (its ``capabilities.streaming``) cannot take a stream's rows, and what to do instead."""
    if plan.exact:
        return (f"the fitted model is the exact posterior of its {plan.n_data} training rows (method_={method!r}), "
                "which partial_fit cannot extend: fit again on the old and new rows together, or fit with fewer "
                "inducing points than rows (n_inducing) for a sparse model that partial_fit extends")
    names = [name for name in streaming_methods() if name != method and name in methods]
    return (f"the fitted method {method!r} fits in batch and cannot continue on a stream: fit again on the old "
            f"and new rows together, or fit one of the methods that stream ({', '.join(names)})")


def warn_of_a_narrow_first_call(plan, model, y_idx: np.ndarray, classes: np.ndarray, n_inducing,
                                inducing_points) -> None:
    """Warn where the stream's first call (class indices ``y_idx`` ``[B]``) fixes less than the stream
    needs: its inducing inputs' count, clipped by ``n_inducing="auto"`` (the parameter; with no
    ``inducing_points``) to fewer than :data:`~alphagp.estimators.fit_plan.AUTO_INDUCING` rows, and,
    for a closed-form ``model`` (whose kernel and inducing inputs the first call sets for good),
    classes it holds no row of."""
    said = []
    if (n_inducing == "auto" and inducing_points is None and plan.n_inducing == len(y_idx)
            and plan.n_inducing < AUTO_INDUCING):
        said.append(f"its M = {plan.n_inducing} inducing inputs are its first call's {len(y_idx)} rows, for the "
                    f"whole stream")
    present = set(y_idx.tolist())
    missing = [classes[k].item() for k in range(len(classes)) if k not in present]
    if model.capabilities.closed_form and missing:
        said.append(f"its kernel and inducing inputs are learnt from its first call alone and kept, which holds no "
                    f"row of class(es) {missing}")
    if said:
        warnings.warn(f"a {plan.method!r} stream: " + "; ".join(said) + f". Give a first call with rows of every "
                      f"class and at least {AUTO_INDUCING} rows (or a method that keeps learning its kernel and "
                      "inducing inputs on later calls, such as 'sep')", UserWarning, stacklevel=4)


def warn_if_n_rows_is_unused(plan, model, n_rows) -> None:
    """A closed-form stream sums its rows and has no N to scale by: ``n_rows`` changes nothing there."""
    if n_rows is not None and model.capabilities.closed_form:
        warnings.warn(f"n_rows={n_rows} changes nothing in a {plan.method!r} stream: its posterior sums the rows its "
                      "calls bring, whatever their total", UserWarning, stacklevel=4)


def balanced_refusal(class_weight) -> None:
    """``class_weight="balanced"`` weighs classes by their counts in all the rows, which a stream
    gives a call at a time: refused."""
    if class_weight == "balanced":
        raise ValueError("class_weight='balanced' weighs classes by their counts in all the training rows, which a "
                         "stream gives a call at a time; give class_weight a dict (sklearn.utils.class_weight."
                         "compute_class_weight('balanced', classes=..., y=...) makes one from labels at hand)")
