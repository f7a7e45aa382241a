"""Model files written by earlier versions, brought to today's layout in one place.

Each upgrade takes a file's content (the dict :func:`~alphagp.serialization.read` returns) in the
layout an earlier version wrote and returns it in today's; :func:`.model_file.read` applies them all before it rebuilds anything,
so the readers see one layout. The serialization layer checks format version and checksum and
knows nothing of estimators or methods; an upgrade that needs the method registry lives here,
above it. A buffer renamed inside a method's state is declared by the method itself
(``RENAMED_STATE``), because checkpoints carry method state too.
"""

from __future__ import annotations

from ..labels import plain
from ..methods import method_parameters, method_spec
from ..training import uses_mini_batches
from .fit_plan import default_learning_rate


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


def _training_plan(params: dict, n_data: int, batch_size, optimizer: str, early_stopping: bool) -> dict:
    """The :class:`~alphagp.estimators.fit_plan.TrainingPlan` fields of an older file's
    parameters and recorded decisions."""
    rate = params.get("learning_rate")
    return {"n_data": int(n_data), "batch_size": batch_size, "mini_batches": uses_mini_batches(batch_size, n_data),
            "optimizer": optimizer, "learning_rate": default_learning_rate(optimizer) if rate is None else float(rate),
            "dtype": params["dtype"], "device": str(params.get("device") or "cpu"),
            "standardize": bool(params.get("standardize", True)),
            "learning_rate_decay": params.get("learning_rate_decay", 1.0), "max_iter": params.get("max_iter"),
            "max_time": params.get("max_time"), "tol": params.get("tol"),
            "n_iter_no_change": params.get("n_iter_no_change"), "early_stopping": bool(early_stopping),
            "validation_fraction": params.get("validation_fraction", 0.1), "random_state": params.get("random_state")}


def _classifier_plan(content: dict) -> dict:
    """Classifier files before the fit plan was their one record of the fit's decisions kept them in
    ``"settings"`` (batch size, inducing-point initialisation, early stopping) and
    ``"optimize_inducing"``, beside the method's configuration: their plan is built from those
    (the kernel started from the fixed start then); both records go."""
    method = content.get("method")
    if not isinstance(method, dict):
        return content
    settings, learnt = content.pop("settings", None), content.pop("optimize_inducing", None)
    if content.get("fit_plan"):
        return content
    params, config, name = content["params"], method["config"], method["name"]
    batch_size = settings["batch_size"]
    n_data = int(config.get("n_data", 0))
    optimizer = ("adam" if uses_mini_batches(batch_size, n_data)
                 else method_spec(name).cls.CAPABILITIES.batch_optimizer)
    content["fit_plan"] = {
        **_training_plan(params, n_data, batch_size, optimizer, settings["early_stopping"]),
        "method": name, "alpha": config.get("alpha"), "damping": config.get("damping"),
        "epsilon": config.get("epsilon"), "method_params": params.get("method_params") or {},
        "optimize_inducing": bool(params.get("optimize_inducing") if learnt is None else learnt),
        "n_inducing": int(content["state"]["inducing_points"].shape[1]), "inducing_init": settings["inducing_init"],
        "shared_hyperparameters": _shared(params.get("shared_hyperparameters", False), name),
        "kernel_params": plain(params.get("kernel_params") or {}),
        "optimize_hyperparameters": bool(params.get("optimize_hyperparameters", True)), "kernel_init": "fixed"}
    return content


def _deep_plan(content: dict) -> dict:
    """Deep-GP files before the fit plan record the architecture in the model's configuration and
    the parameters: their plan is built from those (early stopping was on where the file has
    validation scores)."""
    model = content.get("model")
    if not isinstance(model, dict) or content.get("fit_plan"):
        return content
    params, config = content["params"], model["config"]
    layers = config["architecture"]                    # [H, M, D] per layer
    content["fit_plan"] = {
        **_training_plan(params, config["n_data"], params.get("batch_size"), "adam",
                         content.get("validation_scores") is not None),
        "n_layers": len(layers), "n_hidden": int(layers[0][0]) if len(layers) > 1 else int(params.get("n_hidden") or 0),
        "n_inducing": int(layers[0][1]), "first_layer_kernel": params.get("first_layer_kernel", "rbf"),
        "hidden_mean_scale": float(params.get("hidden_mean_scale", 0.0)), "alpha": float(config["alpha"]),
        "n_samples": int(config["n_samples"]), "likelihood": config["likelihood"], "n_outputs": int(layers[-1][0])}
    return content


#: applied in this order to every file an estimator reads
def _alpha_scores_as_selection(content: dict) -> dict:
    """Files before ``alpha="auto"`` became candidates of the one selection kept its mean held-out
    log-likelihood per alpha in ``alpha_scores``: the same scores as the selection's record
    (``cv_results_``: each alpha a candidate, its mean held-out NLL the negated score, the chosen
    one ranked first; the per-fold scores and seconds were not kept)."""
    scores = content.pop("alpha_scores", None)
    if not scores or content.get("selection"):
        return content
    method = content["method"]["name"]
    alphas = sorted(scores, key=float)
    nll = [-float(scores[a]) for a in alphas]
    order = sorted(range(len(alphas)), key=lambda i: nll[i])
    rank = [0] * len(alphas)
    for r, i in enumerate(order, start=1):
        rank[i] = r
    names = [f"{method}(alpha={float(a):g})" for a in alphas]
    content["selection"] = {"candidate": names[order[0]], "scheme": "cv", "cv_results": {
        "candidate": names, "params": [{"method": method, "alpha": float(a)} for a in alphas],
        "mean_test_nll": nll, "std_test_nll": [float("nan")] * len(alphas),
        "mean_fit_time": [float("nan")] * len(alphas), "rank_test_nll": rank}}
    return content


UPGRADES = (_mean_and_scale, _early_stopping_record, _resolved_settings, _registered_likelihood, _classifier_plan,
            _deep_plan, _alpha_scores_as_selection)


def upgrade(content: dict) -> dict:
    """``content`` in today's layout (changed in place and returned)."""
    for step in UPGRADES:
        content = step(content)
    return content


def _shared(value, name: str) -> bool:
    """``shared_hyperparameters`` as a plan holds it: ``"auto"`` resolved by method ``name``."""
    return method_spec(name).cls.AUTO_SETTINGS.get("shared_hyperparameters", False) if value == "auto" else bool(value)
