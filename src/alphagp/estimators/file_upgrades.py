"""Model files written by earlier versions, brought to today's layout in one place.

Each upgrade takes a file's content (the dict :func:`~alphagp.serialization.read` returns) in the
layout an earlier version wrote and returns it in today's; :meth:`GPEstimatorBase._read
<alphagp.estimators.base.GPEstimatorBase._read>` applies them all before it rebuilds anything,
so the readers see one layout. The serialization layer checks format version and checksum and
knows nothing of estimators or methods; an upgrade that needs the method registry lives here,
above it. A buffer renamed inside a method's state is declared by the method itself
(``RENAMED_STATE``), because checkpoints carry method state too.
"""

from __future__ import annotations

from ..methods import method_parameters, method_spec


def _mean_and_scale(content: dict) -> dict:
    """Deep-GP files of format 1 stored the standardisation as ``x_mean`` and ``x_scale``."""
    if "mean" not in content and "x_mean" in content:
        content["mean"], content["scale"] = content.pop("x_mean"), content.pop("x_scale")
    return content


def _early_stopping_record(content: dict) -> dict:
    """Files before validated early stopping have no validation scores or best iteration."""
    content.setdefault("validation_scores", None)
    content.setdefault("best_iteration", None)
    return content


def _resolved_settings(content: dict) -> dict:
    """Classifier files before the "auto" settings stored only the parameters they used: the
    resolved batch size, inducing-point initialisation and early stopping are those parameters."""
    if "method" in content and "settings" not in content:
        params = content["params"]
        content["settings"] = {key: params[key] for key in ("batch_size", "inducing_init", "early_stopping")}
    return content


def _registered_likelihood(content: dict) -> dict:
    """Classifier files before the likelihood registry name the method's likelihood in its
    configuration (which must be the registered one) and carry Monte Carlo arguments robust-max
    VI never used; both are dropped."""
    method = content.get("method")
    if not isinstance(method, dict) or "likelihood" not in method.get("config", {}):
        return content
    name, config = method["name"], method["config"]
    if config["likelihood"] != method_spec(name).likelihood:
        raise ValueError(f"method {name!r} has the {method_spec(name).likelihood!r} likelihood; "
                         f"the file names {config['likelihood']!r}")
    taken = method_parameters(name)
    method["config"] = {k: v for k, v in config.items()
                        if k != "likelihood" and (k in taken or k not in ("n_mc_samples", "seed"))}
    return content


#: applied in this order to every file an estimator reads
UPGRADES = (_mean_and_scale, _early_stopping_record, _resolved_settings, _registered_likelihood)


def upgrade(content: dict) -> dict:
    """``content`` in today's layout (changed in place and returned)."""
    for step in UPGRADES:
        content = step(content)
    return content
