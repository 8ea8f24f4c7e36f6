"""Leave-one-out scores of one case file at a given window (lab/model/score_loo.py uses the model's own).

    python3 score_at.py RUN_DIR CASES.jsonl OUT.jsonl WINDOW_TOKENS     # from the repository root
"""
import sys
sys.path.insert(0, 'lab/model'); sys.path.insert(0, 'model')
import score_loo, torch
run, cases, out, L = sys.argv[1:5]
torch.set_num_threads(1)
model = score_loo.load(run); tok = score_loo.Tokenizer.load(f"{run}/tokenizer.json")
score_loo.score_file(model, tok, int(L), cases, out, None, False, 'cpu')
