#!/usr/bin/env bash
# Scores what lab/model/gpu_adapt.py trained on the GPU as adapt's step 6 and the cross-suite protocol would:
# each NAME.fp16.pt becomes a model directory (fp32 ONNX exported here by torch 1.13, q4, manifest), its operating
# point is chosen on the kept run's own held-out checks (lab/eval/recalibrate-adapted.ts: adapt's held-out traffic,
# never dev), and `edgearmor eval` scores SUITE's dev cases with it. NAME starts with its suite (slack-..., banking30-...).
#
#   bash lab/eval/gpu-adapt-eval.sh OUT SUITE=WORK ... -- NAME.fp16.pt ...
#
# POINT_ONLY=1 stops after the point (adapt's held-out numbers, OUT/NAME/recalibrate.out): a choice between runs
# is made there, and dev is scored for the chosen ones only.
#
# WORK is the kept adapt work folder the GPU run replayed (its holdout-cases.jsonl). A model directory given instead
# of a .pt file (e.g. a link named slack-cpu60 to WORK/candidate, the CPU run's own model) is recalibrated and
# scored the same way.
set -euo pipefail
cd "$(dirname "$0")/../.."
npm run --silent build:lib
out=${1:?usage: bash lab/eval/gpu-adapt-eval.sh OUT SUITE=WORK ... -- MODEL ...}
shift
declare -A work
while [ $# -gt 0 ] && [ "$1" != "--" ]; do work[${1%%=*}]=${1#*=}; shift; done
shift
mkdir -p "$out"
for suite in "${!work[@]}"; do
  # A suite that is not AgentDojo's (SGD Movies) brings its evaluation file: OUT/dev-SUITE.jsonl, put there first.
  [ -s "$out/dev-$suite.jsonl" ] && continue
  /usr/bin/python3 lab/eval/agentdojo_suite.py "$suite" --dev "$out/dev-$suite.jsonl"
done
export PYTHONWARNINGS=ignore::UserWarning
for m in "$@"; do
  name=$(basename "$m" .fp16.pt)
  suite=$(sed 's/[^a-z].*//' <<<"$name")
  [ -f "$out/$name/eval/summary.json" ] && continue
  [ -n "${POINT_ONLY:-}" ] && [ -d "$out/$name/point" ] && continue
  w=${work[$suite]:?no WORK given for $suite}
  mkdir -p "$out/$name"
  if [ -f "$m" ]; then
    run=$(mktemp -d)
    kept=lab/models/s-no$suite
    [ -d "$kept" ] || kept=public/models/edgearmor-proxy  # the embedded model was the base
    cp "$kept"/{config.json,tokenizer.json,tokenizer_config.json} "$run"/
    cp "$m" "$run/model.pt"
    /usr/bin/python3 model/export_onnx.py --run "$run" --out "$out/$name/model" > /dev/null
    /usr/bin/python3 model/quantize.py "$out/$name/model" > /dev/null
    /usr/bin/python3 model/manifest.py "$out/$name/model" --name "$(basename "$kept")-adapted" > /dev/null
    rm -r "$run"
    src=$out/$name/model
  else
    src=$m
  fi
  # recalibrate-adapted.ts scores WORK/candidate when there is one: give it the held-out checks alone.
  hw=$(mktemp -d) && cp "$w/holdout-cases.jsonl" "$hw/"
  [ -d "$out/$name/point" ] || npx tsx lab/eval/recalibrate-adapted.ts "$hw" "$src" "$out/$name/point" > "$out/$name/recalibrate.out" 2> /dev/null
  rm -r "$hw"
  if [ -n "${POINT_ONLY:-}" ]; then grep -E "^chosen with" "$out/$name/recalibrate.out" | sed "s/^/$name: /" | tee -a "$out/points.md"; continue; fi
  node bin/edgearmor.js eval "$out/dev-$suite.jsonl" --baselines none --model "$out/$name/point" --out "$out/$name/eval" > "$out/$name/eval.out" 2>&1
  node -e 'const s = require(process.argv[1]).methods; const f = (v) => (v == null ? "-" : v.toFixed(3));
    const r = (k) => `${f(s[k].roc_auc)} / ${f(s[k].tpr_at_5pct_fpr)}`;
    console.log(`| ${process.argv[2]} | ${f(s.edgearmor.tpr)} | ${f(s.edgearmor.fpr)} | ${r("edgearmor")} | ${r("edgearmor/point")} |`);' \
    "$(cd "$out/$name/eval" && pwd)/summary.json" "$name" | tee -a "$out/table.md"
  grep -E "^(chosen with|[0-9]+ of)" "$out/$name/recalibrate.out" | sed "s/^/  $name: /"
done
