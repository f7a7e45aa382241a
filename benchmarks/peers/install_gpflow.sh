#!/usr/bin/env bash
# A virtual environment for GPflow 2.11 (the peer benchmarks compare against it), apart from
# alphagp's own: GPflow needs numpy < 2 and TensorFlow 2.18 with tensorflow-probability 0.25.
#   bash benchmarks/peers/install_gpflow.sh      # creates benchmarks/peers/.venv-gpflow
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 -m venv "$here/.venv-gpflow"
"$here/.venv-gpflow/bin/pip" install -q --upgrade pip
"$here/.venv-gpflow/bin/pip" install -q "numpy<2" "tensorflow-cpu==2.18.*" "tensorflow-probability==0.25.*" \
    "tf-keras==2.18.*" "gpflow==2.11.*" scikit-learn scipy
"$here/.venv-gpflow/bin/python" -c "import gpflow, tensorflow as tf; print('gpflow', gpflow.__version__, 'tensorflow', tf.__version__)"
