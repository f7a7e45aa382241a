"""The sign-adaptive learning rate of the EP papers (scalable EP, end of Appendix G).

Each scalar parameter has its own learning rate: it grows by 2% while the sign of the
gradient stays the same between two consecutive iterations and halves when it flips.
The step is plain gradient descent with that rate.
"""

from __future__ import annotations

import torch


class SignAdaptiveSGD(torch.optim.Optimizer):
    """Gradient descent with per-element learning rates adapted from the gradient's sign.

    Args:
        params: parameters to optimise (minimises the loss).
        lr: initial learning rate of every element.
        increase: factor applied when the sign is unchanged (1.02 in the papers).
        decrease: factor applied when the sign flips (0.5 in the papers).
    """

    def __init__(self, params, lr: float = 1e-2, increase: float = 1.02, decrease: float = 0.5):
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}")
        super().__init__(params, dict(lr=lr, increase=increase, decrease=decrease))

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
                    state["rate"].mul_(torch.where(same, group["increase"], group["decrease"]))
                    state["sign"] = sign
                p.sub_(state["rate"] * p.grad)
        return loss
