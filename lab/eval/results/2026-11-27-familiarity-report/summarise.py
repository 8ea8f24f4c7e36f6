"""Compacts `edgearmor check --traffic --json` records to one row per call and sums them up.

    python3 summarise.py NAME RECORDS.jsonl >> summary.txt     (writes NAME.tsv beside this file)

c = log P(call | whole context) per action token; a windowed check's record holds each window's
"full" log-prob under its own key (w2/full, ...), and the guard counts the least of them.
"""
import json
import os
import statistics
import sys

THRESHOLD = -4.92


def least_c(record):
    fulls = [v for k, v in record['log_probs'].items() if k == 'full' or k.endswith('/full')]
    return min(fulls) / record['action_tokens'] if fulls and record['action_tokens'] else None


def main(name, path):
    rows = []
    for line in open(path):
        r = json.loads(line)
        rows.append((r['id'], r['decision'], r['reason'], least_c(r)))
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, f'{name}.tsv'), 'w') as out:
        out.write('id\tdecision\treason\tc\n')
        for i, d, why, c in rows:
            out.write(f'{i}\t{d}\t{why}\t{"" if c is None else round(c, 3)}\n')
    scored = [r for r in rows if r[3] is not None]
    for label, part in [('all', scored), ('first calls (message 2)', [r for r in scored if r[0].endswith(' message 2')]),
                        ('later calls', [r for r in scored if not r[0].endswith(' message 2')])]:
        if not part:
            continue
        below = sum(r[3] < THRESHOLD for r in part)
        blocked = sum(r[1] == 'block' for r in part)
        print(f'{name:10s} {label:24s} calls {len(part):3d}  below {THRESHOLD}: {below:3d}  median c {statistics.median(r[3] for r in part):6.2f}  blocked {blocked:3d}')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
