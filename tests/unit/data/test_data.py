"""mark-split writes extra_info.split into verl parquet files, keeping what was there; has-split reads it."""

import pandas as pd
import pytest

from arena_verl.data.convert import main, mark_split


def test_mark_split_keeps_other_fields(tmp_path):
    path = tmp_path / "test.parquet"
    pd.DataFrame(
        {"data_source": ["math", "math"], "extra_info": [{"index": 0}, None], "prompt": ["a", "b"]}
    ).to_parquet(path)
    assert mark_split(path, "test") == 2
    frame = pd.read_parquet(path)
    # Parquet stores extra_info as one struct type: every row gets every key (None where it had none).
    assert frame.extra_info[0]["index"] == 0 and frame.extra_info[0]["split"] == "test"
    assert frame.extra_info[1]["split"] == "test"
    assert list(frame.prompt) == ["a", "b"]


def test_cli_and_a_file_without_extra_info(tmp_path, capsys):
    """In this process; ``python -m arena_verl.data mark-split`` as a process is in tests/integration."""
    source, target = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pd.DataFrame({"data_source": ["x"]}).to_parquet(source)
    assert main(["mark-split", str(source), "--split", "val", "--output", str(target)]) == 0
    printed = capsys.readouterr()
    assert printed.err == "" and printed.out == f"1 rows marked split='val' -> {target}\n"
    assert pd.read_parquet(target).extra_info[0] == {"split": "val"}
    assert "extra_info" not in pd.read_parquet(source).columns


def test_a_non_mapping_extra_info_is_an_error(tmp_path):
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"extra_info": ["not a dict"]}).to_parquet(path)
    with pytest.raises(ValueError, match="extra_info must be a mapping"):
        mark_split(path, "test")


def test_has_split_exit_status_in_process(tmp_path, capsys):
    path = tmp_path / "val.parquet"
    pd.DataFrame({"extra_info": [{"split": "test"}, {"split": "val"}]}).to_parquet(path)
    assert main(["has-split", str(path), "test", "val"]) == 0
    assert main(["has-split", str(path), "test"]) == 1  # a split outside SPLITS
    assert main(["has-split", str(tmp_path / "missing.parquet"), "test"]) == 2  # unreadable, never "mark a copy"
    assert capsys.readouterr().err.startswith("error: cannot read the splits of")
