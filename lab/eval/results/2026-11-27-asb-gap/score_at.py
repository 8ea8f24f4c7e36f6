import sys
sys.path.insert(0, 'lab/model'); sys.path.insert(0, 'model')
import score_loo, torch
run, cases, out, L = sys.argv[1:5]
torch.set_num_threads(1)
model = score_loo.load(run); tok = score_loo.Tokenizer.load(f"{run}/tokenizer.json")
score_loo.score_file(model, tok, int(L), cases, out, None, False, 'cpu')
