"""mark-split writes extra_info.split into verl parquet files, keeping what was there."""

import subprocess
import sys

import pandas as pd
import pytest

from arena_verl.data.convert import mark_split


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


def test_cli_and_a_file_without_extra_info(tmp_path):
    source, target = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pd.DataFrame({"data_source": ["x"]}).to_parquet(source)
    out = subprocess.run(
        [sys.executable, "-m", "arena_verl.data", "mark-split", str(source), "--split", "val", "--output", str(target)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert pd.read_parquet(target).extra_info[0] == {"split": "val"}
    assert "extra_info" not in pd.read_parquet(source).columns


def test_a_non_mapping_extra_info_is_an_error(tmp_path):
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"extra_info": ["not a dict"]}).to_parquet(path)
    with pytest.raises(ValueError, match="extra_info must be a mapping"):
        mark_split(path, "test")


def test_convert_a_local_qa_file_to_verl_parquet(tmp_path):
    from arena_verl.data.convert import convert_qa

    source = tmp_path / "aime.jsonl"
    pd.DataFrame({"problem": ["Find $x$ if $x+1=3$.", "What is 7*6?"], "answer": [2, "42"]}).to_json(
        source, orient="records", lines=True
    )
    out = tmp_path / "aime.parquet"
    assert convert_qa(source, out, data_source="aime2024", split="test") == 2
    frame = pd.read_parquet(out)
    assert list(frame.data_source) == ["aime2024", "aime2024"]
    assert frame.prompt[0][0]["role"] == "user" and frame.prompt[0][0]["content"].startswith("Find $x$")
    assert "\\boxed{}" in frame.prompt[0][0]["content"]
    assert [r["ground_truth"] for r in frame.reward_model] == ["2", "42"]
    assert [(e["split"], e["index"]) for e in frame.extra_info] == [("test", 0), ("test", 1)]


def test_convert_names_what_is_missing(tmp_path):
    from arena_verl.data.convert import convert_qa

    source = tmp_path / "set.parquet"
    pd.DataFrame({"question": ["q"], "answer": ["1"]}).to_parquet(source)
    with pytest.raises(ValueError, match=r"no column \['problem'\]"):
        convert_qa(source, tmp_path / "o.parquet", data_source="x", split="test")
    pd.DataFrame({"problem": ["q", " "], "answer": ["1", "2"]}).to_parquet(source)
    with pytest.raises(ValueError, match="row 1 has no 'problem'"):
        convert_qa(source, tmp_path / "o.parquet", data_source="x", split="test")
    with pytest.raises(ValueError, match="expected a .parquet"):
        convert_qa(tmp_path / "set.csv", tmp_path / "o.parquet", data_source="x", split="test")
