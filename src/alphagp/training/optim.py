"""The sign-adaptive learning rate of the EP papers (scalable EP, end of Appendix G).

Each scalar parameter has its own learning rate: it grows by 2% while the sign of the
gradient stays the same between two consecutive iterations and halves when it flips.
The step is plain gradient descent with that rate.

The papers run 250 iterations, over which a rate can grow at most 1.02^250 ~ 141-fold. Longer
runs let it grow without bound (1.02^1000 ~ 4e8): a parameter whose gradient keeps its sign
then jumps by orders of magnitude in one step (measured: batch EP on Satellite, past 1,200
iterations, drove a lengthscale's softplus argument to -800, the lengthscale to 0 and K_uu to
NaN). So the rate is capped at ``max_growth`` times the initial one, which the papers' 250
iterations never reach.
"""

from __future__ import annotations

import torch


class SignAdaptiveSGD(torch.optim.Optimizer):
    """Gradient descent with per-element learning rates adapted from the gradient's sign.

    Parameters
    ----------
    params
        parameters to optimise (minimises the loss).
    lr
        initial learning rate of every element.
    increase
        factor applied when the sign is unchanged (1.02 in the papers).
    decrease
        factor applied when the sign flips (0.5 in the papers).
    max_growth
        the rate never exceeds ``max_growth * lr`` (default 150 > 1.02^250).
    """

    def __init__(self, params, lr: float = 1e-2, increase: float = 1.02, decrease: float = 0.5,
                 max_growth: float = 150.0):
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}")
        if max_growth < 1:
            raise ValueError(f"max_growth must be at least 1, got {max_growth}")
        super().__init__(params, dict(lr=lr, increase=increase, decrease=decrease, max_growth=max_growth))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["rate"] = torch.full_like(p, group["lr"])
                    state["sign"] = torch.sign(p.grad)
                else:
                    sign = torch.sign(p.grad)
                    same = sign * state["sign"] >= 0
                    factor = torch.full_like(state["rate"], group["decrease"]).masked_fill_(same, group["increase"])
                    state["rate"].mul_(factor)  # in the rate's precision (float32 1.02 drifted by 2e-8 a step)
                    state["rate"].clamp_(max=group["lr"] * group.get("max_growth", 150.0))  # older checkpoints
                    state["sign"] = sign
                p.sub_(state["rate"] * p.grad)
        return loss


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """``"adam"`` (mini-batches, the papers' choice; batch training of methods that fit q by
    gradients) or ``"sign-adaptive"`` (batch training of the EP methods). Adam runs fused (one
    pass over each parameter per step instead of seven; on MNIST's inducing inputs, 10 x 200 x 784,
    2.5 ms instead of 11 ms per step) on the devices that have the fused kernel."""
    if name == "adam":
        params = list(params)
        fused = all(p.device.type in ("cpu", "cuda") for p in params)
        return torch.optim.Adam(params, lr=lr, fused=fused)
    if name == "sign-adaptive":
        return SignAdaptiveSGD(params, lr=lr)
    raise ValueError(f"unknown optimizer {name!r}; use 'adam' or 'sign-adaptive'")
