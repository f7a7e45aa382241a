import numpy as np
import pytest

from alphagp.data import DataNotFoundError, data_dir, load_benchmark, load_bundled, read_table


def test_bundled_sets_have_the_documented_shapes():
    X, y = load_bundled("vehicle")
    assert X.shape == (846, 18) and len(np.unique(y)) == 4
    X, y = load_bundled("new_thyroid")
    assert X.shape == (215, 5) and len(np.unique(y)) == 3


def test_missing_data_folder_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("ALPHAGP_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="ALPHAGP_DATA"):
        data_dir()


def test_missing_default_data_folder_names_the_places_it_looked(monkeypatch, tmp_path):
    import alphagp.data
    monkeypatch.delenv("ALPHAGP_DATA", raising=False)
    work = tmp_path / "project" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(alphagp.data, "__file__", str(tmp_path / "site-packages" / "alphagp" / "data" / "__init__.py"))
    with pytest.raises(DataNotFoundError) as err:
        data_dir()
    message = str(err.value)
    assert f"no MANIFEST.json in {tmp_path.resolve() / 'project' / 'shared' / 'data'}" in message
    assert "site-packages" not in message and " or " not in message and "ALPHAGP_DATA" in message
    checkout = tmp_path / "repo"
    (checkout / "src" / "alphagp" / "data").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    monkeypatch.setattr(alphagp.data, "__file__", str(checkout / "src" / "alphagp" / "data" / "__init__.py"))
    with pytest.raises(DataNotFoundError, match=f" or {tmp_path.resolve() / 'shared' / 'data'}"):
        data_dir()
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "shared" / "data" / "MANIFEST.json").write_text("{}")
    assert data_dir() == (tmp_path / "shared" / "data").resolve()


def test_non_numeric_columns_are_named(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,target\n1,x,0\n2,y,1\n")
    with pytest.raises(ValueError, match=r"non-numeric feature columns .*\['b'\]"):
        read_table(path)


def test_benchmark_sets_match_the_manifest():
    try:
        data_dir()
    except DataNotFoundError as err:
        pytest.skip(f"benchmark data absent: {err}")
    X, y = load_benchmark("vowel")
    assert X.shape == (990, 10)  # metadata columns dropped
    X, y = load_benchmark("satimage")
    assert X.shape == (6435, 36) and len(np.unique(y)) == 6
