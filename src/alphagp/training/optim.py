"""The optimisers of batch training beside Adam: the sign-adaptive learning rate of the EP papers
(scalable EP, end of Appendix G), and L-BFGS for closed-form objectives (:class:`LBFGS`).

Each scalar parameter has its own learning rate: it grows by 2% while the sign of the
gradient stays the same between two consecutive iterations and halves when it flips.
The step is plain gradient descent with that rate.

The papers run 250 iterations, over which a rate can grow at most 1.02^250 ~ 141-fold. Longer
runs let it grow without bound (1.02^1000 ~ 4e8): a parameter whose gradient keeps its sign
then jumps by orders of magnitude in one step (measured: batch EP on Satellite, past 1,200
iterations, drove a lengthscale's softplus argument to -800, the lengthscale to 0 and K_uu to
NaN). So the rate is capped at ``max_growth`` times the initial one, which the papers' 250
iterations never reach. And one step moves an element by at most ``max_step``: under extreme row
weights (scikit-learn's class-weight check gives one class 1,000 and the others 0.0001) one
gradient entry was large enough that a single step took a lengthscale's softplus argument from 1.3
to -34, and the next kernel matrix was NaN.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict

import torch


class PlainOptimizer:
    """What the trainer uses of ``torch.optim.Optimizer`` (``param_groups``, ``state``,
    ``zero_grad``, ``state_dict`` and ``load_state_dict``, in its format, so checkpoints written
    through it load), for this module's optimisers: PyTorch's base class imports ``torch._dynamo``
    at its first use in a process, 1.6 s on one thread of this project's machine, which a fit of
    ``max_time=1`` in a fresh process would spend before its first step. One parameter group."""

    def __init__(self, params, defaults: dict):
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = defaults
        self.state: defaultdict[torch.Tensor, dict] = defaultdict(dict)
        self.param_groups = [{**defaults, "params": params}]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    def state_dict(self) -> dict:
        """``{"state": {index: the parameter's state}, "param_groups": [settings with "params":
        indices]}``, indices in the order of the parameters (torch.optim's layout)."""
        params = self.param_groups[0]["params"]
        index = {id(p): i for i, p in enumerate(params)}
        group = {key: value for key, value in self.param_groups[0].items() if key != "params"}
        return {"state": {index[id(p)]: value for p, value in self.state.items()},
                "param_groups": [{**group, "params": list(range(len(params)))}]}

    def load_state_dict(self, state_dict: dict) -> None:
        """The state of :meth:`state_dict` (copied); tensors move to their parameter's device, and
        floating ones to a floating parameter's dtype, as torch.optim's do."""
        state_dict = copy.deepcopy(state_dict)
        params = self.param_groups[0]["params"]
        saved = state_dict["param_groups"]
        if len(saved) != 1 or len(saved[0]["params"]) != len(params):
            raise ValueError("the optimizer's saved state holds another number of parameters")

        group = saved[0]

        def cast(param: torch.Tensor, value, key=None):
            if isinstance(value, dict):
                return {k: cast(param, item, k) for k, item in value.items()}
            if not isinstance(value, torch.Tensor):
                return value
            if key == "step":                 # Adam's step count: its own dtype (torch.optim's rule)
                fused = group.get("fused") or group.get("capturable")
                return value.to(dtype=torch.float32, device=param.device) if fused else value
            return value.to(dtype=param.dtype, device=param.device) if param.is_floating_point() \
                else value.to(device=param.device)

        self.state = defaultdict(dict)
        for i, value in state_dict["state"].items():
            param = params[saved[0]["params"].index(int(i))]
            self.state[param] = cast(param, value)
        self.param_groups[0].update({key: value for key, value in saved[0].items() if key != "params"})


class SignAdaptiveSGD(PlainOptimizer):
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
    max_step
        no element moves by more than this in one step (default 1: a factor of e in a
        log-stored positive parameter).
    """

    def __init__(self, params, lr: float = 1e-2, increase: float = 1.02, decrease: float = 0.5,
                 max_growth: float = 150.0, max_step: float = 1.0):
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}")
        if max_growth < 1:
            raise ValueError(f"max_growth must be at least 1, got {max_growth}")
        if not max_step > 0:
            raise ValueError(f"max_step must be positive, got {max_step}")
        super().__init__(params, dict(lr=lr, increase=increase, decrease=decrease, max_growth=max_growth,
                                      max_step=max_step))

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
                bound = group.get("max_step", 1.0)                    # older checkpoints
                p.sub_((state["rate"] * p.grad).clamp_(-bound, bound))
        return loss


class LBFGS(PlainOptimizer):
    """Limited-memory BFGS with a backtracking line search, one iteration per :meth:`step`: the
    optimiser of type-II maximum likelihood on a closed-form marginal likelihood (the Dirichlet GP;
    scipy's L-BFGS-B in the kernel start), minimising the loss its closure returns.

    The direction is the two-loop recursion over the last ``history_size`` pairs of steps and
    gradient changes (Nocedal & Wright, Algorithm 7.4), scaled by s'y / y'y; the step length
    starts at ``lr`` (the first iteration at ``lr / |g|_1`` where that is smaller, so its step is
    not longer than the gradient's scale) and halves until the Armijo condition
    f(x + t d) <= f(x) + c1 t g'd holds. A trial where the closure raises
    :class:`~alphagp.numerics.CholeskyError` or ``FloatingPointError``, or returns a non-finite
    loss, counts as too long a step. The last evaluation of every step is at the parameters the
    step leaves (a failed line search re-evaluates the start), so a closure that keeps state from
    its evaluation (a posterior) leaves the state of the accepted point. :attr:`converged` turns
    true when a step lowers the loss by at most ``ftol`` of its size (scipy's ``ftol`` rule), the
    largest gradient entry is below ``gtol``, or no step along the direction lowers the loss.
    """

    #: the trainer passes :meth:`step` a closure that evaluates the objective
    NEEDS_CLOSURE = True

    def __init__(self, params, lr: float = 1.0, history_size: int = 10, ftol: float = 1e-7, gtol: float = 1e-8,
                 c1: float = 1e-4, max_halvings: int = 30):
        if lr <= 0:
            raise ValueError(f"lr must be positive, got {lr}")
        super().__init__(params, dict(lr=lr, history_size=history_size, ftol=ftol, gtol=gtol, c1=c1,
                                      max_halvings=max_halvings))

    @property
    def _params(self) -> list[torch.Tensor]:
        return self.param_groups[0]["params"]

    @property
    def _state(self) -> dict:
        return self.state[self._params[0]]

    @property
    def converged(self) -> bool:
        return bool(self._state.get("converged", torch.zeros((), dtype=torch.bool)))

    def _flat_grad(self) -> torch.Tensor:
        return torch.cat([(torch.zeros_like(p) if p.grad is None else p.grad).reshape(-1) for p in self._params])

    def _flat(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self._params])

    @torch.no_grad()
    def _set(self, flat: torch.Tensor) -> None:
        offset = 0
        for p in self._params:
            p.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()

    def _evaluate(self, closure) -> tuple[float, torch.Tensor | None]:
        from ..numerics import CholeskyError
        try:
            with torch.enable_grad():
                loss = float(torch.as_tensor(closure()).detach())
        except (CholeskyError, FloatingPointError):
            return math.inf, None
        grad = self._flat_grad()
        if not math.isfinite(loss) or not bool(torch.all(torch.isfinite(grad))):
            return math.inf, None
        return loss, grad

    @torch.no_grad()
    def step(self, closure, out_of_time=None):
        """One iteration; ``closure`` zeroes the gradients, evaluates the loss, back-propagates and
        returns the loss. ``out_of_time`` (or ``None``): a callable read before the line search and
        after each rejected trial; when it says ``True`` the step ends untaken (the start re-evaluated
        where a trial moved away from it), so a budget is overrun by at most two evaluations, not the
        search's 31. Returns the loss at the
        parameters the step leaves."""
        group, state = self.param_groups[0], self._state
        if "loss" not in state:
            loss, grad = self._evaluate(closure)
            if grad is None:
                raise FloatingPointError("the objective is not finite at the start of L-BFGS")
            P = grad.numel()
            state.update(loss=torch.tensor(loss, dtype=torch.float64), grad=grad,
                         s=grad.new_zeros(group["history_size"], P), y=grad.new_zeros(group["history_size"], P),
                         count=torch.zeros((), dtype=torch.long), iteration=torch.zeros((), dtype=torch.long),
                         converged=torch.zeros((), dtype=torch.bool))
        f0, g0 = float(state["loss"]), state["grad"]
        if self.converged or (out_of_time is not None and out_of_time()):   # the last evaluation was at x0
            return f0
        x0 = self._flat()
        direction = self._direction(g0)
        slope = float(g0 @ direction)
        if not slope < 0:                                   # not a descent direction: forget the curvature
            state["count"].zero_()
            direction, slope = -g0, -float(g0 @ g0)
        t = group["lr"]
        if int(state["iteration"]) == 0:
            t = min(t, group["lr"] / max(float(g0.abs().sum()), 1e-300))
        for _ in range(group["max_halvings"]):
            self._set(x0 + t * direction)
            f, g = self._evaluate(closure)
            if g is not None and f <= f0 + group["c1"] * t * slope:
                break
            t *= 0.5
            if out_of_time is not None and out_of_time():        # the budget ends mid-search: no step
                self._set(x0)
                self._evaluate(closure)
                return f0
        else:                                               # nothing lowers the loss along the direction
            self._set(x0)
            self._evaluate(closure)
            state["converged"].fill_(True)
            return f0
        self._remember(t * direction, g - g0)
        state["iteration"] += 1
        if f0 - f <= group["ftol"] * max(abs(f0), abs(f), 1.0) or float(g.abs().max()) <= group["gtol"]:
            state["converged"].fill_(True)
        state["loss"].fill_(f)
        state["grad"] = g
        return f

    def _remember(self, s: torch.Tensor, y: torch.Tensor) -> None:
        """Keep the pair (s, y) where its curvature s'y is positive (else BFGS's update would not
        stay positive definite)."""
        state = self._state
        if float(s @ y) <= 1e-10 * float(s.norm() * y.norm()):
            return
        S, Y = state["s"], state["y"]
        k = int(state["count"])
        if k == S.shape[0]:
            S[:-1], Y[:-1] = S[1:].clone(), Y[1:].clone()
            k -= 1
        S[k], Y[k] = s, y
        state["count"].fill_(k + 1)

    def _direction(self, grad: torch.Tensor) -> torch.Tensor:
        """-H grad by the two-loop recursion over the kept pairs."""
        state = self._state
        k = int(state["count"])
        q = -grad.clone()
        S, Y = state["s"][:k], state["y"][:k]
        rho = 1.0 / (S * Y).sum(-1)
        a = torch.empty(k, dtype=grad.dtype, device=grad.device)
        for i in range(k - 1, -1, -1):
            a[i] = rho[i] * (S[i] @ q)
            q -= a[i] * Y[i]
        if k:
            q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1])
        for i in range(k):
            q += S[i] * (a[i] - rho[i] * (Y[i] @ q))
        return q


class Adam(PlainOptimizer):
    """Adam (Kingma & Ba 2015) through ``torch.optim.adam.adam``, PyTorch's own update (fused: one
    pass over each parameter per step instead of seven; on MNIST's inducing inputs, 10 x 200 x 784,
    2.5 ms instead of 11 ms a step), with ``torch.optim.Adam``'s state and settings, so its
    checkpoints load either way, without that class's first-use import (:class:`PlainOptimizer`).
    ``fused`` where every parameter's device has the fused kernel (CPU and CUDA)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 fused: bool = True):
        if not lr > 0:
            raise ValueError(f"lr must be positive, got {lr}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=0.0, amsgrad=False,
                                      maximize=False, foreach=None, capturable=False, differentiable=False,
                                      fused=fused, decoupled_weight_decay=False))

    @torch.no_grad()
    def step(self, closure=None):
        from torch.optim.adam import adam
        loss = None if closure is None else closure()
        group = self.param_groups[0]
        fused = bool(group["fused"])
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = (torch.zeros((), dtype=torch.float32, device=p.device) if fused else
                                 torch.tensor(0.0, dtype=torch.float64 if torch.get_default_dtype() == torch.float64
                                              else torch.float32))
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        if params:
            beta1, beta2 = group["betas"]
            adam(params, grads, exp_avgs, exp_avg_sqs, [], steps, foreach=False if not fused else None,
                 capturable=False, differentiable=False, fused=fused, grad_scale=None, found_inf=None,
                 has_complex=False, amsgrad=False, beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=0.0,
                 eps=group["eps"], maximize=False)
        return loss


def make_optimizer(name: str, params, lr: float):
    """``"adam"`` (mini-batches, the papers' choice; batch training of methods that fit q by
    gradients), ``"sign-adaptive"`` (batch training of the EP methods) or ``"lbfgs"`` (closed-form
    objectives, :class:`LBFGS`). Adam runs fused (one
    pass over each parameter per step instead of seven; on MNIST's inducing inputs, 10 x 200 x 784,
    2.5 ms instead of 11 ms per step) on the devices that have the fused kernel."""
    if name == "adam":
        params = list(params)
        return Adam(params, lr=lr, fused=all(p.device.type in ("cpu", "cuda") for p in params))
    if name == "sign-adaptive":
        return SignAdaptiveSGD(params, lr=lr)
    if name == "lbfgs":
        return LBFGS(params, lr=lr)
    raise ValueError(f"unknown optimizer {name!r}; use 'adam', 'sign-adaptive' or 'lbfgs'")
