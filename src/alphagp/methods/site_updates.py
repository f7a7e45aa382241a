"""The damped, validated site update of the EP methods (EP, SEP, PEP, GFITC), written once.

A factor's new site comes from moment matching; it is used only if the factor's cavity is proper
and the new site is valid: finite natural parameters, non-negative precision and positive
moment-matching denominators (1 + v g2 for the Heaviside factor, 1 - sigma G for the robust-max
one). A used site is damped, rho new + (1 - rho) old (EP paper Appendix E; alpha paper A.5); the
others keep their old sites and are counted by the method.
"""

from __future__ import annotations

import torch


def valid_sites(precision: torch.Tensor, natural: torch.Tensor, denominators) -> torch.Tensor:
    """``[...]`` whether each factor's new site is valid, for ``precision`` and ``natural``
    ``[..., K]`` (K components a factor) and moment-matching ``denominators`` ``[...]`` each."""
    ok = torch.isfinite(precision).all(-1) & torch.isfinite(natural).all(-1) & (precision >= 0).all(-1)
    for denominator in denominators:
        ok = ok & (denominator > 0)
    return ok


def damped(new: torch.Tensor, old: torch.Tensor, keep: torch.Tensor, rho: float) -> torch.Tensor:
    """``rho new + (1 - rho) old`` where ``keep``, ``old`` elsewhere (shapes broadcast)."""
    return torch.where(keep, rho * new + (1 - rho) * old, old)


def power_ep_sites(mu, sigma, g_m, g_v, alpha: float = 1.0):
    """New rank-one sites of power EP on a deterministic likelihood (alpha paper A.14-A.21), per
    class component of each factor: from the cavity mean ``mu`` and variance ``sigma`` of h and the
    derivatives ``g_m``, ``g_v`` of log Z in the cavity's mean and variance, all ``[...]``: with
    G = g_m^2 - 2 g_v, alpha C1 = G / (1 - sigma G) and alpha C2 = g_m + alpha C1 (mu + sigma g_m).

    Returns precision C1 and natural parameter C2 ``[...]`` and their validity ``[...]``.
    """
    G = g_m * g_m - 2.0 * g_v
    denom = 1.0 - sigma * G
    precision = G / denom / alpha
    natural = (g_m + alpha * precision * (mu + sigma * g_m)) / alpha
    return precision, natural, valid_sites(precision[..., None], natural[..., None], (denom,))


def heaviside_pair_sites(m_w, v_w, m_l, v_l, g1, g2, alpha: float = 1.0):
    """New sites of the pairwise Heaviside factors Phi(f_y - f_c) (EP paper eq. 48-55; power EP
    A.17-A.20 divide by alpha): from the cavity means and variances of the winner's (``m_w``,
    ``v_w``) and the loser's (``m_l``, ``v_l``) latent value and the first and second derivatives
    ``g1``, ``g2`` of the log tilted normaliser in the difference, all ``[...]``.

    Returns precision and natural parameter ``[..., 2]`` (winner, loser) and their validity ``[...]``.
    """
    denom_w = 1.0 + v_w * g2
    denom_l = 1.0 + v_l * g2
    precision = torch.stack((-g2 / denom_w, -g2 / denom_l), -1) / alpha
    natural = torch.stack(((g1 - m_w * g2) / denom_w, (-g1 - m_l * g2) / denom_l), -1) / alpha
    return precision, natural, valid_sites(precision, natural, (denom_w, denom_l))
