#!/usr/bin/env bash
# Trains several proxies at once on one GPU on the broad data (model/corpus.py + the TypeScript
# generator + AgentDojo traces) with a 4,096-token window, then scores every held-out set there
# (model/heldout_report.py reads them). One command, one device call:
#
#   DATA=.gpu MINUTES=5.5 bash model/gpu-broad.sh "m-full --hidden 384 --layers 6 --heads 6 --ffn 1024" \
#       "m-noslack --hidden 384 --layers 6 --heads 6 --ffn 1024 --trace-exclude-suite slack" ...
#
# DATA (built here, carried): train/validation/test.jsonl.xz (src/scenarios, seeds 1/2/3),
# broad-{train,validation,test}.jsonl.xz (model/corpus.py), traces.jsonl.xz, adv-val.jsonl.xz
# (model/agentdojo.py), adv-slack/adv-banking.jsonl.xz (--suite), dev.jsonl.xz, asb.jsonl.xz (scored,
# never trained on). A run named *-no<suite> scores adv-<suite> too. Weights (fp16) leave first, in
# $OUT/runs.tar.xz.part-*; scores follow in a second pack, so a scoring pass cut short loses no run.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-.gpu}
MINUTES=${MINUTES:-5.5}
SCORE_SECONDS=${SCORE_SECONDS:-150}
export PYTHONUNBUFFERED=1
[ $# -gt 0 ] || { echo "usage: gpu-broad.sh \"name train-args...\" ..." >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
FLAGS="--counterfactuals 0.5 --request-counterfactuals 0.5 --trace-request-counterfactuals 1 --trace-holdout 10
       --trace-counterfactuals 1 --scramble-values 0.5"
names=()
pids=()
for spec in "$@"; do
  read -r name args <<<"$spec"
  run=model/runs/gpu-$name
  mkdir -p "$run"
  names+=("$name")
  # shellcheck disable=SC2086 # the run's arguments are words
  python3 model/train.py --device cuda --bf16 --workers $((16 / $#)) --threads 2 \
    --train "$DATA/train.jsonl.xz,$DATA/broad-train.jsonl.xz" \
    --validation "$DATA/validation.jsonl.xz,$DATA/broad-validation.jsonl.xz" --traces "$DATA/traces.jsonl.xz" \
    --tokenizer public/models/edgearmor-proxy --out "$run" --max-len 4096 \
    --steps 100000 --warmup 150 --time-schedule --max-minutes "$MINUTES" --batch-tokens 65536 \
    --eval-every 300 $FLAGS $args > "$run/train.out" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { tail -30 model/runs/gpu-*/train.out; exit 1; }; done
for name in "${names[@]}"; do
  run=model/runs/gpu-$name
  python3 -c "import torch,sys; sd=torch.load(sys.argv[1]); torch.save({k: v.half() for k, v in sd.items()}, sys.argv[2])" \
    "$run/model.pt" "$run/model-fp16.pt"
done
pack() { [ -z "${OUT:-}" ] || tar cf - --exclude=model.pt model/runs/gpu-* | xz -1 -T16 | split -b 15M - "$OUT/$1.tar.xz.part-"; }
pack runs
score() {  # run set limit [--tool-loo]
  local run=$1 set=$2 limit=$3
  shift 3
  timeout "$SCORE_SECONDS" python3 model/score_loo.py --device cuda --run "$run" --cases "$DATA/$set.jsonl.xz" \
    --limit "$limit" --out "$run/$set-scores.jsonl" "$@" > /dev/null || true
}
spids=()
for name in "${names[@]}"; do
  run=model/runs/gpu-$name
  ( score "$run" broad-validation 800 --tool-loo; score "$run" adv-val 400; score "$run" asb 1600
    case $name in *-no*) score "$run" "adv-${name##*-no}" 800 ;; esac ) &
  spids+=($!)
  ( score "$run" dev 800; score "$run" broad-test 800 --tool-loo; score "$run" validation 600 --tool-loo
    score "$run" test 600 --tool-loo ) &
  spids+=($!)
done
for p in "${spids[@]}"; do wait "$p"; done
for name in "${names[@]}"; do
  run=model/runs/gpu-$name
  python3 -c "import json,sys; l=json.load(open(sys.argv[1])); print(sys.argv[2], {k: l.get(k) for k in ('params','steps_done','tokens_seen','best_step','validation_loss','trace_validation_loss')})" "$run/train-log.json" "$name"
done
(cd model && python3 heldout_report.py ../model/runs/gpu-* --json ../model/runs/heldout.json) || true
rm -f "${OUT:-/nonexistent}"/runs.tar.xz.part-*
pack runs
[ -z "${OUT:-}" ] || ls -la "$OUT"
