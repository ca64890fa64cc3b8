"""The paper's benchmarks and training mix as verl parquet files, converted from local copies of the public sets.

Nothing is downloaded: each preset reads a file (parquet, jsonl, json or csv, as the public set ships it) and writes
verl's layout, one row per problem (as ``arena_verl.data`` does for a plain question/answer file):

- ``prompt``: one user message; ``data_source``: picks the scorer; ``ability``;
- ``reward_model = {"style": "rule", "ground_truth": <text>}``;
- ``extra_info``: ``split`` (``test`` for the evaluation sets, ``train`` for the mix), ``index`` (0..n-1 in the
  output), ``benchmark``, ``source`` (the hub id), ``source_file`` (the input's name), ``source_row`` and, where the
  set has one, ``source_id``; GPQA adds the shown ``choices`` and ``correct_choice``, LiveCodeBench the problem's
  metadata. Ids are text in every preset so that verl can load several of these files as one data set (their
  ``extra_info`` structs are merged).

=================  =======================================  ==========================  ===================  =======
preset             source                                   data_source                 ground truth         scorer
=================  =======================================  ==========================  ===================  =======
aime2024           BytedTsinghua-SIA/AIME-2024              aime2024                    the answer           math
aime2025           MathArena/aime_2025                      aime2025                    the answer           math
aime2026           MathArena/aime_2026                      aime2026                    the answer           math
beyondaime         ByteDance-Seed/BeyondAIME                beyondaime                  the answer           math
gpqa_diamond       Idavidrein/gpqa (gpqa_diamond)           gpqa_diamond                a letter A-D         choice
livecodebench_v6   livecodebench/code_generation_lite (v6)  codecontests                JSON test cases      sandbox
train_mix          a local math question/answer file        the file's own, or math     the answer           math
=================  =======================================  ==========================  ===================  =======

Rows whose prompt and ground truth repeat an earlier row are dropped (the DAPO copies of AIME-2024 and
DAPO-Math-17k repeat every problem many times); ``keep_duplicates=True`` keeps them. A prompt given twice with
different ground truths is refused, naming both rows (never dropped or kept: which answer is right is unknown), and
so is an option of another preset (``since``, ``public_tests_only``: LiveCodeBench; ``reprompt``: train_mix).

Questions and answers are read by :mod:`arena_verl.data.qa` (the reader ``python -m arena_verl.data convert`` uses:
answers stay exactly as written). One module per job: :mod:`.preset` (what a preset is), :mod:`.math_presets`,
:mod:`.gpqa`, :mod:`.livecodebench` (with the restricted unpickler), :mod:`.registry` (``PRESETS`` and ``prepare``).
The names below are re-exported; patch a module's own constant (``livecodebench.MAX_DECOMPRESSED_BYTES``), not the
copy here.
"""

from arena_verl.data.benchmarks.gpqa import GPQA_COLUMNS, GPQA_SUFFIX, LETTERS, build_gpqa, gpqa_choices, gpqa_prompt
from arena_verl.data.benchmarks.livecodebench import (
    LCB_FUNCTIONAL,
    LCB_PREAMBLE,
    LCB_REQUIRED,
    LCB_STDIN,
    MAX_DECOMPRESSED_BYTES,
    build_livecodebench,
    decode_test_cases,
    lcb_ground_truth,
    lcb_prompt,
    sandbox_shadowed_names,
    shadowed_functions,
)
from arena_verl.data.benchmarks.math_presets import build_math_benchmark, build_train_mix
from arena_verl.data.benchmarks.preset import ID_ALIASES, Options, Preset, Report
from arena_verl.data.benchmarks.registry import PRESETS, prepare
from arena_verl.data.qa import ANSWER_ALIASES, QUESTION_ALIASES, DataError, Row, read_rows
from arena_verl.data.verl_layout import MATH_SUFFIX

__all__ = [
    "ANSWER_ALIASES",
    "GPQA_COLUMNS",
    "GPQA_SUFFIX",
    "ID_ALIASES",
    "LCB_FUNCTIONAL",
    "LCB_PREAMBLE",
    "LCB_REQUIRED",
    "LCB_STDIN",
    "LETTERS",
    "MATH_SUFFIX",
    "MAX_DECOMPRESSED_BYTES",
    "PRESETS",
    "QUESTION_ALIASES",
    "DataError",
    "Options",
    "Preset",
    "Report",
    "Row",
    "build_gpqa",
    "build_livecodebench",
    "build_math_benchmark",
    "build_train_mix",
    "decode_test_cases",
    "gpqa_choices",
    "gpqa_prompt",
    "lcb_ground_truth",
    "lcb_prompt",
    "prepare",
    "read_rows",
    "sandbox_shadowed_names",
    "shadowed_functions",
]
