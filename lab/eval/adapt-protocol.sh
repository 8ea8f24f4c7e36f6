#!/usr/bin/env bash
# The unseen-domain protocol of `edgearmor adapt` end to end (issue 31; docs/adapt.md has the results):
# build the family's traffic and evaluation halves, adapt on the traffic with the training phrasing
# families only, score the evaluation half with the base and the adapted model, and summarise per call
# and per conversation. About 45 minutes on 2 cores with the 30-minute default.
#
#   bash lab/eval/adapt-protocol.sh OUT [FAMILY=Movies] [adapt flags...]
#
# OUT gets traffic.jsonl and eval.jsonl (derived from ../shared/datasets: keep them out of git), the
# adapted model in OUT/model (its adapt-report.json holds no traffic text), base/ and adapted/ eval runs,
# and summary-protocol.json. Runs from the repository after `npm ci` (it rebuilds dist/ first).
set -euo pipefail
cd "$(dirname "$0")/../.."
# bin/edgearmor.js runs dist/: rebuilt here, so a measurement never runs stale code.
npm run --silent build:lib
out=${1:?usage: bash lab/eval/adapt-protocol.sh OUT [FAMILY] [adapt flags...]}
family=${2:-Movies}
shift $(( $# >= 2 ? 2 : 1 ))
mkdir -p "$out"
/usr/bin/python3 lab/eval/adapt_protocol.py --family "$family" --out "$out"
start=$(date +%s)
status=0
node bin/edgearmor.js adapt "$out/traffic.jsonl" --families train --out "$out/model" --keep-work "$@" >"$out/adapt.out" 2>"$out/adapt.err" || status=$?
echo "adapt: exit $status in $(( $(date +%s) - start )) s" | tee -a "$out/adapt.out"
# Exit 1 means the adapted model was refused as worse than the base: nothing to score with it.
node bin/edgearmor.js eval "$out/eval.jsonl" --baselines none --out "$out/base" >"$out/base.out" 2>&1
if [ "$status" -eq 0 ]; then
  node bin/edgearmor.js eval "$out/eval.jsonl" --baselines none --model "$out/model" --out "$out/adapted" >"$out/adapted.out" 2>&1
fi
/usr/bin/python3 lab/eval/adapt_protocol.py --summarize "$out"
