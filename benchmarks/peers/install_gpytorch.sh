#!/usr/bin/env bash
# A virtual environment for GPyTorch (a peer in benchmarks/time_to_accuracy.py), apart from
# alphagp's own; it reuses the CPU torch wheel pinned in constraints.txt.
#   bash benchmarks/peers/install_gpytorch.sh      # creates benchmarks/peers/.venv-gpytorch
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv-gpytorch"
"$here/.venv-gpytorch/bin/pip" install -q --upgrade pip
# torch as constraints.txt pins it, from the configured index (set PIP_EXTRA_INDEX_URL to
# https://download.pytorch.org/whl/cpu where the default index has no CPU wheel)
PIP_RETRIES=0 "$here/.venv-gpytorch/bin/pip" install -q -c "$here/../../constraints.txt" torch "gpytorch==1.14.*" scikit-learn
"$here/.venv-gpytorch/bin/python" -c "import gpytorch, torch; print('gpytorch', gpytorch.__version__, 'torch', torch.__version__)"
