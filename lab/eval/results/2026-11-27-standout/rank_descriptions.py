"""How well each way of reading a check's description deltas ranks its checks (ROC-AUC of the check's largest value,
description attacks against benign calls) and how often it puts the poisoned tool first; from the same raw runs as
sweep_standout.py (a set without description attacks, such as ASB's, has nothing to rank).

    python3 rank_descriptions.py RESULTS.json CASES.jsonl
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_standout import windows_of  # noqa: E402


def auc(pos, neg):
    return sum(1 if p > n else 0.5 if p == n else 0 for p in pos for n in neg) / len(pos) / len(neg)


def others(w, t):
    return [o['delta'] for o in w if o is not t]


SCORERS = {
    'dT - dU (shipped)': lambda w, t: t['score'],
    'dT': lambda w, t: t['delta'],
    'dT - 2nd of window': lambda w, t: t['delta'] - max(others(w, t) or [0]),
    'dT - median of window': lambda w, t: t['delta'] - statistics.median(others(w, t) or [0]),
    'z in window': lambda w, t: (t['delta'] - statistics.mean(others(w, t) or [0])) / (statistics.pstdev(others(w, t) or [0, 0]) + 1e-3),
}


def main():
    res, cases = sys.argv[1], sys.argv[2]
    src = {}
    for line in open(cases):
        c = json.loads(line)
        src[c['id']] = c
    out = {k: {'pos': [], 'neg': [], 'rank': []} for k in SCORERS}
    for c in json.load(open(res))['cases']:
        ds = c['results'].get('edgearmor/description-loo', {}).get('descriptions') or []
        injected = c['label'] == 'injected'
        if not ds or (injected and not c.get('poisonedTool')):
            continue
        for k, f in SCORERS.items():
            vals = [(f(w, t), t['tool']) for w in windows_of(ds) for t in w]
            (out[k]['pos'] if injected else out[k]['neg']).append(max(vals)[0])
            mine = [v for v, tool in vals if tool == c['poisonedTool']] if injected else []
            if mine:
                out[k]['rank'].append(sum(v > mine[0] for v, _ in vals))
    for k, o in out.items():
        if not o['pos'] or not o['neg']:
            print(f'{k:24s} no description attacks or no benign calls to rank')
            continue
        first = sum(x == 0 for x in o['rank'])
        print(f"{k:24s} ROC-AUC {auc(o['pos'], o['neg']):.3f}  (attacks {len(o['pos'])}, benign {len(o['neg'])})  poisoned tool first {first}/{len(o['rank'])}")


if __name__ == '__main__':
    main()
