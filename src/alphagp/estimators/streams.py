"""GPClassifier's streams (``partial_fit``): the first call plans a stream and builds the model
from its rows; every call then takes one Adam step per batch of its rows, the data terms scaled
to the stream's N, and keeps the optimiser's state and the stream's running count of rows and
weight on the estimator (and in its model file), so that a saved and loaded model streams on.

N is ``n_rows`` where the first call gives it, else the rows the calls have brought so far (a
stream need not know its length in advance; give ``n_rows`` when the calls pass over the same
rows more than once). Rows may be weighted (``sample_weight`` times a ``class_weight`` dict): a
weight raises a row's likelihood to its power, and the counts the methods' tied factors take
(sum_i w_i) are the stream's running total of weight, or, with ``n_rows``, that total's mean per
row times ``n_rows``."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ..data.streaming import StandardizedRows
from ..labels import encode_known_labels
from ..methods import METHODS, method_spec
from ..threads import torch_threads
from ..training import Trainer
from . import fitted, inputs, model_selection
from .checks import check_model_size, check_parameters
from .classifier_family import ClassifierContext
from .fit_plan import AUTO_INDUCING, DEFAULT_ADAM_LEARNING_RATE, DTYPES, default_learning_rate, plan_fit
from .run import FitResult, diagnostics_of, explain_numerical_failure, standardisation

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


def start(est, X, y, classes, n_rows) -> None:
    """The first call on ``est``: its classes (``classes``, every label the stream will bring), a
    plan of the stream (``method="auto"``: the portfolio's first candidate that streams, SEP),
    the standardisation and the model from the validated rows ``X`` ``[B, D]`` with labels ``y``
    ``[B]``; ``n_rows`` is the stream's N (``None``: the rows the calls bring, module docstring)."""
    classes = est._stream_classes(classes)
    if len(classes) < 2:
        raise ValueError(f"GPClassifier needs at least 2 classes; classes= gives {classes.tolist()}")
    if est.alpha == "auto":
        raise ValueError("alpha='auto' chooses alpha on held-out training rows, which a stream does not give "
                         "before it starts; give partial_fit a value of alpha (or None, the method's default)")
    if n_rows is not None and (not isinstance(n_rows, (int, np.integer)) or isinstance(n_rows, bool)
                               or n_rows < len(y)):
        raise ValueError(f"n_rows must be an integer at least the first call's {len(y)} rows, got {n_rows!r}")
    y_idx = encode_known_labels(y, classes)
    params = est.get_params()
    if est.method == "auto":
        candidate = next(c for c in model_selection.PORTFOLIO if streams_with(c.params["method"]))
        explicit = model_selection.explicit_parameters(est)
        params.update({k: v for k, v in candidate.params.items() if k not in explicit})
    check_parameters(est, X.shape[1], len(classes))
    plan = plan_fit(params, y_idx, alpha=est.alpha, stream=True, n_rows=None if n_rows is None else int(n_rows),
                    feature_groups=inputs.feature_groups(est, X.shape[1]))
    check_model_size(plan, len(y), X.shape[1], len(classes))     # a call's rows are in memory
    if plan.optimizer == "adam" and plan.learning_rate > _RATE_WARNING * DEFAULT_ADAM_LEARNING_RATE:
        warnings.warn(f"a stream takes one Adam step per batch, and learning_rate={plan.learning_rate:g} is "
                      f"{plan.learning_rate / DEFAULT_ADAM_LEARNING_RATE:.0f} times Adam's default "
                      f"({DEFAULT_ADAM_LEARNING_RATE:g}): a few such steps can throw the model far from what its rows "
                      "say (issue 69's fuzz: two-call streams below the majority grade's accuracy); use a smaller rate",
                      UserWarning, stacklevel=4)
    with torch_threads(est.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
        Xs = standardisation(X, plan.standardize)
        model, made = type(est).FAMILY.build(plan, X, Xs, y_idx, None, np.random.default_rng(plan.random_state),
                                             ClassifierContext(len(classes), est.inducing_points,
                                                               verbose=est.verbose is True))
    fitted.record_fit(est, FitResult(plan, Xs.mean, Xs.scale, model, [], 0, made={"classes": classes, **made}))
    _warn_of_a_narrow_first_call(est, plan, y_idx)
    _warn_if_n_rows_is_unused(est, n_rows)


def _warn_of_a_narrow_first_call(est, plan, y_idx: np.ndarray) -> None:
    """Warn where the stream's first call (class indices ``y_idx`` ``[B]``) fixes less than the stream
    needs: its inducing inputs' count, clipped by ``n_inducing="auto"`` to fewer than
    :data:`~alphagp.estimators.fit_plan.AUTO_INDUCING` rows, and, for a closed-form method (whose
    kernel and inducing inputs the first call sets for good), classes it holds no row of."""
    said = []
    if (est.n_inducing == "auto" and est.inducing_points is None and plan.n_inducing == len(y_idx)
            and plan.n_inducing < AUTO_INDUCING):
        said.append(f"its M = {plan.n_inducing} inducing inputs are its first call's {len(y_idx)} rows, for the "
                    f"whole stream")
    present = set(y_idx.tolist())
    missing = [est.classes_[k].item() for k in range(len(est.classes_)) if k not in present]
    if est.model_.capabilities.closed_form and missing:
        said.append(f"its kernel and inducing inputs are learnt from its first call alone and kept, which holds no "
                    f"row of class(es) {missing}")
    if said:
        warnings.warn(f"a {est.method_!r} stream: " + "; ".join(said) + f". Give a first call with rows of every "
                      f"class and at least {AUTO_INDUCING} rows (or a method that keeps learning its kernel and "
                      "inducing inputs on later calls, such as 'sep')", UserWarning, stacklevel=4)


def _cannot_continue(est) -> str:
    """Why the fitted model of ``est`` cannot take a stream's rows, and what to do instead."""
    N = est.fit_plan_.n_data
    if est.fit_plan_.exact:
        return (f"the fitted model is the exact posterior of its {N} training rows (method_={est.method_!r}), which "
                "partial_fit cannot extend: fit again on the old and new rows together, or fit with fewer inducing "
                f"points than rows (n_inducing) for a sparse model that partial_fit extends")
    names = [name for name in streaming_methods() if name != est.method_ and name in est.methods_taken()]
    return (f"the fitted method {est.method_!r} fits in batch and cannot continue on a stream: fit again on the old "
            f"and new rows together, or fit one of the methods that stream ({', '.join(names)})")


def _warn_if_n_rows_is_unused(est, n_rows) -> None:
    """A closed-form stream sums its rows and has no N to scale by: ``n_rows`` changes nothing there."""
    if n_rows is not None and est.model_.capabilities.closed_form:
        warnings.warn(f"n_rows={n_rows} changes nothing in a {est.method_!r} stream: its posterior sums the rows its "
                      "calls bring, whatever their total", UserWarning, stacklevel=4)


def weights(est, sample_weight, X, y, classes) -> np.ndarray | None:
    """A call's row weights ``[B]`` (``sample_weight`` times a ``class_weight`` dict over
    ``classes``, every label of the stream), or ``None``; checked before the call changes
    anything. ``class_weight="balanced"`` is refused: it needs all labels at once."""
    if est.class_weight == "balanced":
        raise ValueError("class_weight='balanced' weighs classes by their counts in all the training rows, which a "
                         "stream gives a call at a time; give class_weight a dict (sklearn.utils.class_weight."
                         "compute_class_weight('balanced', classes=..., y=...) makes one from labels at hand)")
    return inputs.fit_weights(est, sample_weight, X, y, classes=classes)


def step(est, X, y, weight=None) -> None:
    """One call's steps on the validated rows ``X`` ``[B, D]`` with labels ``y`` ``[B]`` and
    weights ``weight`` ``[B]`` (:func:`weights`; or ``None``): Adam on batches of the
    plan's size (the whole call as one batch without one), from the plan's rate where the plan
    stepped with Adam (else Adam's default), continuing the optimiser's state; N and the total
    weight as the module docstring says."""
    if not est.model_.capabilities.streaming:
        raise ValueError(_cannot_continue(est))
    plan, model = est.fit_plan_, est.model_
    y_idx = est._encode(y)                         # a label outside classes_: refused before anything changes
    rows, total = getattr(est, "_stream_seen", None) or (0, 0.0)
    rows, total = rows + len(y), total + (len(y) if weight is None else float(weight.sum()))
    if model.capabilities.closed_form:
        _absorb(est, X, y_idx, weight, (rows, total))
        return
    if plan.n_data_grows:
        model.n_data = rows
    points = model.n_data
    if weight is None and total != rows:          # unweighted rows of a stream that has seen weights
        weight = np.ones(len(y))
    if weight is not None:
        model.set_sample_weight(torch.as_tensor(weight, dtype=DTYPES[plan.dtype], device=torch.device(plan.device)),
                                total=total if plan.n_data_grows else points * total / rows)
    rate = plan.learning_rate if plan.optimizer == "adam" else default_learning_rate("adam")
    try:
        trainer = Trainer(model, batch_size=plan.batch_size, optimizer="adam", learning_rate=rate,
                          n_points=model.n_weighted)
        if getattr(est, "_stream_optimizer", None) is not None:
            trainer.optimizer.load_state_dict(est._stream_optimizer)
        with torch_threads(est.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
            state = trainer.partial_fit(StandardizedRows(X, est.mean_, est.scale_), y_idx, points)
    finally:
        model.set_sample_weight(None)      # the weights belong to this call
    fitted.record_stream_call(est, state.history[-1], (rows, total), diagnostics_of(model),
                              trainer.optimizer.state_dict())


def _absorb(est, X, y_idx, weight, seen) -> None:
    """A closed-form method's call (``Capabilities.closed_form``): the rows join its sums
    (``model.absorb``), no optimiser step; the kernel and inducing inputs stay as the stream's first
    call set them."""
    plan, model = est.fit_plan_, est.model_
    if plan.n_data_grows:
        model.n_data = seen[0]
    dtype, device = DTYPES[plan.dtype], torch.device(plan.device)
    with torch_threads(est.n_jobs), explain_numerical_failure(plan.dtype, plan.standardize):
        Xs = torch.as_tensor(StandardizedRows(X, est.mean_, est.scale_)[np.arange(len(y_idx))], dtype=dtype,
                             device=device)
        model.absorb(Xs, torch.as_tensor(y_idx, device=device),
                     None if weight is None else torch.as_tensor(weight, dtype=dtype, device=device))
    fitted.record_stream_call(est, {"rows": len(y_idx), "train_seconds": 0.0}, seen, diagnostics_of(model), None)
