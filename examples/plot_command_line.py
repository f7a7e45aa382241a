"""
The command line, end to end
============================

``alphagp fit`` trains on a CSV file and writes a model file, ``alphagp predict`` writes class
probabilities for new rows, ``alphagp evaluate`` scores labelled rows and draws a reliability
diagram. Here the commands run on the bundled Vehicle data written to CSV files (in a shell, type
the same commands without ``python -m``).
"""

# %%
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

from alphagp.data import load_bundled

folder = Path(tempfile.mkdtemp())
X, y = load_bundled("vehicle")
frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(label=y)
train, test = train_test_split(frame, test_size=0.2, stratify=frame["label"], random_state=0)
train.to_csv(folder / "train.csv", index=False)
test.to_csv(folder / "test.csv", index=False)


def alphagp(*args: str) -> None:
    """Run ``alphagp ARGS`` and show what it prints."""
    print("$ alphagp " + " ".join(args))
    done = subprocess.run([sys.executable, "-m", "alphagp", *args], cwd=folder, capture_output=True, text=True,
                          check=False)   # checked after its output is shown
    print(done.stdout + done.stderr)
    done.check_returncode()


# %%
# Fit: every estimator parameter has a flag (``alphagp fit --help``); flags not given keep the
# estimator's defaults.
alphagp("fit", "--data", "train.csv", "--target", "label", "--method", "ep", "--n-inducing", "30",
        "--model", "vehicle.safetensors")

# %%
# Predict: the columns are matched by name, so the label column may stay in the file.
alphagp("predict", "--model", "vehicle.safetensors", "--data", "test.csv", "--target", "label",
        "--output", "proba.csv")
print(pd.read_csv(folder / "proba.csv").head())

# %%
# Evaluate, with a reliability diagram written beside the model.
alphagp("evaluate", "--model", "vehicle.safetensors", "--data", "test.csv", "--target", "label",
        "--plot", "reliability.png")
print("figure written:", (folder / "reliability.png").exists())
