#!/usr/bin/env bash
# The broad recipe's device call as a 15-minute loan allows it (gpu-trials.md, "the broad recipe's first
# GPU call"): four runs trained at once for MINUTES each on a share of the data (SUITE_RUNS=1 adds the two
# held-out-suite runs: six M runs at 65,536-token batches ran an H100 out of memory), the choice slices scored,
# the embedded model scored on the same slices beside them (lab/runs/base-import, made here with
# model/import_onnx.py and carried), and everything packed by lab/model/gpu_pack.py before SECONDS_LEFT run
# out. One command on the device, carrying .gpu and lab/runs/base-import:
#
#   bash lab/model/gpu-call.sh
#
# then a second call for the weights that did not fit: `python3 lab/model/gpu_pack.py lab/runs --out $OUT
# --only <names it printed>`. DEVICE=cpu MINUTES=0.05 FRACTION=0.003 SCORE_LIMIT=3 ... rehearses it here.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?the device sets OUT}
DEVICE=${DEVICE:-cuda}
SECONDS_LEFT=${SECONDS_LEFT:-520}
FRACTION=${FRACTION:-0.3}
BASE=${BASE:-lab/runs/base-import}
deadline=$(( $(date +%s) + SECONDS_LEFT ))

# The embedded model on the choice slices, while the runs train (its window is its own, 1,024 tokens).
(
  sets=()
  for spec in broad-validation:800:tools adv-val:400 asb:1600; do
    IFS=: read -r set limit tools <<<"$spec"
    sets+=("${DATA:-.gpu}/$set.jsonl.xz=$BASE/$set-scores.jsonl:${SCORE_LIMIT:-$limit}${tools:+:$tools}")
  done
  timeout $(( SECONDS_LEFT - 120 )) ${PY:-python3} lab/model/score_loo.py --device "$DEVICE" --run "$BASE" --sets "${sets[@]}" > /dev/null 2>&1
  ${PY:-python3} lab/model/heldout_report.py "$BASE" --json "$OUT/base-heldout.json" > /dev/null
) &

M="--hidden 384 --layers 6 --heads 6 --ffn 1024 --lr 2e-3 --data-fraction $FRACTION"
S="--hidden 256 --layers 4 --heads 2 --ffn 704 --lr 3e-3 --data-fraction $FRACTION"
DEADLINE=$deadline CHOICE_ONLY=1 DATA=${DATA:-.gpu} RUNS=${RUNS:-lab/runs} MINUTES=${MINUTES:-4} BATCH_TOKENS=${BATCH_TOKENS:-32768} DEVICE=$DEVICE \
  bash lab/model/gpu-broad.sh \
  "m-full $M" \
  "m-full-rq33 $M --request-counterfactuals 0.33" \
  "m-full-st1 $M --scramble-traces 1" \
  "s-full $S" \
  ${SUITE_RUNS:+"m-noslack $M --trace-exclude-suite slack" "m-nobanking $M --trace-exclude-suite banking"} \
  2>&1 | tee "$OUT/log.txt"
wait
ls -la "$OUT"
