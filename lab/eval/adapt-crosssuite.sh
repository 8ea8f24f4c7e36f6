#!/usr/bin/env bash
# The AgentDojo cross-suite protocol of `edgearmor adapt` (issue 33 kept its base models): a base model that
# never saw SUITE's traces (lab/models/s-no<suite>, built by lab/model/suite-bases.sh) adapts on SUITE's
# attack-free training runs, the agent's own traffic; SUITE's dev cases (never trained or adapted on: real
# agents' injected and benign calls) are scored with the base and the adapted model, and with the embedded
# model for reference (it trained on SUITE's traces, so it is in distribution there). About 45 minutes on
# 2 cores with the 30-minute default.
#
#   bash lab/eval/adapt-crosssuite.sh OUT [SUITE=slack] [adapt flags...]
#
# OUT gets traffic.jsonl and dev.jsonl (derived from ../shared/datasets: keep them out of git), the adapted
# model in OUT/model, the base/, adapted/ and embedded/ eval runs, and summary.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
# bin/edgearmor.js runs dist/: rebuilt here, so a measurement never runs stale code.
npm run --silent build:lib
out=${1:?usage: bash lab/eval/adapt-crosssuite.sh OUT [SUITE=slack] [adapt flags...]}
suite=${2:-slack}
shift $(( $# >= 2 ? 2 : 1 ))
case $suite in slack | banking) ;; *) echo "SUITE is slack or banking, not $suite" >&2; exit 2 ;; esac
mkdir -p "$out"
base=lab/runs/base-no$suite
[ -f "$base/manifest.json" ] || bash lab/model/suite-bases.sh lab/runs > /dev/null
/usr/bin/python3 lab/eval/agentdojo_suite.py "$suite" --traffic "$out/traffic.jsonl" --dev "$out/dev.jsonl"
start=$(date +%s)
status=0
node bin/edgearmor.js adapt "$out/traffic.jsonl" --base-model "$base" --families train --out "$out/model" --keep-work "$@" \
  >"$out/adapt.out" 2>"$out/adapt.err" || status=$?
echo "adapt: exit $status in $(( $(date +%s) - start )) s" | tee -a "$out/adapt.out"
# An eval whose summary is there already is kept (the base and embedded ones do not change between adapt runs).
[ -f "$out/base/summary.json" ] || node bin/edgearmor.js eval "$out/dev.jsonl" --baselines none --model "$base" --out "$out/base" >"$out/base.out" 2>&1
# Exit 1 means the adapted model was refused as worse than the base: nothing to score with it.
[ "$status" -ne 0 ] || node bin/edgearmor.js eval "$out/dev.jsonl" --baselines none --model "$out/model" --out "$out/adapted" >"$out/adapted.out" 2>&1
[ -f "$out/embedded/summary.json" ] || node bin/edgearmor.js eval "$out/dev.jsonl" --baselines none --out "$out/embedded" >"$out/embedded.out" 2>&1
{
  echo "| model on dev-$suite | TPR | FPR | ROC-AUC | TPR at 5% FPR | unscored |"
  echo "| --- | --- | --- | --- | --- | --- |"
  for run in base adapted embedded; do
    [ -f "$out/$run/summary.json" ] || continue
    node -e 'const m = require(process.argv[1]).methods.edgearmor; const f = (v) => (v == null ? "-" : v.toFixed(3));
      console.log(`| ${process.argv[2]} | ${f(m.tpr)} | ${f(m.fpr)} | ${f(m.roc_auc)} | ${f(m.tpr_at_5pct_fpr)} | ${m.unscored} of ${m.n} |`);' \
      "$(cd "$out/$run" && pwd)/summary.json" "$run"
  done
} | tee "$out/summary.md"
