"""Blocked share per attack type and flow (A1/A2), for several MCP-set runs side by side:

    python3 by_type.py SET.jsonl NAME=results.json ...
"""
import json, sys
from collections import defaultdict
src = {json.loads(l)['id']: json.loads(l) for l in open(sys.argv[1])}
runs = [a.split('=', 1) for a in sys.argv[2:]]
table = defaultdict(dict)
for name, path in runs:
    d = json.load(open(path))
    agg = defaultdict(lambda: [0, 0])
    for c in d['cases']:
        sc = src[c['id']]
        at = sc.get('attack_type') or (sc.get('attack') or {}).get('style')
        a = (sc.get('attack') or {}).get('type')
        key = f"{'inj' if c['label'] == 'injected' else 'ben'} {at} {a}"
        g = c['results']['edgearmor']
        agg[key][0] += bool(g['detected']); agg[key][1] += 1
    for k, v in agg.items():
        table[k][name] = v
names = [n for n, _ in runs]
print('type'.ljust(40), *[n.rjust(12) for n in names])
for k in sorted(table):
    print(k.ljust(40), *[(f"{table[k][n][0]}/{table[k][n][1]}" if n in table[k] else '-').rjust(12) for n in names])
