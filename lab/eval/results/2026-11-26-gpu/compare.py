import json, sys, os
sys.path.insert(0, 'lab/model')
from heldout_report import slices, median_du
from loo_report import rates
R = 'lab/runs'
runs = ['gpu-m-full', 'gpu-m-full-rq33', 'gpu-m-full-st1', 'gpu-s-full']
def load(p): return [json.loads(l) for l in open(p) if l.strip()]
asb_ids = set(r['id'] for r in load(f'{R}/gpu-m-full-rq33/asb-partial.jsonl'))
def row(run, asb_path):
    out = {}
    for name, path in (('broad-validation', f'{R}/{run}/broad-validation-scores.jsonl'), ('adv-val', f'{R}/{run}/adv-val-scores.jsonl'), ('asb', asb_path)):
        if not os.path.exists(path): continue
        recs = load(path)
        if name == 'asb': recs = [r for r in recs if r['id'] in asb_ids]
        for sl, rs in slices(name, recs).items():
            if sl.startswith('clean:') or not rs: continue
            v = rates(rs, 'seed', tau=-0.05, which='tools') if sl.startswith('tools:') else rates(rs, 'user_weight_2', tau=-0.1)
            out[sl] = v
    return out
table = {r: row(r, f'{R}/{r}/asb-partial.jsonl') for r in runs}
if os.path.exists(f'{R}/base-import/asb-345-scores.jsonl'):
    b = json.load(open('lab/eval/results/2026-11-26-gpu/embedded-heldout.json'))['base-import']
    base = {k: b[k] for k in ('broad-validation', 'tools:broad-validation', 'adv-val')}
    base.update({k: v for k, v in row('base-import', f'{R}/base-import/asb-345-scores.jsonl').items() if k.startswith('asb')})
    table['embedded (base-import)'] = base
C = ('broad-validation', 'tools:broad-validation', 'adv-val', 'asb-choose')
print('| run | ' + ' | '.join(C) + ' | mean | asb-report (partial) |')
for r, t in table.items():
    aucs = [t.get(c, {}).get('roc_auc') for c in C]
    mean = sum(aucs) / 4 if None not in aucs else None
    fmt = lambda v: f"{v['roc_auc']:.3f} ({v['tpr']:.2f}/{v['fpr']:.2f}, n {v['n_pos']}+{v['n_neg']})" if v else '-'
    print(f"| {r} | " + ' | '.join(fmt(t.get(c)) for c in C) + f" | {mean:.3f} | " + fmt(t.get('asb-report')) + ' |' if mean else f"| {r} | incomplete")
json.dump(table, open('lab/eval/results/2026-11-26-gpu/choice-table.json', 'w'), indent=1)
