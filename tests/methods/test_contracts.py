"""Every registered method keeps the contract of :mod:`alphagp.testing` (a method added to the
registry is covered here without an edit)."""

import pytest
import torch

from alphagp import testing
from alphagp.methods import METHODS

NAMES = list(METHODS)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])      # "cpu": the device path itself


@pytest.mark.parametrize("name", NAMES)
def test_fit_predict(name):
    testing.check_fit_predict(name)


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name, tmp_path):
    testing.check_round_trip(name, tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_resume_equals_uninterrupted(name, tmp_path):
    testing.check_resume(name, tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_objective_gradient(name):
    testing.check_objective_gradient(name)


@pytest.mark.parametrize("name", NAMES)
def test_trainable(name):
    testing.check_trainable(name)


def test_the_deep_gp_is_trainable():
    from alphagp import DeepGPRegressor
    from alphagp.training.protocol import TrainableMethod
    model = DeepGPRegressor(n_layers=2, n_inducing=3, max_iter=1, random_state=0).fit(
        torch.randn(20, 2).numpy(), torch.randn(20).numpy()).model_
    assert isinstance(model, TrainableMethod)
    assert set(model.PROCESS_COUNTERS) <= {key.rsplit(".", 1)[-1] for key, _ in model.named_buffers()}


@pytest.mark.parametrize("name", NAMES)
def test_bad_input(name):
    testing.check_bad_input(name)


@pytest.mark.parametrize("name", NAMES)
def test_refused_arguments(name):
    testing.check_refused_arguments(name)


@pytest.mark.parametrize("name", NAMES)
def test_capabilities_before_build(name):
    testing.check_capabilities_before_build(name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", NAMES)
def test_device_agrees_with_the_cpu(name, device):
    testing.check_device(name, device)


def test_a_registry_line_gives_power_ep_another_likelihood(monkeypatch, tmp_path):
    """Power EP with the softmax likelihood is one registry line (its tilted moments by autodiff
    through the likelihood's log E[p^alpha]), and it keeps the contract."""
    from alphagp.methods import MethodSpec, PowerEP
    monkeypatch.setitem(METHODS, "pep_softmax", MethodSpec(PowerEP, "power EP, softmax likelihood", "softmax",
                                                           defaults={"alpha": 0.5}))
    testing.check_fit_predict("pep_softmax")
    testing.check_round_trip("pep_softmax", tmp_path)
    testing.check_objective_gradient("pep_softmax")
