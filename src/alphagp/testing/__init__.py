"""The contract every registered method must keep, as checks a test suite runs over the registry,
and the independent references the tests compare with (:mod:`.dense_reference`: dense NumPy/SciPy
algebra of EP, the energies and the predictive; :mod:`.gibbs_reference`: an exact posterior
sampler of the Heaviside model), which use no alphagp code.

``tests/methods/test_contracts.py`` runs each ``check_*`` function over every name in
:data:`alphagp.methods.METHODS`, so a method added to the registry is checked without an edit to
the tests. A check builds its settings from the method's :class:`~alphagp.methods.base.Capabilities`
and its own parameters (:func:`~alphagp.methods.method_parameters`), never from its name:

* :func:`check_fit_predict`: a fit ends with finite probabilities ``[N, C]`` that sum to one, and
  predictions among the classes;
* :func:`check_round_trip`: a saved model (with and without its training state) predicts what
  the fitted one does;
* :func:`check_resume`: a fit interrupted after an epoch and resumed from its checkpoint ends
  where the uninterrupted fit ends;
* :func:`check_objective_gradient`: the objective's gradient in the kernel hyper-parameters and
  the inducing inputs, at the method's state after a short fit, matches central finite
  differences;
* :func:`check_bad_input`: a wrong feature count and non-finite features are clear errors;
* :func:`check_refused_arguments`: an estimator argument (``alpha``, ``epsilon``, ``damping``)
  that the method's constructor does not declare is refused with a reason, not ignored;
* :func:`check_device`: a fit on another torch device (``"cuda"`` where there is one) agrees
  with the CPU fit;
* :func:`check_capabilities_before_build`: the capabilities the estimator reads from the class
  before it builds the method (:data:`CAPABILITIES_BEFORE_BUILD`) are those of the built method.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import torch

from ..estimators import GPClassifier
from ..kernels import ARDKernel
from ..methods import METHODS, build_method, constructor_parameters, method_parameters, method_spec, n_latent

#: a Python program (``python -c``) that saves the models of files argv[2] and argv[3] to the path
#: argv[1] in turn, forever: the writer of the concurrent-load checks (a test and benchmarks/edges.py)
ALTERNATING_SAVER = """
import sys
from alphagp import GPClassifier
models = [GPClassifier.load(p) for p in sys.argv[2:4]]
i = 0
while True:
    models[i % 2].save(sys.argv[1])
    i += 1
"""

#: a sampler's own parameters, set small so a contract fit is quick
_QUICK_SAMPLING = {"n_samples": 20, "burn_in": 10, "thin": 1}


class _Interrupt(Exception):
    """Raised by a callback to stop a fit as a crash would."""


def contract_problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A small three-class problem: ``X`` ``[60, 2]`` and labels ``y`` ``[60]`` (two rows of
    each class duplicated, a column on another scale)."""
    g = np.random.default_rng(seed)
    X = g.standard_normal((60, 2)) * [1.0, 30.0]
    y = np.digitize(X[:, 0] + 0.02 * X[:, 1] + 0.3 * g.standard_normal(60), [-0.4, 0.4])
    X[-2:], y[-2:] = X[:2], y[:2]
    return X, y


#: the :class:`~alphagp.methods.base.Capabilities` fields the estimator reads from a method's
#: class before building it (``estimators/fit_plan.py``): they may not depend on its arguments
CAPABILITIES_BEFORE_BUILD = ("mini_batches", "damping", "inducing_on_mini_batches")


def _built_at_defaults(name: str):
    """Method ``name`` built at its default arguments on a two-class, one-feature problem."""
    G = n_latent(name, 2)
    return build_method(name, torch.zeros(G, 3, 1, dtype=torch.float64), ARDKernel(G, 1), n_data=10, n_classes=2)


def methods_with(capability: str) -> list[str]:
    """The registered methods whose instance at default arguments has ``capability`` (a field
    of :class:`~alphagp.methods.base.Capabilities`, such as ``"mini_batches"``)."""
    return [name for name in METHODS if getattr(_built_at_defaults(name).capabilities, capability)]


def contract_settings(name: str, **overrides) -> dict:
    """``GPClassifier`` arguments for a quick fit of method ``name``: mini-batches where the method
    takes them, sampler lengths cut short."""
    spec = method_spec(name)
    own = method_parameters(name)
    settings = dict(method=name, n_inducing=6 if spec.cls.CAPABILITIES.sparse else "auto", max_iter=4,
                    random_state=0,
                    batch_size=25 if spec.cls.CAPABILITIES.mini_batches else None,
                    method_params={k: v for k, v in _QUICK_SAMPLING.items() if k in own} or None)
    return {**settings, **overrides}


def _fit(name: str, **overrides) -> tuple[GPClassifier, np.ndarray, np.ndarray]:
    X, y = contract_problem()
    return GPClassifier(**contract_settings(name, **overrides)).fit(X, y), X, y


def check_fit_predict(name: str) -> None:
    clf, X, y = _fit(name)
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3), f"{name}: probabilities of shape {proba.shape}"
    assert np.all(np.isfinite(proba)) and np.all(proba >= 0), f"{name}: probabilities not finite and >= 0"
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-10, err_msg=f"{name}: rows do not sum to one")
    assert set(clf.predict(X)) <= set(y), f"{name}: predicts a label that is not a class"


def check_round_trip(name: str, folder: Path) -> None:
    clf, X, _ = _fit(name)
    for keep in (False, True):
        path = Path(folder) / f"{name}-{keep}.safetensors"
        clf.save(path, include_training_state=keep)
        np.testing.assert_allclose(GPClassifier.load(path).predict_proba(X), clf.predict_proba(X), rtol=0,
                                   atol=1e-12, err_msg=f"{name}: the loaded model predicts otherwise")


def check_resume(name: str, folder: Path) -> None:
    import warnings
    checkpoint = Path(folder) / f"{name}.ckpt"

    def stop_after_two(state):
        if state.epoch == 2:
            raise _Interrupt

    X, y = contract_problem()
    try:
        GPClassifier(**contract_settings(name, checkpoint=checkpoint)).fit(X, y, callbacks=[stop_after_two])
    except _Interrupt:
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                                # the CheckpointResumed notice
        resumed = GPClassifier(**contract_settings(name, checkpoint=checkpoint)).fit(X, y)
    uninterrupted = GPClassifier(**contract_settings(name)).fit(X, y)
    np.testing.assert_allclose(resumed.predict_proba(X), uninterrupted.predict_proba(X), rtol=0, atol=1e-10,
                               err_msg=f"{name}: the resumed fit ends elsewhere")


def check_objective_gradient(name: str, directions: int = 3, step: float = 1e-4) -> None:
    """Directional derivatives of ``objective`` on the whole (standardised) training set against
    central differences (Richardson-extrapolated), in the kernel hyper-parameters and the inducing
    inputs, the method's state (sites, q, draws' seeds) held as a short fit left it. A method whose
    ``Capabilities.exact_gradient`` is false is checked for a finite gradient only."""
    clf, X, y = _fit(name, batch_size=None, max_iter=3)
    model = clf.model_
    Xs = torch.as_tensor((X - clf.mean_) / clf.scale_)
    y_idx = torch.as_tensor(np.searchsorted(clf.classes_, y))
    idx = torch.arange(len(y))
    model.kernel.requires_grad_(True)
    model.inducing_points.requires_grad_(True)
    params = list(model.kernel.parameters()) + [model.inducing_points]
    value = model.objective(Xs, y_idx, idx)
    grads = (torch.autograd.grad(value, params, allow_unused=True) if value.requires_grad
             else [None] * len(params))                        # an objective no parameter moves (the frequencies)
    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
    assert all(torch.all(torch.isfinite(g)) for g in grads), f"{name}: a non-finite gradient"
    if not model.capabilities.exact_gradient:
        return
    generator = torch.Generator().manual_seed(0)
    for _ in range(directions):
        direction = [torch.randn(p.shape, generator=generator, dtype=p.dtype) for p in params]
        analytic = sum((g * d).sum() for g, d in zip(grads, direction)).item()
        central = [_central_difference(model, params, direction, h, Xs, y_idx, idx) for h in (step, step / 2)]
        numeric = (4 * central[1] - central[0]) / 3                    # Richardson: error O(h^4)
        assert abs(analytic - numeric) <= max(1e-5 * abs(numeric), 1e-6), \
            f"{name}: gradient {analytic} against finite differences {numeric}"


def _central_difference(model, params, direction, h, X, y, idx) -> float:
    values = []
    with torch.no_grad():
        for sign in (1.0, -1.0):
            for p, d in zip(params, direction):
                p.add_(sign * h * d)
            values.append(model.objective(X, y, idx).item())
            for p, d in zip(params, direction):
                p.sub_(sign * h * d)
    return (values[0] - values[1]) / (2 * h)


def check_bad_input(name: str) -> None:
    clf, X, _ = _fit(name)
    for bad, message in ((X[:, :1], "features"), (np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X),
                                                  "NaN")):
        try:
            clf.predict_proba(bad)
        except ValueError as err:
            assert message in str(err), f"{name}: unclear error {err}"
        else:
            raise AssertionError(f"{name}: predicted from bad input without an error")


def check_refused_arguments(name: str) -> None:
    """Every estimator-level argument a method does not use is refused with its reason, and a
    likelihood argument the registry lets through reaches the likelihood."""
    spec = method_spec(name)
    for key, value in (("alpha", 0.5), ("epsilon", 0.01), ("damping", 0.7)):
        G = n_latent(name, 3)
        build = partial(build_method, name, torch.zeros(G, 4, 2, dtype=torch.float64), ARDKernel(G, 2), n_data=10,
                        n_classes=3)
        if key in spec.likelihood_args:
            model = build(**{key: value})
            assert model.likelihood.config()[key] == value, f"{name}: {key}={value} did not reach the likelihood"
            continue
        if key in constructor_parameters(spec.cls):
            continue
        try:
            build(**{key: value})
        except ValueError as err:
            assert f"has no {key}" in str(err), f"{name}: unclear refusal of {key}: {err}"
        else:
            raise AssertionError(f"{name}: {key}={value} was accepted and ignored")


def check_trainable(name: str) -> None:
    """The built method is what the trainer relies on (:class:`~alphagp.training.protocol.TrainableMethod`)."""
    from ..training.protocol import TrainableMethod
    method = _built_at_defaults(name)
    assert isinstance(method, TrainableMethod), f"{name}: lacks what the trainer reads (TrainableMethod)"
    buffers = {key.rsplit(".", 1)[-1] for key, _ in method.named_buffers()}
    assert isinstance(method.PROCESS_COUNTERS, tuple) and set(method.PROCESS_COUNTERS) <= buffers, \
        f"{name}: PROCESS_COUNTERS names buffers it does not have"


def check_capabilities_before_build(name: str) -> None:
    for field in CAPABILITIES_BEFORE_BUILD:
        declared = getattr(method_spec(name).cls.CAPABILITIES, field)
        built = getattr(_built_at_defaults(name).capabilities, field)
        assert declared == built, (f"{name}: the class declares {field}={declared}, which the estimator "
                                   f"reads before building, but the built method has {field}={built}")


def check_device(name: str, device: str) -> None:
    clf, X, _ = _fit(name, device=device)
    tensors = list(clf.model_.parameters()) + list(clf.model_.buffers())
    assert {t.device.type for t in tensors} == {torch.device(device).type}, f"{name}: tensors left on another device"
    reference, _, _ = _fit(name)
    np.testing.assert_allclose(clf.predict_proba(X), reference.predict_proba(X), atol=1e-6,
                               err_msg=f"{name}: {device} and CPU fits disagree")
