"""scikit-learn estimator for sparse multi-class GP classification: every method of the registry."""

from __future__ import annotations

import functools
import types
from dataclasses import replace
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import torch
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils.validation import check_is_fitted

from ..conformal import calibration, conformity_scores, prediction_sets
from ..constraints import Interval, StrOptions
from ..kernel_start import SURROGATES, KernelStart
from ..kernel_terms import Term
from ..labels import encode_known_labels, encode_labels, plain
from ..methods import METHODS, method_bullets
from ..metrics import all_metrics
from ..threads import torch_threads
from . import fitted, inputs, model_file, model_selection, streams
from .base import GPEstimatorBase
from .checks import check_fit_size, check_parameters, check_plan
from .classifier_family import (
    GP_CLASSIFIER,
    ClassifierContext,
    class_probabilities,
    latent_moments,
    warn_if_no_better_than_the_frequencies,
)
from .fit_plan import plan_fit
from .inputs import check_rows_match
from .run import FitResult, Settings, Stream, run

MODEL_KIND = "alphagp.GPClassifier"


def _streams(method: str, taken: list[str], name: str) -> bool:
    """Whether ``partial_fit`` is offered (scikit-learn's ``available_if``) for an estimator (its
    class ``name``, which takes the methods ``taken``) of ``method``: the method streams
    (:func:`.streams.streams_with`); otherwise the ``AttributeError`` (so ``hasattr`` is false) says
    which methods do."""
    if streams.streams_with(method):
        return True
    names = [m for m in streams.streaming_methods() if m in taken]
    raise AttributeError(f"partial_fit is not available for method={method!r}, which fits in batch and cannot "
                         f"continue on a stream; the methods of {name} that stream: {', '.join(names)}"
                         + (" (fit one of them, or method='auto')" if "auto" in taken else ""))


class _when_streaming:
    """``partial_fit``'s descriptor (scikit-learn's ``available_if``, with the reason kept): the
    method where :func:`_streams` allows it, else :func:`_streams`'s ``AttributeError``."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        _streams(obj.method, obj.methods_taken(), type(obj).__name__)
        return types.MethodType(self.fn, obj)


class GPClassifier(ClassifierMixin, GPEstimatorBase):
    """Multi-class Gaussian-process classifier: the Dirichlet-based GP in closed form, EP, power EP,
    and the alpha-divergence family.

    One latent function per class with an ARD squared-exponential kernel (amplitude, one
    lengthscale per feature, additive noise) and M inducing points per class (the closed form:
    every training row while they fit, exactly). The likelihood is the method's: the Dirichlet
    GP's transformed labels with a softmax predictive (``dirichlet``; Milios et al., NeurIPS
    2018), the EP paper's Heaviside likelihood with the product-of-Phi approximation (``ep``,
    ``sep``; Villacampa-Calvo & Hernandez-Lobato, ICML 2017) or the robust-max likelihood with
    labelling-error probability ``epsilon`` (most other methods; alpha paper eq. 2).

    Parameters
    ----------
    method : "auto" or str, one of ``alphagp methods``
        ``"auto"`` (the default) is validated model selection: every candidate of a portfolio is
        scored by its held-out NLL on the training rows, by stratified ``cv``-fold cross-validation
        below 2,000 rows (candidates clearly behind the best after a fold are dropped) and on one
        stratified ``validation_fraction`` split from there on, and the best is fitted on all rows
        (:mod:`~alphagp.estimators.model_selection`). The portfolio puts the closed form first: the
        Dirichlet-based GP classifier (``dirichlet``) at two settings (``alpha_eps`` 1e-3 and 1e-4,
        a tenth of the paper's noise), its kernel learnt by the marginal likelihood on at most
        1,000 rows of each split and shared by both, its inducing points growing with the rows;
        then exact EP and exact power EP (alpha = 0.5) on every row where N (C - 1) is at most
        1,000, each with the kernel that maximises its own evidence; stochastic EP (mini-batches
        of 128, validated early stopping) below 1,000 rows and from 2,000 on, from the
        lengthscales of a regression of the labels; and the class frequencies, kept with a
        warning where nothing beats them. Parameters set explicitly override the candidates'
        values; ``max_time`` bounds the whole selection. ``cv_results_`` and ``candidate_`` say
        what was tried and what won. A registered name fits that method:

        {methods}

        The EP methods (ep, sep, rep, pep, gfitc) refine q by damped closed-form
        updates; apep, arpep, rpapep and the vi methods fit q by gradients (with Adam, in batch
        training too).
    n_inducing : int or "auto"
        Inducing points per class, clipped to the number of training rows with a warning.
        ``"auto"``: 50, or for ``dirichlet`` every training row up to 5,000 (the exact posterior)
        and beyond that every row where the exact posterior's matrices fit in the memory (and,
        with ``max_time``, its time), else a quarter of the rows (at least 1,000) as far as the
        memory and the time allow (the method's ``AUTO_SETTINGS``, ``Capabilities.exact_rows`` and
        ``auto_n_inducing``).
    alpha : float in (0, 1], "auto" or None
        Power of the alpha-divergence; 1 is EP. ``None``: the method's default (1 for ep, sep
        and rep; 0.5 for pep, apep, arpep and rpapep, the alpha paper's recommendation). ``rep``
        and ``gfitc`` accept only 1 and ``vi`` (alpha -> 0) none. ``"auto"``: each value of
        ``alpha_grid`` is a candidate of the same validated selection as ``method="auto"``
        (held-out NLL on ``cv`` stratified folds below 2,000 rows, one split above, racing, one
        ``max_time`` for all), and the best is refitted on all rows (the deep-GP paper's advice);
        with ``method="auto"``, every candidate that takes a free alpha is tried at every value.
        The scores are in ``cv_results_``, the choice in ``alpha_`` and ``candidate_``.
    alpha_grid : array-like or None
        Candidates for ``alpha="auto"`` (default: 0.001, 0.25, 0.5, 0.75, 1).
    cv : int
        Folds of the cross-validation of ``method="auto"`` and ``alpha="auto"``.
    method_params : dict or None
        Further arguments of the method (see ``alphagp methods`` and each method's class), e.g.
        ``{"ep_tol": 1e-4}`` for GFITC.
    epsilon : float in [0, 1) or None
        Labelling-error probability of the robust-max likelihood (``None``: 1e-3, the papers'
        value). ``ep`` and ``sep`` use the Heaviside likelihood and accept none; ``vi`` needs
        epsilon > 0.
    batch_size : int or None
        ``None`` trains on all data at once; an int uses mini-batches of that size and Adam,
        with the ``N / |B|``-scaled gradient.
    max_iter : int
        Epochs (passes over the data; one epoch is one iteration in batch training).
    max_time : float or None
        Seconds this call of ``fit`` may spend (``None``: no limit): the kernel start (at most a
        tenth of it) and the training, which stops where the budget has passed or another step as
        long as the last would pass it (exact EP's sweeps and kernel search likewise; a model its
        search fitted takes no step where less than the search took is left). A budget that
        cannot hold the method's least work (exact EP's sweep over its pair factors) is refused
        before the fit. With early stopping, the best validated state within the budget is
        returned.
    damping : float in (0, 1] or None
        EP damping rho; ``None`` means 0.5 in batch training and 1.0 with mini-batches. Only
        for the EP-type methods.
    learning_rate : float or None
        Initial learning rate; ``None`` means 1.0 for the sign-adaptive rule of batch training
        with the EP methods (it halves the rate on every sign flip; chosen by the final log Z_q
        on five UCI sets among 0.01 to 1.0, see BENCHMARKS.md) and 0.01 for Adam (mini-batches,
        and the methods that fit q by gradients). A larger start is not always safe: the ordinal
        likelihood's cut points move by at most one unit of their own scale per step whatever
        the rate, and a fit whose training objective ends far below its best warns.
    learning_rate_decay : float in (0, 1] or "cosine"
        Mini-batch training: Adam's rate is multiplied by this factor after every epoch; 1 keeps
        it constant. ``"cosine"`` anneals it from ``learning_rate`` to 0 over the run, measured
        at every step as the larger of the share of ``max_iter`` done and the share of
        ``max_time`` spent, so with a time budget a faster step gets more steps at every rate.
        Batch training accepts only 1.
    shared_hyperparameters : bool or "auto"
        One kernel and one set of M inducing inputs for all classes (as GPflow's multi-class
        SVGP): K_uu, its factor and K_uf are computed once per step instead of C times, so a
        step with many features (MNIST) is several times cheaper; q stays one Gaussian per class.
        ``inducing_points`` of shape ``[C, M, D]`` keep one set per class with the shared kernel.
        The exact methods (``exact_ep``, ``exact_pep``, and ``dirichlet`` below its sparse rows)
        have no inducing inputs: every class conditions on the training rows, and ``False`` is a
        kernel of its own for each class over them.
        ``"auto"``: the method's choice (its ``AUTO_SETTINGS``): shared for ``dirichlet`` (one factor
        serves every class), ``exact_ep`` and ``exact_pep`` (their kernel start searches one kernel),
        one per class for the other methods.
    inducing_init : {"random", "kmeans", "kmeans++"}
        Initial inducing inputs: random training points (the papers), the centres of k-means
        (scikit-learn's ``MiniBatchKMeans`` on at most 20,000 random rows; GPflow's recipe), or
        k-means++ seeding (on all rows).
    inducing_points : array ``[M, D]`` or ``[C, M, D]`` or None
        Explicit initial inducing inputs in the units of ``X``.
    kernel : "auto" or a kernel term
        The covariance of the latent functions. ``"auto"``: the papers' RBF with a lengthscale per
        feature, an amplitude and additive noise (:class:`~alphagp.kernels.ARDKernel`; a linear
        term with ``kernel_params["linear"]``). A term of :mod:`alphagp.kernel_terms`:
        ``RBF("one")``, ``RBF("ard")``, ``RBF("columns")`` (one lengthscale per table column: a
        category column's one-hot block shares one), ``Linear()``, and their sums and products
        (``RBF("columns") + Linear()``), with an additive noise. The ``"dirichlet"`` and
        ``"exact_ep"`` starts search its parameters by their model's evidence; the other starts
        leave it at its fixed values (every variance 1, every lengthscale sqrt(D)), learnt by the
        method where ``optimize_hyperparameters``. Model files keep its description.
    kernel_params : dict or None
        Initial ``lengthscale``, ``amplitude``, ``noise`` (scalars or arrays) and ``linear``, the
        variance b of a linear term b x'x' added to the RBF (without it: no linear term).
        Lengthscales refer to standardised features when ``standardize=True``. What is not given
        comes from ``kernel_init``. With a kernel term, only ``noise``.
    kernel_init : {"auto", "fixed", "regression", "dirichlet", "dirichlet_linear", "exact_ep"}
        Where the initial kernel comes from. ``"fixed"``: lengthscales sqrt(D), amplitude 1,
        noise 0.1 (the papers' start). ``"regression"``: the lengthscales that maximise the
        marginal likelihood of an exact GP regression of the centred one-hot labels on at most
        500 random training rows, found by L-BFGS-B in seconds (:mod:`alphagp.kernel_start`),
        amplitude 1, noise 0.1. ``"dirichlet"``: the kernel (lengthscales, amplitude) that
        maximises the marginal likelihood of the Dirichlet-based GP classifier on at most 1,000
        random training rows (the same search); ``"dirichlet_linear"``: the same with a linear
        term in the kernel, its variance searched too (at ``alpha_eps=0.1`` where
        ``method_params`` give none). ``"exact_ep"``: the kernel (one lengthscale, or
        one per feature with ``method_params={"lengthscales": "ard"}``, and the amplitude) that
        maximises exact EP's evidence on every row, its gradient at the EP fixed point
        (:mod:`alphagp.pair_ep`). What a start found is ``kernel_start_``.
        ``"auto"``: the method's own start (``dirichlet`` and ``exact_ep`` start from their own
        models, whose start is then their kernel's type-II maximum likelihood; the others from the
        fixed start);
        ``method="auto"``'s candidates each name the start that measured better for them, unless
        this is set explicitly.
    optimize_hyperparameters : bool
        Learn the kernel hyper-parameters (like scikit-learn's ``optimizer=None`` when this and
        ``optimize_inducing`` are False: only the approximation is fitted).
    optimize_inducing : bool or "auto"
        Learn the inducing inputs. ``"auto"`` learns them except with mini-batches for the
        methods with per-point sites (``ep``, ``rep``, ``pep``), whose stored sites go stale
        when the inducing inputs move between refreshes and then diverge (DESIGN.md,
        "Per-point sites on mini-batches"); ``True`` there learns them anyway, with a warning.
        The choice made is ``optimize_inducing_``.
    standardize : bool
        Scale features to zero mean and unit variance before training.
    early_stopping : "auto" or bool
        Hold out ``validation_fraction`` of the training rows (stratified by class), score the
        model on them after every epoch (mean negative log-likelihood), stop after
        ``n_iter_no_change`` epochs without improvement by more than ``tol`` of the best score,
        and return the state with the best score. ``"auto"``: on from 10,000 training rows
        (scikit-learn's rule for gradient boosting). Off, ``tol`` stops on the training
        objective log Z_q instead (see :class:`~alphagp.training.Trainer`).
    validation_fraction : float in (0, 1)
        The held-out share of the rows for early stopping.
    tol : float or None
        The relative improvement early stopping asks for (``None``: any improvement of the
        validation score; without a validation set, no early stopping).
    n_iter_no_change : int
        Patience of early stopping (epochs).
    checkpoint : str or None
        Checkpoint file (data only: safetensors plus JSON): written during training, and a fit
        started with an existing one resumes from it, with a
        :class:`~alphagp.training.CheckpointResumed` warning naming the epoch.
        Schedule settings (``max_iter``, the learning rate and its decay, ``damping``, ``tol``,
        ``n_iter_no_change``) may differ when resuming; any other setting, or other training
        data, raises :class:`~alphagp.training.CheckpointMismatchError`.
    dtype : {"float64", "float32"}
    n_jobs : int or None
        Threads PyTorch uses inside ``fit`` and ``predict`` (restored afterwards), as in
        scikit-learn: ``None`` means 1, ``-1`` all cores. One thread does not slow down when
        other work runs on the machine; more threads help on an idle machine (BENCHMARKS.md).
    device : str, torch.device or None
        Where the model's tensors live and its arithmetic runs: ``"cpu"`` (``None``), ``"cuda"``,
        ``"cuda:1"``, ... Data are moved there one batch at a time; predictions come back as
        NumPy arrays. A fit resumed from a checkpoint, or a loaded model, may use another device.
    distributed : bool or "rows"
        Training split across the processes of a ``torch.distributed`` group (started with
        ``torchrun --nproc-per-node=2 fit.py``; the group is initialised from torchrun's
        environment if the script has not done so). Every process calls ``fit`` with the same
        data and settings, and every process ends with the same model, equal to a one-process
        fit with the same batch size and seed up to rounding. ``True`` gives each process a
        block of the classes (their kernels, inducing inputs and q: the cubic algebra divides)
        and, where there are more processes than class blocks, a share of every mini-batch's
        rows; ``"rows"`` splits only the rows (each process reads only its share). For ``sep``
        and the gradient-fitted methods (``vi`` without natural gradients, ``arpep``, ``apep``,
        ``rpapep``); :mod:`alphagp.distributed` says what each process holds and exchanges.
    verbose : bool or "auto"
        ``True``: what the fit does as it goes (its plan, the selection's folds and candidates) and
        its progress, a bar on a terminal, a line every few seconds when output goes to a file.
        ``"auto"`` (the default): the progress alone, on standard error, once a fit has run 10 s.
        ``False``: nothing.
    random_state : int or None
    class_weight : dict, "balanced" or None
        Weights of the classes, scikit-learn's semantics: ``{label: weight}`` (a label not in
        ``y`` is an error), ``"balanced"`` (``n_samples / (n_classes * np.bincount(y))``) or
        ``None`` (all 1). They multiply ``fit``'s ``sample_weight``.
    categorical_features : "from_dtype" or None
        ``"from_dtype"`` (the default; scikit-learn's ``HistGradientBoostingClassifier`` spells it
        the same) takes a pandas DataFrame as it comes: string, object, ``category`` and boolean
        columns are one-hot encoded (a category unseen in ``fit`` encodes as all zeros, a missing
        value is a category of its own), and numeric columns with missing values get their mean
        and a 0/1 column marking them (:mod:`alphagp.data.tables`; the encoding is
        ``table_encoding_``, kept in model files as JSON). Arrays, and DataFrames of finite
        numbers only, are used as they are. ``None``: every column must be numeric and finite,
        and a column that is not is an error naming it.

    Attributes
    ----------
    classes_ : array of the class labels.
    n_features_in_ : int
    model_ : the fitted method (a :class:`~alphagp.methods.SparseGPMethod`).
    fit_plan_ : :class:`~alphagp.estimators.fit_plan.FitPlan`, every setting the fit ran with, resolved
        once from the parameters (method, alpha, damping, batches, optimiser and rate, inducing).
    alpha_ : float, the alpha used (``alpha="auto"``: the one chosen by cross-validation).
    history_ : list of per-epoch dicts (objective, train_seconds, validation score, ...).
    cv_results_ : dict (``method="auto"`` only), scikit-learn's shape: one entry per candidate in
        each of ``candidate``, ``params``, ``mean_test_nll`` and ``std_test_nll`` (over the splits
        the candidate was scored on: a candidate raced out or out of budget has the mean of its
        first splits), ``n_test_splits`` (those splits' count), ``split<k>_test_nll`` (``NaN`` where
        a candidate was not scored), ``mean_fit_time`` (seconds), ``rank_test_nll`` (1: chosen) and
        ``failure`` (why a candidate failed, or ``None``).
    candidate_ : str, the name of the chosen candidate (``method="auto"`` only); ``method_`` is its
        method.
    selection_scheme_ : str, ``"cv"`` (k-fold), ``"split"`` (one held-out split) or ``"none"`` (a
        class of one row: nothing could be held out, the first candidate was fitted).
    validation_scores_ : list of the held-out mean negative log-likelihood after each epoch, or
        ``None`` without early stopping.
    best_iteration_ : int, the epoch whose state the model holds (the best validation score), or
        ``None`` without early stopping.
    conformity_scores_ : array ``[n]``, the calibration rows' scores 1 - p(y | x) of
        :meth:`predict_set`: those of :meth:`conformalize`'s rows, or of the rows the fit held out
        for early stopping; absent without either.
    conformity_classes_ : array ``[n]``, those rows' class indices (for :meth:`predict_set`
        with ``conditional="class"``).
    kernel_start_ : :class:`~alphagp.kernel_start.KernelStart` or None, what the regression of the
        labels learnt (lengthscales, amplitude, its marginal likelihood, rows, evaluations,
        seconds) with ``kernel_init="regression"``; ``None`` for the fixed start.
    optimize_inducing_ : bool, whether the inducing inputs were learnt (``optimize_inducing="auto"``
        resolved).
    n_skipped_updates_ : int, EP site updates refused because the new site would have had
        negative precision or a non-finite value.
    n_improper_cavities_ : int, EP site updates refused because the cavity (q without the
        site) had non-positive precision. Both 0 means every update was a proper EP update.
    diagnostics_ : dict, the method's diagnostics: the two counters above and, for ``gibbs``,
        the effective sample sizes of the chain (``ess_min``, ``ess_median``,
        ``ess_log_likelihood``).
    """

    _parameter_constraints: ClassVar[dict] = {
        **GPEstimatorBase.SHARED_CONSTRAINTS,
        "verbose": ["verbose", StrOptions({"auto"})],
        "method": [str],          # "auto" or a registered name, checked at fit against the registry of that moment
        "n_inducing": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"}), None],
        "alpha_grid": ["array-like", None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "method_params": [dict, None],
        "epsilon": [Interval(Real, 0, 1, closed="left"), None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "categorical_features": [StrOptions({"from_dtype"}), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "damping": [Interval(Real, 0, 1, closed="right"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "shared_hyperparameters": ["boolean", StrOptions({"auto"})],
        "inducing_init": [StrOptions({"auto", "random", "kmeans", "kmeans++"})],
        "inducing_points": ["array-like", None],
        "kernel": [StrOptions({"auto"}), Term],
        "kernel_params": [dict, None],
        "kernel_init": [StrOptions({"auto", "fixed", *SURROGATES})],
        "optimize_hyperparameters": ["boolean"],
        "optimize_inducing": ["boolean", StrOptions({"auto"})],
        "distributed": ["boolean", StrOptions({"rows"})],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    MODEL_KIND = MODEL_KIND
    #: the family of :mod:`.classifier_family`: its build, held-out score, finish and fitted values
    FAMILY = GP_CLASSIFIER
    SCHEDULE_PARAMS = (*GPEstimatorBase.SCHEDULE_PARAMS, "damping", "device", "distributed")
    PARAMS_ADDED: ClassVar[dict] = {"kernel_init": "fixed", "kernel": "auto"}
    #: recorded by checkpoints as the plan resolved them (checkpoints written before their "auto"
    #: recorded the values; the fixed start, the value before ``kernel_init`` existed, is not recorded)
    PLAN_SETTINGS: ClassVar[tuple[str, ...]] = ("shared_hyperparameters", "kernel_init")

    def __init__(self, *, method="auto", n_inducing="auto", alpha=None, epsilon=None, alpha_grid=None, cv=3,
                 method_params=None, batch_size="auto", max_iter=250, max_time=None,
                 damping=None, learning_rate=None, learning_rate_decay=1.0, shared_hyperparameters="auto",
                 inducing_init="auto", inducing_points=None, kernel="auto", kernel_params=None, kernel_init="auto",
                 optimize_hyperparameters=True, optimize_inducing="auto", standardize=True,
                 early_stopping="auto", validation_fraction=0.1,
                 tol=None, n_iter_no_change=10, checkpoint=None, dtype="float64", n_jobs=None,
                 device=None, distributed=False, verbose="auto", random_state=None, class_weight=None,
                 categorical_features="from_dtype"):
        self._set_training_params(max_iter=max_iter, max_time=max_time, learning_rate_decay=learning_rate_decay,
                                  early_stopping=early_stopping, validation_fraction=validation_fraction, tol=tol,
                                  n_iter_no_change=n_iter_no_change, checkpoint=checkpoint, dtype=dtype,
                                  n_jobs=n_jobs, device=device, distributed=distributed, verbose=verbose,
                                  random_state=random_state, categorical_features=categorical_features)
        self.method = method
        self.n_inducing = n_inducing
        self.alpha = alpha
        self.epsilon = epsilon
        self.alpha_grid = alpha_grid
        self.cv = cv
        self.method_params = method_params
        self.batch_size = batch_size
        self.damping = damping
        self.learning_rate = learning_rate
        self.shared_hyperparameters = shared_hyperparameters
        self.inducing_init = inducing_init
        self.inducing_points = inducing_points
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.kernel_init = kernel_init
        self.optimize_hyperparameters = optimize_hyperparameters
        self.optimize_inducing = optimize_inducing
        self.standardize = standardize
        self.class_weight = class_weight

    def _encode(self, y) -> np.ndarray:
        """Class indices of ``y``; raises ``ValueError`` naming labels not seen in ``fit``."""
        return encode_known_labels(y, self.classes_)

    def _fit_targets(self, y) -> tuple[np.ndarray, np.ndarray]:
        """``(classes_, class indices [N])`` of the validated labels ``y`` of ``fit``: the sorted
        labels (:class:`~alphagp.GPOrdinalClassifier`: the grades in their order)."""
        return encode_labels(y)

    def _stream_classes(self, classes) -> np.ndarray:
        """``classes_`` of a stream from ``partial_fit``'s ``classes``: the sorted labels."""
        return np.unique(np.asarray(classes))

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, callbacks=None):
        """Fit the classifier.

        Parameters
        ----------
        X : array-like ``[N, D]``
            Numeric features (NumPy array, memory-map or array-like).
        y : array-like ``[N]``
            Labels of any type with at least two distinct values.
        sample_weight : array-like ``[N]`` or None
            Non-negative weights of the rows, multiplied by ``class_weight``'s. A weight w raises
            the row's likelihood factor to the power w, so an integer weight is the row repeated;
            rows of weight 0 are left out. The validation rows of early stopping and of
            ``method="auto"`` are scored by the weighted mean NLL, and standardisation uses the
            weighted mean and spread. For the methods whose ``Capabilities.sample_weight`` is true
            (``alphagp methods``); the others refuse weights.
        callbacks : list or None
            ``cb(state)`` called after each epoch (see :class:`~alphagp.training.MetricsRecorder`).

        Returns
        -------
        self
        """
        X, y, weight = inputs.prepare(self, X, y, sample_weight, self._weights_refusal())
        classes, y_idx = self._fit_targets(y)
        if len(classes) < 2:
            raise ValueError(f"GPClassifier needs at least 2 classes in y; got only one class, {classes.tolist()}")
        check_parameters(self.get_params(), X.shape[1], len(classes))
        if self.method == "auto" or self.alpha == "auto":
            result, selection = model_selection.fit_selected(model_selection.selector_of(self, X.shape[1]), X, y,
                                                             y_idx, classes, callbacks, weight)
            fitted.record_fit(self, result, selection)
            return self
        result = self._fit_result(self.get_params(), X, y_idx, classes, weight, callbacks)
        fitted.record_fit(self, result)
        if result.plan.optimizer != "lbfgs":      # L-BFGS's line search takes no step that lowers its objective
            warn_if_no_better_than_the_frequencies(result.predictor(self.n_jobs), X, y_idx, weight, len(classes),
                                                   self.method)
        return self

    def _fit_result(self, params: dict, X, y_idx, classes, weight=None, callbacks=None,
                    start: dict[str, KernelStart] | None = None, max_time: float | None = None,
                    own: bool = True) -> FitResult:
        """The :class:`~.run.FitResult` of parameters ``params`` (``get_params()`` with a candidate's
        values over them; an explicit method) on validated rows ``X`` ``[N, D]`` with class indices
        ``y_idx`` ``[N]`` of ``classes`` and weights ``weight`` ``[N]`` (or ``None``): plan, check,
        run. The path of ``fit``, of the selection's candidates (``own=False``: without the
        estimator's checkpoint, progress and callbacks) and of its final fit. ``start``: kernel starts
        fitted already by surrogate (the selection's), used where the plan starts from one of them;
        ``max_time``: the budget left (default ``params["max_time"]``)."""
        groups = None if isinstance(params["kernel"], str) else inputs.feature_groups(      # a term binds to them
            getattr(self, "table_encoding_", None), X.shape[1])
        plan = plan_fit(params, y_idx, alpha=params["alpha"], max_time=max_time, feature_groups=groups)
        check_plan(plan, len(y_idx), X.shape[1], len(classes))
        verbose = own and self.verbose is True
        if verbose:
            print(f"{type(self).__name__} plan: {plan.describe()}", flush=True)
        context = ClassifierContext(len(classes), self.inducing_points, start, verbose)
        result = run(plan, X, y_idx, weight, self.FAMILY, context,
                     self._settings(plan, callbacks, {"classes": classes}, own), stratify=True)
        return replace(result, made={"classes": classes, **result.made})

    def check_fit_size(self, n_rows: int, n_features: int, y) -> None:
        """A one-line ``ValueError`` where a fit of these parameters on ``n_rows`` rows of
        ``n_features`` features with labels ``y`` would pass half of this machine's memory
        (``method="auto"``: its first candidate for those rows), before the rows are read whole (the
        command line asks it of a sparse LIBSVM file before making it dense)."""
        check_fit_size(model_selection.selector_of(self, n_features), n_rows, n_features, y)

    # ------------------------------------------------------------------ streams
    @_when_streaming
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, n_rows=None, sample_weight=None):
        """Train on rows ``X`` ``[B, D]``, ``y`` ``[B]`` of a stream: one Adam step per ``batch_size``
        rows, in their order (the whole call as one step without a batch size). The first call
        (on an unfitted estimator) needs ``classes``, every label the stream will bring, as
        scikit-learn asks; it takes the standardisation (``standardize``) and the inducing inputs
        from its rows. ``n_rows`` is the size of the data set the calls cover together, the N of
        the ``N / |B|`` scaling of every batch; without it N is the rows the calls have brought
        so far (give it when the calls pass over the same rows more than once). Later calls
        continue the model and the optimiser's state (kept in model files, so a saved and loaded
        model streams on); a label outside ``classes_`` is an error. A fitted model (``fit``,
        ``load``) continues the same way, with its N.

        ``sample_weight`` ``[B]``: the rows' weights, times a ``class_weight`` dict's (``"balanced"``
        needs all labels at once and is refused), as :meth:`fit` takes them; the tied factors
        count the stream's running total of weight (:mod:`~alphagp.estimators.streams`).

        For the methods whose state does not grow with the rows (``Capabilities.streaming``:
        ``dirichlet`` with inducing points, ``sep``, ``vi`` and its likelihoods, ``apep``, ``arpep``,
        ``rpapep``, ``augmented``, ``class_frequencies``); ``method="auto"`` streams with the first
        such candidate of the default's portfolio, the closed form (``method_`` says so), whose
        kernel and inducing inputs come from the first call and whose posterior sums every call's
        rows (no N: ``n_rows`` changes nothing there, and says so). A fitted model whose method
        does not stream, or an exact posterior (the default's fit of a small table: exact EP or the
        exact Dirichlet GP), is refused with what to do: fit again on all the rows. No early
        stopping. Returns ``self``."""
        first = not hasattr(self, "model_")
        if first and classes is None:
            raise ValueError("the first call of partial_fit needs classes=, every label of the stream "
                             "(scikit-learn's convention)")
        X, y = inputs.validate(self, X, y, reset=first)
        given = None if classes is None else self._stream_classes(classes)
        streams.balanced_refusal(self.class_weight)
        weight = inputs.fit_weights(sample_weight, X, y, self.class_weight, self._weights_refusal(),
                                    classes=given if first else self.classes_)
        if first:
            y_idx = encode_known_labels(y, given)
            params = self.get_params()
            plan = streams.stream_plan(params, model_selection.explicit_parameters(params, type(self)().get_params()),
                                       y_idx, given, n_rows, X.shape[1],
                                       inputs.feature_groups(getattr(self, "table_encoding_", None), X.shape[1]))
            stream = Stream()
        else:
            if given is not None and not np.array_equal(given, self.classes_):
                raise ValueError(f"classes={given.tolist()} differ from the classes the stream started with, "
                                 f"{self.classes_.tolist()}")
            if not self.model_.capabilities.streaming:
                raise ValueError(streams.refusal(self.fit_plan_, self.method_, self.methods_taken()))
            y_idx, plan = self._encode(y), self.fit_plan_
            stream = Stream(FitResult(plan, self.mean_, self.scale_, self.model_, self.history_, self.n_iter_),
                            getattr(self, "_stream_seen", None) or (0, 0.0), getattr(self, "_stream_optimizer", None))
        context = ClassifierContext(len(self.classes_ if not first else given), self.inducing_points,
                                    verbose=self.verbose is True)
        call = run(plan, X, y_idx, weight, self.FAMILY, context, Settings(n_jobs=self.n_jobs), stratify=False,
                   stream=stream)
        if first:
            fitted.record_fit(self, replace(call, history=[], n_iter=0, made={"classes": given, **call.made}))
            streams.warn_of_a_narrow_first_call(plan, call.model, y_idx, given, self.n_inducing, self.inducing_points)
            streams.warn_if_n_rows_is_unused(plan, call.model, n_rows)
        fitted.record_stream_call(self, call.history[-1], call.stream.seen, call.made, call.stream.optimizer)
        return self

    def _weights_refusal(self) -> str | None:
        """Why this estimator's method takes no row weights (``None``: it takes them; the portfolio's
        candidates all do, and the selection leaves out any that would not; an unknown method is
        named by the parameters' check)."""
        if self.method not in METHODS or METHODS[self.method].cls.CAPABILITIES.sample_weight:
            return None
        others = ", ".join(name for name, spec in METHODS.items() if spec.cls.CAPABILITIES.sample_weight)
        return (f"method={self.method!r} takes no sample weights (sample_weight, class_weight); the methods that do: "
                f"{others}")

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X, chunk_size: int = 2048) -> np.ndarray:
        """``[N, C]`` class probabilities (columns ordered as ``classes_``)."""
        check_is_fitted(self, "model_")
        return self._proba(inputs.validate(self, X), chunk_size)

    def _proba(self, X: np.ndarray, chunk_size: int = 2048) -> np.ndarray:
        """``[N, C]`` probabilities of validated, unstandardised rows ``X`` (:func:`class_probabilities`)."""
        return class_probabilities(self._predictor(), X, len(self.classes_), chunk_size)

    def predict_f(self, X, return_std: bool = False):
        """``[N, C]`` means of the C latent functions at ``X`` under the fitted posterior (columns
        ordered as ``classes_``), and with ``return_std=True`` their standard deviations ``[N, C]``
        (the kernel's additive noise included): the Gaussian marginals that ``predict_proba``
        integrates against the likelihood (scikit-learn's ``return_std`` convention)."""
        check_is_fitted(self, "model_")
        mean, var = self._latent(inputs.validate(self, X))
        return (mean, np.sqrt(var)) if return_std else mean

    def predict_uncertainty(self, X, n_samples: int = 256, random_state: int | None = 0) -> dict[str, np.ndarray]:
        """The predictive uncertainty of each row of ``X``, in nats, split into its parts
        (:mod:`alphagp.uncertainty`): ``"total"`` (the entropy of the predictive), ``"aleatoric"``
        (the expected entropy of the likelihood under the posterior) and ``"epistemic"`` (the
        mutual information between the label and the latent functions; total = aleatoric +
        epistemic), each ``[N]``, from ``n_samples`` draws of the latent functions per row from
        their posterior marginals (as :meth:`predict_f` gives them; for ``laplace`` and the
        sampling methods these marginals leave out the correlation between classes). With the
        Heaviside likelihood (``ep``, ``sep``, ``gfitc``) the label is a deterministic function
        of the latent functions, so ``"aleatoric"`` is 0 and ``"epistemic"`` is the total. An
        ordinal model has one latent function and its grades as the labels: the split is that of
        the grades' entropy (total: of the predictive over the grades; aleatoric: the expected
        entropy of the grade given the latent value, the cut points' noise; epistemic: what the
        latent function's spread adds)."""
        from ..uncertainty import decompose, draw_generator, named
        check_is_fitted(self, "model_")
        generator = draw_generator(n_samples, random_state)
        mean, var = self._latent(inputs.validate(self, X))
        with torch_threads(self.n_jobs), torch.no_grad():
            return named(decompose(self.model_.likelihood, torch.as_tensor(mean), torch.as_tensor(var),
                                   int(n_samples), generator, n_classes=len(self.classes_)))

    # ------------------------------------------------------------------ prediction sets
    def conformalize(self, X, y) -> GPClassifier:
        """Calibrate :meth:`predict_set` on rows ``X`` ``[n, D]`` with labels ``y`` ``[n]`` that the
        fit did not see (split conformal prediction, :mod:`alphagp.conformal`): their conformity
        scores 1 - p(y_i | x_i) and classes become ``conformity_scores_`` and
        ``conformity_classes_``, replacing those of the fit's held-out rows. Returns ``self``."""
        check_is_fitted(self, "model_")
        X = inputs.validate(self, X)
        check_rows_match(X, y)
        y_idx = np.asarray(self._encode(y), dtype=np.int64)
        fitted.record_calibration(self, conformity_scores(self._proba(X), y_idx), y_idx)
        return self

    def predict_set(self, X, confidence_level: float = 0.9, conditional: str | None = None,
                    non_empty: bool = False) -> np.ndarray:
        """Prediction sets ``[N, C]`` (booleans, columns as ``classes_``) that hold the true label
        with probability at least ``confidence_level`` (a number in (0, 1)) for rows exchangeable
        with the calibration rows (:mod:`alphagp.conformal`): on average over the classes, or, with
        ``conditional="class"`` (Mondrian sets), for the rows of every class (each class's
        threshold from its own calibration rows; a class with too few of them for the level is in
        every set). A set can be empty (no class likely enough at that level, :mod:`alphagp.conformal`);
        ``non_empty=True`` puts the most probable class in such a set (the coverage only rises).

        The calibration rows are those of :meth:`conformalize`, or else the rows the fit held out
        for early stopping (``early_stopping=True``, and ``method="auto"`` from 2,000 rows). Those
        chose the stopping epoch (and the candidate), so their guarantee is approximate: on the
        panel's sets their coverage is measured beside fresh rows' in BENCHMARKS.md. Raises
        ``ValueError`` when there are no calibration rows, or no classes of them for
        ``conditional="class"`` (a file written before they were kept)."""
        check_is_fitted(self, "model_")
        scores, classes = calibration(self, conditional)
        if not isinstance(non_empty, (bool, np.bool_)):
            raise ValueError(f"non_empty must be True or False, got {non_empty!r}")  # noqa: TRY004 -- as sklearn
        return prediction_sets(self._proba(inputs.validate(self, X)), scores, confidence_level, classes, bool(non_empty))

    def _latent(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latent means and variances ``[N, C]`` of validated, unstandardised rows ``X``."""
        return latent_moments(self._predictor(), X, len(self.classes_))

    def predict_log_proba(self, X) -> np.ndarray:
        """``[N, C]`` log class probabilities."""
        return np.log(np.maximum(self.predict_proba(X), 1e-300))

    def predict(self, X) -> np.ndarray:
        """``[N]`` most probable class labels."""
        check_is_fitted(self, "model_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy; raises ``ValueError`` for labels not seen during fit."""
        check_is_fitted(self, "model_")
        self._encode(y)
        return super().score(X, y, sample_weight=sample_weight)

    def evaluate(self, X, y, sample_weight=None) -> dict[str, float]:
        """Test error, mean negative log-likelihood, expected calibration error and Brier score,
        each weighted by ``sample_weight`` ``[N]`` where given (non-negative, finite, not all zero;
        a row of weight w counts as w rows)."""
        check_rows_match(X, y)
        weight = None if sample_weight is None else inputs.evaluation_weights(sample_weight, len(y))
        return all_metrics(self.predict_proba(X), self._encode(y), weight)

    # ------------------------------------------------------------------ persistence
    def save(self, path, include_training_state: bool = False) -> None:
        """Write the fitted estimator to ``path`` as a data-only file (safetensors plus a JSON header).

        The file holds the estimator's parameters, the classes, the feature standardisation,
        the kernel hyper-parameters, the inducing points, q's natural parameters (everything
        needed to predict), the training history and diagnostics, the library version and a
        format version. Its size does not grow with the number of training rows unless
        ``include_training_state=True``, which also keeps EP's per-point sites (``[N, C, M]``;
        SEP has none), for inspecting them. Opening a file never runs code from it.
        """
        model_file.write(self, path, include_training_state=bool(include_training_state))

    @classmethod
    def methods_taken(cls) -> list[str]:
        """The ``method`` values this estimator takes: every registered method, and ``"auto"``."""
        return [*METHODS, "auto"]

    @classmethod
    def load(cls, path, device=None) -> GPClassifier:
        """Read an estimator written by :meth:`save`, onto ``device`` (``None``: the device it was
        fitted with, which must be available here; ``"cpu"`` loads a GPU-fitted model anywhere).

        Raises :class:`~alphagp.serialization.ModelFileError` (a ``ValueError``) for a file that
        is not an alphagp model, is damaged or truncated, or comes from a newer format version.
        """
        return model_file.read(cls, path, **({} if device is None else {"device": plain(device)}))


GPClassifier.__doc__ = GPClassifier.__doc__.replace("{methods}", method_bullets())
