"""Shared fixtures and helpers. The tests mirror the package: ``tests/methods`` holds the tests of
``alphagp/methods``, ``tests/estimators`` of ``alphagp/estimators`` (and the model-file fixtures),
``tests/likelihoods``, ``tests/training`` and ``tests/data`` likewise; a top-level module's tests
sit at the top (``test_kernels.py`` for ``alphagp/kernels.py``), and ``tests/project`` checks the
repository around the package (README and documentation snippets, examples, benchmark scripts)."""

from pathlib import Path

import numpy as np
import pytest
import torch

torch.set_num_threads(2)

#: the repository's root (README, examples, benchmarks)
REPO = Path(__file__).resolve().parents[1]


#: the slow checks (2.5 s or more each on one thread, so the quick command stays under 3 CPU minutes):
#: marked ``slow``, left out of the README's test command (``-m "not slow"`` in pyproject.toml)
#: and run by CI (``.ci/run``) after it. A test that grows slow joins this list; a README snippet's
#: id is its line, so an edit above it moves the id here too (tests/project/test_slow_list.py).
SLOW = frozenset((
    # issue 79: full default fits on 58 rows, every candidate on every repeated fold (no racing there)
    "tests/estimators/test_model_selection.py::test_the_class_frequencies_are_kept_where_nothing_beats_them",
    "tests/estimators/test_model_selection.py::test_the_inducing_clip_is_said_once_of_the_rows_given_and_not_for_auto",
    "tests/estimators/test_fuzz_edges.py::test_fuzzed_tables_weights_and_streams_fit_or_refuse_clearly",
    "tests/estimators/test_dgp_estimators.py::test_scikit_learn_check_estimator[DeepGPClassifier-30]",
    "tests/estimators/test_dgp_estimators.py::test_scikit_learn_check_estimator[DeepGPRegressor-100]",
    "tests/estimators/test_edges.py::test_prediction_over_many_classes_stays_within_a_gigabyte",
    "tests/estimators/test_edges.py::test_the_command_line_reads_a_model_once_while_another_process_replaces_it",
    "tests/estimators/test_edges.py::test_the_next_write_removes_the_temporary_file_of_a_killed_writer",
    "tests/estimators/test_estimator.py::test_checkpoint_resume_reproduces_the_uninterrupted_fit",
    "tests/estimators/test_estimator.py::test_early_stopped_fit_stays_finished_when_resumed",
    "tests/estimators/test_estimator.py::test_fit_stopped_by_a_callback_continues_from_its_checkpoint",
    "tests/estimators/test_ordinal.py::test_scikit_learn_check_estimator",
    "tests/estimators/test_model_files.py::test_loading_while_another_process_saves_gives_one_whole_model",
    "tests/estimators/test_properties.py::test_random_small_problems_give_normalised_probabilities",
    "tests/methods/test_alpha_family.py::test_apep_with_one_data_point_equals_pep",
    "tests/methods/test_augmented.py::test_gibbs_predictions_agree_with_an_independent_importance_sampler",
    "tests/methods/test_dgp.py::test_energy_gradient_matches_finite_differences[dims1-robust_max]",
    "tests/methods/test_ep.py::test_converged_ep_matches_tilted_moments_by_monte_carlo[0.5]",
    "tests/methods/test_ep.py::test_minibatch_and_batch_ep_reach_comparable_nll",
    "tests/methods/test_exact_posterior.py::test_two_gibbs_chains_agree",
    "tests/methods/test_gibbs.py::test_predictions_agree_with_an_independent_sampler_within_monte_carlo_error",
    "tests/methods/test_gibbs.py::test_stationary_moments_match_two_dimensional_quadrature",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[README.md#quickstart]",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[guide.md#user-guide]",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[guide.md#options]",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[guide.md#weights-and-uncertainty-2]",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[index.md#alphagp]",
    "tests/project/test_examples.py::test_distributed_example_under_torchrun",
    "tests/project/test_examples.py::test_fashion_ood_example_on_a_slice",
    "tests/project/test_examples.py::test_mnist_memmap_example_on_a_slice",
    "tests/project/test_resumable_queues.py::test_mnist_queue_skips_a_run_it_holds",
    "tests/test_cli.py::test_demo_prints_metrics",
    "tests/test_cli.py::test_version_module_entry_and_plain_help",
    "tests/test_distributed.py::test_broadcast_state_gives_every_process_the_first_ones_state",
    "tests/test_distributed.py::test_deep_gp_clamp_count_sums_over_processes",
    "tests/test_distributed.py::test_deep_gps_on_two_processes_equal_one[classifier]",
    "tests/test_distributed.py::test_deep_gps_on_two_processes_equal_one[regressor]",
    "tests/test_distributed.py::test_full_batch_ep_on_two_processes_equals_one",
    "tests/test_distributed.py::test_split_fits_equal_one_process[2 class blocks x 2 row blocks]",
    "tests/test_distributed.py::test_split_fits_equal_one_process[classes, 3 processes]",
    "tests/test_distributed.py::test_split_fits_equal_one_process[classes, 2 processes]",
    "tests/test_distributed.py::test_split_fits_equal_one_process[rows, 2 processes]",
    "tests/test_distributed.py::test_two_processes_validate_and_stop_as_one",
    "tests/test_uncertainty.py::test_the_deep_gp_classifier_splits_its_uncertainty_too[False]",
    # issue 80: the README's command under 3 CPU minutes on one core
    "tests/estimators/test_sample_weight.py::test_tiny_weights_fit_where_a_method_takes_them_and_a_candidate_that_refuses_is_left_out[1e-40]",
    "tests/estimators/test_sample_weight.py::test_tiny_weights_fit_where_a_method_takes_them_and_a_candidate_that_refuses_is_left_out[1e-300]",
    "tests/methods/test_exact_ep.py::test_parallel_ep_in_the_differences_reaches_sequential_ep_in_f_space[3-0.5]",
    "tests/estimators/test_partial_fit.py::test_the_defaults_fitted_model_says_what_continues_it_and_what_does_not",
    # issue 68: the README's command under 4 minutes on one core (those of 2.5 s or more there)
    "tests/data/test_held_out.py::test_a_memory_mapped_fit_scores_the_same_held_out_rows",
    "tests/data/test_tables.py::test_a_fitted_table_model_round_trips_through_its_file[auto]",
    "tests/estimators/test_dgp_estimators.py::test_classifier_with_string_labels_and_two_classes",
    "tests/estimators/test_dgp_estimators.py::test_regressor_learns_a_smooth_function_in_the_targets_units",
    "tests/estimators/test_estimator.py::test_early_stopping_stops_where_the_objective_flattened",
    "tests/estimators/test_model_selection.py::test_the_choice_survives_model_files_and_checkpoints",
    "tests/estimators/test_properties.py::test_deep_gps_on_random_small_problems_give_finite_predictions",
    "tests/estimators/test_validation_and_budget.py::test_a_real_fit_keeps_the_state_of_the_best_validation_nll",
    "tests/methods/test_alpha_family.py::test_energy_tends_to_the_vi_bound_as_alpha_goes_to_zero[apep]",
    "tests/methods/test_alpha_family.py::test_energy_tends_to_the_vi_bound_as_alpha_goes_to_zero[pep]",
    "tests/methods/test_alpha_family.py::test_pep_at_alpha_one_is_ep_where_the_likelihoods_coincide",
    "tests/methods/test_dgp.py::test_monte_carlo_z_is_unbiased_and_the_bias_of_its_log_falls_like_one_over_s",
    "tests/methods/test_ep.py::test_converged_ep_matches_tilted_moments_by_monte_carlo[1.0]",
    "tests/methods/test_ep_reference.py::test_fitted_predictions_match_a_dense_computation_from_the_stored_sites[ep]",
    "tests/methods/test_ep_reference.py::test_fitted_predictions_match_a_dense_computation_from_the_stored_sites[sep]",
    "tests/methods/test_exact_posterior.py::test_predictive_probabilities_agree_with_the_exact_posterior[params0-0.1-0.03]",
    "tests/methods/test_exact_posterior.py::test_predictive_probabilities_agree_with_the_exact_posterior[params1-0.2-0.05]",
    "tests/methods/test_exact_posterior.py::test_predictive_probabilities_agree_with_the_exact_posterior[params2-0.08-0.02]",
    "tests/methods/test_gfitc.py::test_gfitc_refuses_mini_batches_and_fits_end_to_end",
    "tests/methods/test_gibbs.py::test_gibbs_through_the_estimator_reports_diagnostics_and_round_trips",
    "tests/methods/test_mini_batch_stability.py::test_per_point_methods_stay_stable_on_mini_batches[ep]",
    "tests/methods/test_mini_batch_stability.py::test_per_point_methods_stay_stable_on_mini_batches[pep]",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[guide.md#deep-gps]",
    "tests/project/test_documentation_snippets.py::test_snippet_runs[ordinal.md#what-it-returns]",
    "tests/project/test_slow_list.py::test_every_slow_id_names_a_collected_test",
    "tests/test_cli.py::test_demo_honours_n_inducing",
    "tests/test_conformal.py::test_class_conditional_sets_survive_a_model_file_and_older_files_say_what_to_do",
    "tests/test_uncertainty.py::test_the_deep_gp_classifier_splits_its_uncertainty_too[True]",
))


def benchmarks_module(name: str):
    """The module ``name`` of ``benchmarks/`` (imported with that folder on the path for the import
    alone: its scripts import each other by name)."""
    import importlib
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in SLOW:
            item.add_marker(pytest.mark.slow)


def fake_fit_result(score: float = 0.5, scripted: float | None = None):
    """A faked GPClassifier fit's :class:`~alphagp.estimators.run.FitResult` (the selection's tests
    replace ``GPClassifier._fit_result``): its held-out score ``score`` (one epoch) and, for a faked
    scoring, the probability ``scripted`` its model gives every class."""
    from types import SimpleNamespace

    from alphagp.estimators.run import FitResult
    plan = SimpleNamespace(dtype="float64", device="cpu", **dict.fromkeys(
        ("method", "n_inducing", "batch_size", "inducing_init", "early_stopping", "optimize_inducing", "alpha")))
    return FitResult(plan, np.zeros(2), np.ones(2), SimpleNamespace(scripted=scripted), [], 0, [score], 1,
                     made={"classes": None})


class Interrupt(Exception):
    """Raised by :func:`interrupt_at` to stop a fit as a crash would."""


def interrupt_at(epoch: int):
    """A training callback that raises :class:`Interrupt` after ``epoch``."""
    def stop(state):
        if state.epoch == epoch:
            raise Interrupt
    return stop


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def thyroid():
    """The bundled New-thyroid set ``(X [215, 5], y [215])``, three classes."""
    from alphagp.data import load_bundled
    return load_bundled("new_thyroid")


def gp_prior_problem(n_train=400, n_test=400, n_classes=3, seed=0, lengthscale=1.0):
    """Section 4.2 of the scalable-EP paper: x uniform in [-2.5, 2.5]^2, latent functions drawn
    from the GP prior, labels by argmax. Returns X_train, y_train, X_test, y_test, F_test."""
    from sklearn.gaussian_process.kernels import RBF
    g = np.random.default_rng(seed)
    n = n_train + n_test
    X = g.uniform(-2.5, 2.5, (n, 2))
    K = RBF(lengthscale)(X) + 1e-8 * np.eye(n)
    F = np.linalg.cholesky(K) @ g.standard_normal((n, n_classes))
    y = F.argmax(1)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], F[n_train:]


def rewrite_model_header(raw: bytes, edit, keep_checksum: bool = True) -> bytes:
    """The bytes ``raw`` of an alphagp file with its JSON header passed through ``edit`` (called with
    the parsed header: ``kind``, ``format_version``, ``content``, ...); the stored checksum is kept
    as it was, or dropped (``keep_checksum=False``, as in files of format 1)."""
    import json
    import struct
    n = struct.unpack("<Q", raw[:8])[0]
    table = json.loads(raw[8:8 + n])
    meta = json.loads(table["__metadata__"]["alphagp"])
    edit(meta)
    table["__metadata__"]["alphagp"] = json.dumps(meta)
    if not keep_checksum:
        del table["__metadata__"]["alphagp_sha256"]
    blob = json.dumps(table).encode()
    blob += b" " * (-len(blob) % 8)
    return struct.pack("<Q", len(blob)) + blob + raw[8 + n:]


def edited_model_file(path, out, header=None, tensors=None):
    """A copy of model file ``path`` with its header (``header(h)``) and tensors (``tensors(t)``)
    edited in place, written with a recomputed checksum, as a tool that edits files would."""
    import json
    import struct

    from alphagp import serialization
    raw = path.read_bytes()
    table = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    text = table["__metadata__"]["alphagp"]
    if header is not None:
        edited = json.loads(text)
        header(edited)
        text = json.dumps(edited)
    values = serialization.load_tensors(raw)
    if tensors is not None:
        tensors(values)
    out.write_bytes(serialization.save_tensors(values, metadata={
        "alphagp": text, "alphagp_sha256": serialization.checksum(text, values)}))
    return out
