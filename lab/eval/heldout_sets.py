"""Writes the held-out evaluation sets as plain JSON Lines for `npm run eval`, into data/heldout/:

- broad-validation.jsonl, broad-test.jsonl: model/corpus.py's held-out splits (tool domains, carrier
  texts and phrasing families no training split holds), validation for choosing, test for reporting;
- asb-choose.jsonl, asb-report.jsonl: ../shared/datasets/asb (evaluation only, never trained on),
  split by agent as lab/model/heldout_report.py splits it: even-numbered agents in sorted order choose
  thresholds, odd-numbered ones report.

    python3 lab/eval/heldout_sets.py [--n 600] [--asb-pairs 300]
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "model"), os.path.join(HERE, "..", "model")]  # shipped modules; the lab's
from corpus import Catalogue, build  # noqa: E402
from heldout_report import sample_asb_pairs  # noqa: E402


def write(path: str, cases: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
    print(f"{len(cases)} cases -> {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--out", default="data/heldout")
    ap.add_argument("--n", type=int, default=600, help="cases in each broad split")
    ap.add_argument("--asb-pairs", type=int, default=300, help="pairs in each ASB half")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cat = Catalogue(args.datasets)
    for split in ("validation", "test"):
        write(f"{args.out}/broad-{split}.jsonl", build(cat, split, args.n, args.seed))
    asb = [json.loads(line) for line in lzma.open(f"{args.datasets}/asb/cases.jsonl.xz", "rt", encoding="utf-8")]
    for half, choose in (("choose", True), ("report", False)):
        write(f"{args.out}/asb-{half}.jsonl", sample_asb_pairs(asb, args.asb_pairs, args.seed, choose))


if __name__ == "__main__":
    main()
