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
#
# PLAN=continue is the second loan's call (gpu-trials.md, "the second loan"): the first call's best run
# (m-full-rq33, its fp16 weights carried as lab/runs/init-rq33) trained on for the whole call on a fresh
# draw of the data, beside the two held-out-suite runs at the embedded shape (S: what `edgearmor adapt`
# fine-tunes, and three M runs' weights exceed what one call brings back). The embedded model is scored
# only when BASE is carried (its choice-slice scores came back from the first call).
#
# PLAN=third is the next loan's call (gpu-trials.md, "The third loan: the plan", rule written before it):
# the embedded model (BASE, carried as lab/runs/base-import) trained on for the whole call at its own shape
# and 1,024-token window, four ways at once: its own recipe (the control), with scrambled tool names, on the
# broad mixture, and both. A run's own --train / --validation come after gpu-broad.sh's and win (argparse
# keeps the last). Carry .gpu and lab/runs/base-import (46 MB):
#
#   PLAN=third SECONDS_LEFT=555 MINUTES=4.5 bash lab/model/gpu-call.sh
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
[ -d "$BASE" ] && (
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
case ${PLAN:-first} in
  first) runs=("m-full $M" "m-full-rq33 $M --request-counterfactuals 0.33" "m-full-st1 $M --scramble-traces 1" "s-full $S")
         [ -z "${SUITE_RUNS:-}" ] || runs+=("m-noslack $M --trace-exclude-suite slack" "m-nobanking $M --trace-exclude-suite banking") ;;
  # A fresh draw of the data (seed 2) and a lower peak rate: the run's weights are past their warmup.
  continue) runs=("m-rq33-cont $M --request-counterfactuals 0.33 --init ${INIT:-lab/runs/init-rq33} --seed 2 --lr 1e-3"
                  "s-noslack $S --trace-exclude-suite slack" "s-nobanking $S --trace-exclude-suite banking") ;;
  # From the embedded weights at a continuation's rate; the generator's data alone is the embedded recipe.
  third) E="--init $BASE --lr 1e-3 --seed 3 --data-fraction $FRACTION"
         own="--train ${DATA:-.gpu}/train.jsonl.xz --validation ${DATA:-.gpu}/validation.jsonl.xz"
         runs=("e-cont $E $own" "e-names25 $E $own --scramble-names 0.25" "e-broad $E" "e-broad-names25 $E --scramble-names 0.25")
         MAX_LEN=${MAX_LEN:-1024} ;;
  *) echo "PLAN is first, continue or third, not ${PLAN}" >&2; exit 2 ;;
esac
DEADLINE=$deadline CHOICE_ONLY=1 DATA=${DATA:-.gpu} RUNS=${RUNS:-lab/runs} MINUTES=${MINUTES:-4} BATCH_TOKENS=${BATCH_TOKENS:-32768} DEVICE=$DEVICE \
  MAX_LEN=${MAX_LEN:-4096} \
  bash lab/model/gpu-broad.sh "${runs[@]}" 2>&1 | tee "$OUT/log.txt"
wait
ls -la "$OUT"
