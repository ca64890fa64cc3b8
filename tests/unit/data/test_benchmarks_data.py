"""The benchmark presets turn local copies of the public sets into verl parquet files that verl loads and scores."""

import base64
import json
import pickle
import subprocess
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from arena_verl.data.benchmarks import PRESETS, DataError, Options, gpqa_choices, prepare
from arena_verl.data.verl_layout import MATH_SUFFIX

DAPO_PREFIX = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n"
)
DAPO_SUFFIX = '\n\nRemember to put your answer on its own line after "Answer:".'


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def dapo_row(problem, answer, uid):
    return {
        "data_source": "math_dapo",
        "prompt": [{"role": "user", "content": DAPO_PREFIX + problem + DAPO_SUFFIX}],
        "ability": "MATH",
        "reward_model": {"style": "rule-lighteval/MATH_v2", "ground_truth": answer},
        "extra_info": {"index": uid},
    }


def gpqa_records(count=3):
    return [
        {
            "Record ID": f"rec{i}",
            "Question": f"Which particle is number {i}?",
            "Correct Answer": f"right {i}",
            "Incorrect Answer 1": f"wrong {i}a",
            "Incorrect Answer 2": f"wrong {i}b",
            "Incorrect Answer 3": f"wrong {i}c",
        }
        for i in range(count)
    ]


def compressed(cases):
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def lcb_records():
    functional = {
        "question_id": "3000",
        "question_title": "Add two",
        "question_content": "Return a + b, as text when as_text is true.",
        "platform": "leetcode",
        "contest_date": "2025-03-01T00:00:00",
        "difficulty": "easy",
        "starter_code": "class Solution:\n    def addUp(self, a: int, b: int, as_text: bool):\n        ",
        "metadata": json.dumps({"func_name": "addUp"}),
        "public_test_cases": json.dumps([{"input": "1\n2\nfalse", "output": "3", "testtype": "functional"}]),
        "private_test_cases": compressed([{"input": "2\n2\ntrue", "output": '"4"', "testtype": "functional"}]),
    }
    stdin = {
        "question_id": "abc400_a",
        "question_title": "Double",
        "question_content": "Read n and print 2n.",
        "platform": "atcoder",
        "contest_date": "2025-04-05T00:00:00",
        "difficulty": "easy",
        "starter_code": "",
        "metadata": "{}",
        "public_test_cases": json.dumps([{"input": "3\n", "output": "6\n", "testtype": "stdin"}]),
        "private_test_cases": compressed([{"input": "10\n", "output": "20\n", "testtype": "stdin"}]),
    }
    old = {**stdin, "question_id": "abc300_a", "contest_date": "2024-06-01T00:00:00", "question_content": "Old."}
    return [functional, stdin, old]


@pytest.fixture
def inputs(tmp_path):
    """One small input per preset, in the layouts the public sets ship (parquet, jsonl, csv)."""
    folder = tmp_path / "in"
    folder.mkdir()
    aime24 = folder / "aime-2024.parquet"  # verl's layout, each problem repeated (as DAPO's copy is)
    pd.DataFrame([dapo_row("Find $x$ if $x+1=3$.", "2", "u0"), dapo_row("Compute $6 \\cdot 7$.", "42", "u1")] * 3)\
        .to_parquet(aime24)  # fmt: skip
    aime25 = write_jsonl(folder / "aime_2025.jsonl", [
        {"problem_idx": 1, "problem": "Find the answer.", "answer": 33, "problem_type": ["Algebra"]},
        {"problem_idx": 2, "problem": "Find another.", "answer": "070", "problem_type": ["Geometry"]},
    ])  # fmt: skip
    aime26 = folder / "aime_2026.parquet"
    pd.DataFrame({"problem_idx": [1, 2], "problem": ["P one.", "P two."], "answer": [5, 999]}).to_parquet(aime26)
    beyond = write_jsonl(folder / "beyondaime.jsonl", [{"problem": "Hard one.", "answer": "12345"}])
    gpqa = folder / "gpqa_diamond.csv"
    pd.DataFrame(gpqa_records()).to_csv(gpqa, index=False)
    lcb = write_jsonl(folder / "test6.jsonl", lcb_records())
    train = folder / "dapo-math-17k.parquet"
    pd.DataFrame([dapo_row("Train problem one.", "1", "t0"), dapo_row("Train problem two.", "2", "t1")])\
        .to_parquet(train)  # fmt: skip
    return {"aime2024": aime24, "aime2025": aime25, "aime2026": aime26, "beyondaime": beyond,
            "gpqa_diamond": gpqa, "livecodebench_v6": lcb, "train_mix": train}  # fmt: skip


def convert(tmp_path, preset, source, **kwargs):
    output = tmp_path / "out" / f"{preset}.parquet"
    report = prepare(preset, [source], output, **kwargs)
    return report, pd.read_parquet(output)


def assert_verl_schema(frame, split):
    assert list(frame.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    for row in frame.itertuples():
        assert [m["role"] for m in row.prompt] == ["user"] and row.prompt[0]["content"].strip()
        assert row.reward_model["style"] == "rule"
        assert isinstance(row.reward_model["ground_truth"], str) and row.reward_model["ground_truth"]
        assert row.extra_info["split"] == split
    assert [info["index"] for info in frame.extra_info] == list(range(len(frame)))


def test_every_preset_writes_files_verls_dataset_loads_together(tmp_path, inputs):
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from arena_verl.testing.toy import build_toy_tokenizer

    assert set(inputs) == set(PRESETS)
    outputs = {}
    for preset, source in inputs.items():
        report, frame = convert(tmp_path, preset, source)
        assert_verl_schema(frame, "train" if preset == "train_mix" else "test")
        assert report.rows == len(frame) and set(frame.data_source) == {report.data_source}
        outputs[preset] = tmp_path / "out" / f"{preset}.parquet"
    evaluation = [str(path) for preset, path in outputs.items() if preset != "train_mix"]
    tokenizer = AutoTokenizer.from_pretrained(str(build_toy_tokenizer(tmp_path / "tok")))
    config = OmegaConf.create({"cache_dir": str(tmp_path / "cache"), "max_prompt_length": 4096,
                               "filter_overlong_prompts_workers": 1})  # fmt: skip
    # VAL_FILES as a list: verl concatenates the files, so their extra_info structs must merge.
    dataset = RLHFDataset(evaluation, tokenizer, config)
    expected = sum(len(pd.read_parquet(path)) for path in evaluation)
    assert len(dataset) == expected == 2 + 2 + 2 + 1 + 3 + 3
    sources = {dataset[i]["data_source"] for i in range(len(dataset))}
    assert sources == {"aime2024", "aime2025", "aime2026", "beyondaime", "gpqa_diamond", "codecontests"}
    item = dataset[0]
    assert item["raw_prompt"][0]["role"] == "user" and item["extra_info"]["split"] == "test"
    train = RLHFDataset([str(outputs["train_mix"])], tokenizer, config)
    assert {train[i]["extra_info"]["split"] for i in range(len(train))} == {"train"}


def test_aime2024_in_verls_layout_is_unwrapped_and_deduplicated(tmp_path, inputs):
    report, frame = convert(tmp_path, "aime2024", inputs["aime2024"])
    assert report.dropped_duplicates == 4 and len(frame) == 2
    assert frame.prompt[0][0]["content"] == f"Find $x$ if $x+1=3$.\n\n{MATH_SUFFIX}"
    assert "Answer:" not in frame.prompt[1][0]["content"]
    assert [rm["ground_truth"] for rm in frame.reward_model] == ["2", "42"]
    assert frame.data_source.tolist() == ["aime2024", "aime2024"]
    _, kept = convert(tmp_path, "aime2024", inputs["aime2024"], keep_duplicates=True)
    assert len(kept) == 6


def test_plain_math_sets_keep_answers_as_written_and_their_ids(tmp_path, inputs):
    _, frame = convert(tmp_path, "aime2025", inputs["aime2025"])
    assert [rm["ground_truth"] for rm in frame.reward_model] == ["33", "070"]  # "070" is not read as 70
    assert [info["source_id"] for info in frame.extra_info] == ["1", "2"]
    assert frame.extra_info[0]["source"] == "MathArena/aime_2025" and frame.extra_info[1]["source_row"] == 1
    assert frame.prompt[0][0]["content"].endswith(MATH_SUFFIX)


def test_explicit_question_and_answer_columns(tmp_path):
    source = write_jsonl(tmp_path / "odd.jsonl", [{"statement": "What is 1+1?", "final": "2", "answer": "wrong"}])
    _, frame = convert(tmp_path, "beyondaime", source, options=Options(question_key="statement", answer_key="final"))
    assert frame.reward_model[0]["ground_truth"] == "2"
    assert frame.prompt[0][0]["content"].startswith("What is 1+1?")


def test_gpqa_options_are_shuffled_deterministically_and_the_letter_points_at_the_correct_answer(tmp_path):
    records = gpqa_records(40)
    source = tmp_path / "gpqa.jsonl"
    write_jsonl(source, records)
    _, first = convert(tmp_path, "gpqa_diamond", source, options=Options(seed=3))
    _, again = convert(tmp_path, "gpqa_diamond", source, options=Options(seed=3))
    reversed_source = write_jsonl(tmp_path / "reversed.jsonl", records[::-1])
    _, reordered = convert(tmp_path, "gpqa_diamond", reversed_source, options=Options(seed=3))
    _, other_seed = convert(tmp_path, "gpqa_diamond", source, options=Options(seed=4))
    assert first.prompt.tolist() == again.prompt.tolist()
    # Keyed on the question, not the row number: the same question gets the same options in any row order.
    assert first.prompt.tolist() == reordered.prompt.tolist()[::-1]
    assert first.prompt.tolist() != other_seed.prompt.tolist()
    letters = set()
    for record, row in zip(records, first.itertuples()):
        letter = row.reward_model["ground_truth"]
        choices = list(row.extra_info["choices"])
        assert letter in "ABCD" and len(letter) == 1 and row.extra_info["correct_choice"] == letter
        assert choices["ABCD".index(letter)] == record["Correct Answer"]
        assert sorted(choices) == sorted(record[k] for k in ("Correct Answer", "Incorrect Answer 1",
                                                            "Incorrect Answer 2", "Incorrect Answer 3"))  # fmt: skip
        content = row.prompt[0]["content"]
        assert f"{letter}) {record['Correct Answer']}\n" in content and "\\boxed{}" in content
        assert row.ability == "multiple_choice" and row.extra_info["source_id"] == record["Record ID"]
        letters.add(letter)
    assert letters == set("ABCD")  # not always the same position


def test_gpqa_choices_function_matches_the_file():
    choices, letter = gpqa_choices("Q?", "yes", ["no", "maybe", "never"], seed=0)
    assert choices[" ABCD".index(letter) - 1] == "yes" and sorted(choices) == ["maybe", "never", "no", "yes"]
    assert gpqa_choices("Q?", "yes", ["no", "maybe", "never"], seed=0) == (choices, letter)


def sandbox_answers(monkeypatch):
    """verl's sandbox scorer with the HTTP call replaced by a local run of our own test programs."""
    from verl.utils.reward_score.sandbox_fusion import utils

    def run_locally(sandbox_fusion_url, code, stdin, compile_timeout, run_timeout, memory_limit_mb, language):
        done = subprocess.run([sys.executable, "-c", code], input=stdin or "", capture_output=True, text=True,
                              timeout=30)  # fmt: skip
        status = "Success" if done.returncode == 0 else "Failed"
        return {"status": status, "run_result": {"status": "Finished", "stdout": done.stdout,
                                                  "return_code": done.returncode}}, None  # fmt: skip

    monkeypatch.setattr(utils, "call_sandbox_api", run_locally)


def test_livecodebench_ground_truth_is_scored_by_verls_sandbox_scorer(tmp_path, inputs, monkeypatch):
    from verl.utils.reward_score import default_compute_score

    _, frame = convert(tmp_path, "livecodebench_v6", inputs["livecodebench_v6"])
    functional, stdin = (
        json.loads(frame.reward_model[0]["ground_truth"]),
        json.loads(frame.reward_model[1]["ground_truth"]),
    )
    # The private test (compressed) follows the public one; a returned string is expected as the wrapper prints it.
    assert functional == {"inputs": ["1\n2\nfalse", "2\n2\ntrue"], "outputs": ["3", "4"], "fn_name": "addUp"}
    assert stdin == {"inputs": ["3\n", "10\n"], "outputs": ["6\n", "20\n"]}
    assert frame.extra_info[0]["private_tests"] and frame.extra_info[1]["platform"] == "atcoder"
    assert "```python\nclass Solution:" in frame.prompt[0][0]["content"]
    assert "standard input" in frame.prompt[1][0]["content"]

    sandbox_answers(monkeypatch)

    def score(row, code, ground_truth=None):
        ground_truth = ground_truth or frame.reward_model[row]["ground_truth"]
        return default_compute_score(frame.data_source[row], f"```python\n{code}\n```", ground_truth,
                                     sandbox_fusion_url="http://sandbox")  # fmt: skip

    right = "class Solution:\n    def addUp(self, a, b, as_text):\n        return str(a + b) if as_text else a + b"
    assert score(0, right) == 1.0
    assert score(0, right.replace("str(a + b)", "str(a + b + 1)")) == 0.5  # the second test fails
    # LiveCodeBench's own JSON text ('"4"') would fail a right solution: the wrapper prints the string bare.
    as_shipped = json.dumps({**functional, "outputs": ["3", '"4"']})
    assert score(0, right, as_shipped) == 0.5
    assert score(1, "print(2 * int(input()))") == 1.0
    assert score(1, "print(int(input()) + 3)") == 0.5


def test_livecodebench_date_filter_and_public_tests_only(tmp_path, inputs):
    report, frame = convert(tmp_path, "livecodebench_v6", inputs["livecodebench_v6"],
                            options=Options(since="2025-02-01", public_tests_only=True))  # fmt: skip
    assert [info["source_id"] for info in frame.extra_info] == ["3000", "abc400_a"]
    assert report.notes == ["1 rows before --since 2025-02-01"]
    assert json.loads(frame.reward_model[1]["ground_truth"])["inputs"] == ["3\n"]
    assert not frame.extra_info[0]["private_tests"]


def test_a_pickle_that_would_run_code_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    record = lcb_records()[1]
    record["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps(Payload()))).decode()
    source = write_jsonl(tmp_path / "evil.jsonl", [record])
    with pytest.raises(DataError, match=r"evil.jsonl: row 0: 'private_test_cases'.*refusing to load"):
        convert(tmp_path, "livecodebench_v6", source)
    assert not marker.exists()
    _, frame = convert(tmp_path, "livecodebench_v6", source, options=Options(public_tests_only=True))
    assert len(frame) == 1


@pytest.mark.parametrize(
    "payload",
    [b"h\x00.", b"\x80\x04)R.", b"0.", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00C\x02\xff\xfe\x94.", b"garbage"],
)  # fmt: skip
def test_a_corrupt_pickle_is_a_data_error_not_a_traceback(tmp_path, payload):
    """Bad memo reads, an empty stack, popping nothing, bytes that are not UTF-8, plain garbage."""
    record = lcb_records()[1]
    record["private_test_cases"] = base64.b64encode(zlib.compress(payload)).decode()
    with pytest.raises(DataError, match=r"row 0: 'private_test_cases'"):
        convert(tmp_path, "livecodebench_v6", write_jsonl(tmp_path / "bad.jsonl", [record]))


def test_train_mix_passes_verl_rows_through_as_train(tmp_path, inputs):
    _, frame = convert(tmp_path, "train_mix", inputs["train_mix"])
    assert frame.prompt[0][0]["content"].startswith("Solve the following math problem")  # DAPO's prompt, as is
    assert frame.data_source.tolist() == ["math_dapo", "math_dapo"] and frame.ability[0] == "MATH"
    assert [info["source_id"] for info in frame.extra_info] == ["t0", "t1"]
    _, renamed = convert(tmp_path, "train_mix", inputs["train_mix"],
                         options=Options(data_source="dapo_math", reprompt=True, split="train"))  # fmt: skip
    assert renamed.data_source.tolist() == ["dapo_math", "dapo_math"]
    assert renamed.prompt[1][0]["content"] == f"Train problem two.\n\n{MATH_SUFFIX}"
    plain = write_jsonl(tmp_path / "plain.jsonl", [{"question": "1+1?", "ground_truth": 2}])
    _, built = convert(tmp_path, "train_mix", plain, limit=1)
    assert built.data_source[0] == "math" and built.extra_info[0]["split"] == "train"


def test_split_and_limit(tmp_path, inputs):
    _, frame = convert(tmp_path, "aime2025", inputs["aime2025"], options=Options(split="val"), limit=1)
    assert len(frame) == 1 and frame.extra_info[0]["split"] == "val"


@pytest.mark.parametrize(
    "preset, name, content, message",
    [
        ("aime2025", "a.txt", "x", r"a.txt: unknown extension '.txt'"),
        ("aime2025", "a.jsonl", '{"question": "Q"}\n', r"no answer column \(tried answer, .*columns: question\)"),
        ("aime2025", "a.jsonl", '{"problem": "Q", "answer": 1}\n{"problem": " ", "answer": 2}\n',
         r"a.jsonl: row 1: 'problem' is empty"),
        ("aime2025", "a.jsonl", '{"problem": "Q"\n', r"a.jsonl: line 1 is not JSON"),
        ("aime2025", "a.parquet", "not parquet", r"a.parquet: unreadable parquet file"),
        ("gpqa_diamond", "g.jsonl", '{"Question": "Q", "Correct Answer": "x"}\n',
         r"missing column\(s\) 'Incorrect Answer 1'.*\(columns: Question, Correct Answer\)"),
        ("livecodebench_v6", "l.jsonl", '{"question_content": "Q", "public_test_cases": "[{\\"input\\": \\"1\\", '
         '\\"output\\": \\"1\\", \\"testtype\\": \\"functional\\"}]", "metadata": "{}"}\n',
         r"l.jsonl: row 0: functional tests but no 'func_name'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_error(tmp_path, preset, name, content, message):
    source = tmp_path / name
    source.write_text(content)
    with pytest.raises(DataError, match=message):
        prepare(preset, [source], tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_gpqa_row_whose_correct_answer_is_a_distractor(tmp_path):
    records = gpqa_records(2)
    records[1]["Incorrect Answer 2"] = " right  1"
    source = write_jsonl(tmp_path / "g.jsonl", records)
    with pytest.raises(DataError, match=r"g.jsonl: row 1: the correct answer 'right 1' is also a distractor"):
        prepare("gpqa_diamond", [source], tmp_path / "out.parquet")


def test_cli_lists_presets_and_exits_2_with_one_line(tmp_path, inputs, capsys):
    """arena_verl.tools.prepare.main in this process; scripts/data/prepare.py as a process is checked in
    tests/integration/test_tool_scripts.py."""
    from arena_verl.tools.prepare import main

    def cli(*args):
        capsys.readouterr()  # only this call's output
        try:
            returncode = main([str(arg) for arg in args])
        except SystemExit as exc:  # argparse's usage errors
            returncode = exc.code
        printed = capsys.readouterr()
        return SimpleNamespace(returncode=returncode, stdout=printed.out, stderr=printed.err)

    listed = cli("list")
    assert listed.returncode == 0
    for preset in PRESETS.values():
        assert preset.name in listed.stdout and preset.source in listed.stdout
    missing = cli("aime2025", tmp_path / "nope.jsonl", "--output", tmp_path / "o.parquet")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines() == [f"error: {tmp_path / 'nope.jsonl'}: no such file"]
    made = cli("gpqa_diamond", inputs["gpqa_diamond"], "--output", tmp_path / "g.parquet", "--seed", "1")
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("3 rows (gpqa_diamond, split='test')")
    assert len(pd.read_parquet(tmp_path / "g.parquet")) == 3


def test_a_method_name_verls_sandbox_wrapper_shadows_is_reported(tmp_path):
    record = lcb_records()[0]
    record["metadata"] = json.dumps({"func_name": "add"})  # operator.add is found before Solution().add
    report, _ = convert(tmp_path, "livecodebench_v6", write_jsonl(tmp_path / "l.jsonl", [record]))
    assert report.notes == ["verl's sandbox wrapper calls its own add instead of the solution's method"]


def test_compressed_tests_that_inflate_past_the_cap_are_refused(tmp_path, monkeypatch):
    from arena_verl.data.benchmarks import livecodebench

    monkeypatch.setattr(livecodebench, "MAX_DECOMPRESSED_BYTES", 64)
    record = lcb_records()[1]
    record["private_test_cases"] = compressed([{"input": "1\n" * 100, "output": "2\n", "testtype": "stdin"}])
    with pytest.raises(DataError, match="row 0: 'private_test_cases': decompresses to more than 64 bytes"):
        convert(tmp_path, "livecodebench_v6", write_jsonl(tmp_path / "big.jsonl", [record]))


def test_a_json_list_file(tmp_path):
    source = tmp_path / "beyond.json"
    source.write_text(json.dumps([{"question": "Q1?", "answer": "1"}, {"question": "Q2?", "answer": "2"}]))
    _, frame = convert(tmp_path, "beyondaime", source)
    assert [rm["ground_truth"] for rm in frame.reward_model] == ["1", "2"]
    source.write_text(json.dumps({"question": "Q1?"}))
    with pytest.raises(DataError, match="expected a JSON list of objects"):
        convert(tmp_path, "beyondaime", source)


def test_the_prepare_command_in_process_and_as_a_subcommand(tmp_path, inputs, capsys):
    """arena_verl.tools.prepare: main() for the script, configure_parser() + run() for the ``arena-verl`` command."""
    import argparse

    from arena_verl.tools import prepare as command

    assert command.main(["list"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == list(PRESETS)
    assert command.main(["aime2025", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "o.parquet")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.jsonl'}: no such file\n"

    top = argparse.ArgumentParser(prog="arena-verl")
    sub = top.add_subparsers(dest="command").add_parser("prepare")
    command.configure_parser(sub)
    sub.set_defaults(run=command.run)
    with pytest.raises(SystemExit) as listed:  # `arena-verl prepare list` needs no inputs nor --output
        top.parse_args(["prepare", "list"])
    assert listed.value.code == 0 and "gpqa_diamond" in capsys.readouterr().out
    output = tmp_path / "g.parquet"
    args = top.parse_args(["prepare", "gpqa_diamond", str(inputs["gpqa_diamond"]), "--output", str(output)])
    assert args.run(args) == 0
    assert capsys.readouterr().out.startswith("3 rows (gpqa_diamond, split='test')")
    with pytest.raises(SystemExit) as refused:
        top.parse_args(["prepare", "nosuch", "x", "--output", "o.parquet"])
    assert refused.value.code == 2 and "invalid choice: 'nosuch'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "preset, flag, value",
    [("aime2025", "--since", "2025-02-01"), ("gpqa_diamond", "--since", "2025-02-01"),
     ("train_mix", "--since", "2025-02-01"), ("aime2025", "--public-tests-only", None),
     ("livecodebench_v6", "--reprompt", None)],
)  # fmt: skip
def test_an_option_of_another_preset_is_refused_naming_the_preset(tmp_path, inputs, capsys, preset, flag, value):
    from arena_verl.tools.prepare import main

    output = tmp_path / "o.parquet"
    argv = [preset, str(inputs[preset]), "--output", str(output), flag, *([value] if value else [])]
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {flag} applies to ") and line.endswith(f"only, not to preset {preset}")
    assert not output.exists()


def test_a_prompt_with_two_different_answers_is_refused_naming_both_rows(tmp_path):
    rows = [
        {"problem": "P one.", "answer": "5"},
        {"problem": "P two.", "answer": "6"},
        {"problem": "P one.", "answer": "7"},
    ]
    source = write_jsonl(tmp_path / "aime.jsonl", rows)
    message = r"1 question\(s\) asked twice with different answers: aime.jsonl: row 0 \('5'\) and aime.jsonl: row 2"
    with pytest.raises(DataError, match=message):
        prepare("aime2025", [source], tmp_path / "out.parquet", keep_duplicates=True)
    assert not (tmp_path / "out.parquet").exists()
