"""Inference methods; each is a ``torch.nn.Module`` with ``local_update``, ``objective``,
``predict_f`` and ``predict_proba`` (see DESIGN.md)."""

from .ep import ScalableEP

__all__ = ["ScalableEP"]
