"""Writing verl parquet files and dumps (with verl's own writer), and answering JSON over HTTP, for the tests of dump
readers and servers."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace


def dump_with_verl(trainer_class, folder: Path, step: int, inputs, outputs, gts, scores, extra: dict) -> Path:
    """Write ``<step>.jsonl`` with the trainer's own ``_dump_generations`` (unbound, on a stand-in ``self``)."""
    stand_in = SimpleNamespace(
        global_steps=step,
        _dump_executor=ThreadPoolExecutor(max_workers=1),
        _dump_futures=[],
        _write_generations=trainer_class._write_generations,
    )
    trainer_class._dump_generations(stand_in, inputs, outputs, gts, scores, extra, str(folder))
    trainer_class._shutdown_dump_executor(stand_in)
    return Path(folder) / f"{step}.jsonl"


def send_json(handler, payload) -> None:
    """Answer an ``http.server`` request with ``payload`` as JSON, status 200."""
    body = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def write_verl_parquet(path: Path, rows, split: str) -> Path:
    """``(data_source, ability, question, ground truth)`` rows as a verl parquet file, ``extra_info.split=split``."""
    import pandas as pd

    records = [
        {
            "data_source": source,
            "prompt": [{"role": "user", "content": question}],
            "ability": ability,
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"split": split, "index": index},
        }
        for index, (source, ability, question, truth) in enumerate(rows)
    ]
    pd.DataFrame.from_records(records).to_parquet(path)
    return Path(path)


def write_v1_lines(
    folder: Path, step: int, prompts, template: str = "system: Reason step by step.\nuser: {}\nassistant:"
):
    """``<step>.jsonl`` in the layout of verl's V1 ``_write_generations`` (``input``, ``output``, ``gts``, ``score``,
    ``step``, ``uid`` = ``<prompt uuid>_<session>_0``), from ``(question, gts, outputs, scores)`` per prompt."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, (question, truth, outputs, scores) in enumerate(prompts):
        for session, (output, score) in enumerate(zip(outputs, scores)):
            lines.append(
                {
                    "input": template.format(question),
                    "output": output,
                    "gts": truth,
                    "score": float(score),
                    "step": step,
                    "uid": f"7c1d2e3f-{step:04d}-4b7a-9d1e-{number:012d}_{session}_0",
                }
            )
    path = folder / f"{step}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
