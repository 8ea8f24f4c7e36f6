#!/usr/bin/env bash
# Trains several proxies at once on one GPU on the broad data (model/corpus.py + the TypeScript
# generator + AgentDojo traces) with a 4,096-token window, then scores every held-out set there and
# prints the held-out table (lab/model/heldout_report.py). One command, one device call:
#
#   bash lab/model/gpu-data.sh     # here: builds .gpu/ (carried; the device has no Node)
#   DATA=.gpu MINUTES=5 bash lab/model/gpu-broad.sh "m-full --hidden 384 --layers 6 --heads 6 --ffn 1024" \
#       "m-noslack --hidden 384 --layers 6 --heads 6 --ffn 1024 --trace-exclude-suite slack" ...
#
# A run named *-no<suite> also scores adv-<suite> (every run of a suite it never saw). Resumable: a run
# whose model.pt exists is not trained again, one cut short continues from its last checkpoint
# (train.py --resume), and a score file already complete is kept; so the same command, given again
# with the runs it brought back, carries on. Weights (fp16) leave first, packed as soon as training ends;
# after scoring they are packed again, the decision rule's order first, with the scores
# (lab/model/gpu_pack.py), so a scoring pass cut short loses no run.
#
# DEVICE=cpu STEPS=3 SCORE_LIMIT=4 MAX_LEN=1024 runs the same pipeline at a tiny size on a CPU
# (test/model/pipeline-smoke.test.ts).
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-.gpu}
MINUTES=${MINUTES:-5}
STEPS=${STEPS:-100000}
DEVICE=${DEVICE:-cuda}
MAX_LEN=${MAX_LEN:-4096}
BATCH_TOKENS=${BATCH_TOKENS:-65536}
EVAL_EVERY=${EVAL_EVERY:-300}
SCORE_SECONDS=${SCORE_SECONDS:-240}
PY=${PY:-python3}
RUNS=${RUNS:-model/runs}
export PYTHONUNBUFFERED=1
[ $# -gt 0 ] || { echo "usage: gpu-broad.sh \"name train-args...\" ..." >&2; exit 2; }
[ "$DEVICE" = cpu ] || nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
WORKERS=${WORKERS:-$(( 16 / $# > 1 ? 16 / $# : 1 ))}
AMP=$([ "$DEVICE" = cpu ] || echo --bf16)
FLAGS="--counterfactuals 0.5 --request-counterfactuals 0.5 --trace-request-counterfactuals 1 --trace-holdout 10
       --trace-counterfactuals 1 --scramble-values 0.5"
names=()
pids=()
for spec in "$@"; do
  read -r name args <<<"$spec"
  run=$RUNS/gpu-$name
  mkdir -p "$run"
  names+=("$name")
  [ -f "$run/model.pt" ] && { echo "$name: trained already"; continue; }
  # The generator's split is listed twice (1:1 with the broad one): at 1:2 a CPU fine-tune lost 0.033
  # ROC-AUC on the generator's validation split, at 1:1 none, for the same gain on unseen tools
  # (lab/model/gpu-trials.md, "CPU fine-tune 2").
  # shellcheck disable=SC2086 # the run's arguments are words
  $PY model/train.py --device "$DEVICE" $AMP --workers "$WORKERS" --threads 2 --resume \
    --train "$DATA/train.jsonl.xz,$DATA/train.jsonl.xz,$DATA/broad-train.jsonl.xz" \
    --validation "$DATA/validation.jsonl.xz,$DATA/broad-validation.jsonl.xz" --traces "$DATA/traces.jsonl.xz" \
    --tokenizer public/models/edgearmor-proxy --out "$run" --max-len "$MAX_LEN" \
    --steps "$STEPS" --warmup 150 --time-schedule --max-minutes "$MINUTES" --batch-tokens "$BATCH_TOKENS" \
    --eval-every "$EVAL_EVERY" $FLAGS $args > "$run/train.out" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { tail -n 30 "$RUNS"/gpu-*/train.out; exit 1; }; done
for name in "${names[@]}"; do
  run=$RUNS/gpu-$name
  $PY -c "import torch,sys; sd=torch.load(sys.argv[1]); torch.save({k: v.half() for k, v in sd.items()}, sys.argv[2])" \
    "$run/model.pt" "$run/model-fp16.pt"
done
pack() {  # within the device's limits, the runs that may ship first (lab/model/gpu_pack.py)
  [ -z "${OUT:-}" ] || $PY lab/model/gpu_pack.py "$RUNS" --out "$OUT"
}
pack
score() {  # run set:limit[:tools] ...: one model load per chain; a complete score file is kept
  local run=$1
  shift
  local sets=()
  for spec in "$@"; do
    IFS=: read -r set limit tools <<<"$spec"
    sets+=("$DATA/$set.jsonl.xz=$run/$set-scores.jsonl:${SCORE_LIMIT:-$limit}${tools:+:$tools}")
  done
  timeout "$SCORE_SECONDS" $PY lab/model/score_loo.py --device "$DEVICE" --run "$run" --sets "${sets[@]}" > /dev/null || true
}
if [ -n "${DEADLINE:-}" ]; then  # epoch seconds by which the call must have packed everything
  left=$(( DEADLINE - $(date +%s) - 45 ))
  SCORE_SECONDS=$(( left < SCORE_SECONDS ? (left > 0 ? left : 1) : SCORE_SECONDS ))
  echo "scoring for at most $SCORE_SECONDS s"
fi
spids=()
for name in "${names[@]}"; do
  run=$RUNS/gpu-$name
  suite=()
  case $name in *-no*) suite=("adv-${name##*-no}:800") ;; esac
  choice=(broad-validation:800:tools adv-val:400 asb:1600)
  # A held-out-suite run is never a candidate (the rule takes full-data runs), so with CHOICE_ONLY it
  # leaves the GPU to the candidates and scores its own suite alone.
  [ -n "${CHOICE_ONLY:-}" ] && [ ${#suite[@]} -gt 0 ] && choice=()
  score "$run" "${choice[@]}" "${suite[@]}" &
  spids+=($!)
  # The report sets; CHOICE_ONLY=1 leaves them to `npm run eval` on the shipped export, here.
  [ -n "${CHOICE_ONLY:-}" ] && continue
  score "$run" dev:800 broad-test:800:tools validation:600:tools test:600:tools &
  spids+=($!)
done
for p in "${spids[@]}"; do wait "$p"; done
runs=()
for name in "${names[@]}"; do runs+=("$RUNS/gpu-$name"); done
$PY lab/model/heldout_report.py "${runs[@]}" --json "$RUNS/heldout.json"
pack
[ -z "${OUT:-}" ] || ls -la "$OUT"
