"""The second loan's choice table (gpu-trials.md, "the second loan"): every run on the whole asb-choose slice
(the first call's table had its first 345 ASB cases only), the other slices as scored on the device.
Run from the repository root after unpacking the call's files into lab/runs/."""
import json, os, sys
sys.path.insert(0, 'lab/model')
from heldout_report import slices
from loo_report import rates

R, HERE = 'lab/runs', os.path.dirname(__file__)
C = ('broad-validation', 'tools:broad-validation', 'adv-val', 'asb-choose')


def load(p):
    return [json.loads(line) for line in open(p) if line.strip()]


def row(run, ids=None):
    out = {}
    for name in ('broad-validation', 'adv-val', 'asb'):
        path = f'{R}/{run}/{name}-scores.jsonl'
        if not os.path.exists(path):
            continue
        recs = [r for r in load(path) if ids is None or name != 'asb' or r['id'] in ids]
        for sl, rs in slices(name, recs).items():
            if sl.startswith('clean:') or not rs:
                continue
            out[sl] = (rates(rs, 'seed', tau=-0.05, which='tools') if sl.startswith('tools:')
                       else rates(rs, 'user_weight_2', tau=-0.1))
    return out


def fmt(v):
    return f"{v['roc_auc']:.3f} ({v['tpr']:.2f}/{v['fpr']:.2f}, n {v['n_pos']}+{v['n_neg']})" if v else '-'


first = json.load(open('lab/eval/results/2026-11-26-gpu/embedded-heldout.json'))['base-import']
first345 = {r['id'] for r in load(f'{R}/gpu-m-full-rq33/asb-partial.jsonl')}
table = {}
for label, run in (('m-rq33-cont (this call)', 'gpu-m-rq33-cont'), ('m-full-rq33 (first call)', 'gpu-m-full-rq33'),
                   ('embedded (base-import)', 'base-import')):
    t = row(run)
    if run == 'base-import':  # its other slices were scored on the device in the first call
        t.update({k: first[k] for k in C[:3]})
    t['asb-choose (first 345)'] = row(run, first345).get('asb-choose')
    table[label] = t
print('| run | ' + ' | '.join(C) + ' | mean | asb-choose, first call\'s 345 cases | asb-report, reported only |')
print('|' + ' --- |' * (len(C) + 4))
for label, t in table.items():
    aucs = [t.get(c, {}).get('roc_auc') for c in C]
    mean = f'{sum(aucs) / 4:.3f}' if None not in aucs else 'incomplete'
    print(f'| {label} | ' + ' | '.join(fmt(t.get(c)) for c in C) + f' | {mean} | '
          + fmt(t.get('asb-choose (first 345)')) + ' | ' + fmt(t.get('asb-report')) + ' |')
json.dump(table, open(f'{HERE}/choice-table.json', 'w'), indent=1)
