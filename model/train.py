"""Train the embedded proxy: tokenizer, then the decoder, on the generator's train split and the
AgentDojo training traces. Writes lab/runs/<name>/{tokenizer.json, tokenizer_config.json,
config.json, model.pt, train-log.json}.

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 model/train.py

The defaults are the CPU recipe (2 cores, under 60 minutes). `--device cuda --bf16` trains the same
architecture on a GPU with torch 2 (lab/model/gpu-train.sh has the command the committed model used).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import time

import torch
import torch.nn.functional as F

import agentdojo
import bpe
from data import (copy_drill, counterfactuals, encode_case, load_jsonl, request_counterfactual, strip_context,
                  trace_request_counterfactual, trace_texts)
from export_onnx import load
from padding import filler_sentences, pad_case
from proxy_model import ProxyConfig, ProxyLM
from scramble import scramble_names, scramble_values


def batches(examples, max_tokens: int, rng: random.Random):
    """Length-bucketed batches whose padded size stays under max_tokens."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].ids))
    out, cur, cur_max = [], [], 0
    for i in order:
        n = len(examples[i].ids)
        if cur and max(cur_max, n) * (len(cur) + 1) > max_tokens:
            out.append(cur)
            cur, cur_max = [], 0
        cur.append(i)
        cur_max = max(cur_max, n)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(examples, idx, pad_id: int, device: str = "cpu"):
    # Right padding in training; the engine's left padding is covered by the parity tests.
    n = max(len(examples[i].ids) for i in idx)
    ids = torch.full((len(idx), n), pad_id, dtype=torch.long)
    w = torch.zeros((len(idx), n))
    u = torch.zeros((len(idx), n))
    am = torch.zeros((len(idx), n), dtype=torch.long)
    for r, i in enumerate(idx):
        e = examples[i]
        ids[r, : len(e.ids)] = torch.tensor(e.ids)
        w[r, : len(e.ids)] = torch.tensor(e.weights)
        if e.unlikely is not None:
            u[r, : len(e.ids)] = torch.tensor(e.unlikely)
        am[r, : len(e.ids)] = 1
    pos = torch.arange(n).unsqueeze(0).expand(len(idx), -1)
    if device == "cpu":
        return ids, am, pos, w, u
    return tuple(t.to(device, non_blocking=True) for t in (ids, am, pos, w, u))


def loss_of(model, ids, am, pos, w, u=None):
    """Weighted next-token NLL, plus the unlikelihood -log(1 - p) on tokens u weighs (request
    counterfactuals), both averaged over the weight they carry together."""
    logits, _, _ = model(ids, am, pos)
    logits = logits.float()
    logp = F.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    nll = -logp
    tw = w[:, 1:]
    total, weight = (nll * tw).sum(), tw.sum()
    if u is not None and bool((u > 0).any()):
        uw = u[:, 1:]
        # log(1 - p), with p kept below 1 - 1e-4 so a confident token costs at most ~9.2 nats.
        ul = -torch.log1p(-logp.clamp(max=math.log1p(-1e-4)).exp())
        total, weight = total + (ul * uw).sum(), weight + uw.sum()
    return total / weight.clamp(min=1e-9), nll, tw


@torch.no_grad()
def evaluate(model, examples, pad_id, max_tokens, device="cpu", amp=None):
    model.eval()
    tot = tot_w = act = act_n = 0.0
    for idx in batches(examples, max_tokens, random.Random(0)):
        ids, am, pos, w, _ = collate(examples, idx, pad_id, device)
        with amp_context(device, amp):
            _, nll, tw = loss_of(model, ids, am, pos, w)
        mask = am[:, 1:].float()
        tot += (nll * mask).sum().item()
        tot_w += mask.sum().item()
        act += (nll * (tw == 1.0).float()).sum().item()
        act_n += (tw == 1.0).float().sum().item()
    model.train()
    return tot / max(tot_w, 1), act / max(act_n, 1)


def make_optimizer(model, lr: float):
    """AdamW as every run here uses it: weight decay 0.05 on matrices only, betas (0.9, 0.95)."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95))


def cosine_lr(lr: float, step: int, warmup: int, steps: int, done: float = 0.0) -> float:
    """Linear warmup, then cosine decay to a tenth of `lr` over `steps`, or sooner when `done` (the share of
    the time budget spent, for time schedules) is further along."""
    if step < warmup:
        return lr * (step + 1) / warmup
    p = max((step - warmup) / max(1, steps - warmup), done)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def train_step(model, opt, examples, idx, pad_id: int, device: str = "cpu", amp=None):
    """One optimiser step on a batch (clipped at norm 1); returns the loss tensor and the tokens it held."""
    ids, am, pos, w, u = collate(examples, idx, pad_id, device)
    with amp_context(device, amp):
        loss, _, _ = loss_of(model, ids, am, pos, w, u)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss, int(am.sum())


def amp_context(device: str, amp):
    import contextlib
    return torch.autocast(device_type=device, dtype=amp) if amp is not None else contextlib.nullcontext()


# The tokenizer encode jobs use; set once in main, inherited by forked encoding workers.
_TOK = None


def _encode_job(job):
    case, max_len, seed, with_tools, redact = job
    return encode_case(_TOK, case, max_len, random.Random(seed), with_tools, redact)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", default="data/train.jsonl",
                    help="generator cases; several files separated by commas (e.g. model/corpus.py's broad-train)")
    ap.add_argument("--validation", default="data/validation.jsonl", help="likewise, comma-separated")
    ap.add_argument("--traces", default="../shared/datasets/agentdojo/train-traces.jsonl")
    ap.add_argument("--out", default="lab/runs/edgearmor-proxy")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--max-len", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--steps", type=int, default=900)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-minutes", type=float, default=58.0, help="stop training early past this wall time")
    ap.add_argument("--warmup", type=int, default=None, help="warmup steps (default: max(20, steps / 30))")
    ap.add_argument("--time-schedule", action="store_true",
                    help="decay the learning rate over --max-minutes as well as --steps, whichever ends first")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda to train on a GPU (torch 2)")
    ap.add_argument("--bf16", action="store_true", help="bfloat16 autocast (GPU); master weights stay fp32")
    ap.add_argument("--tokenizer", default=None, help="reuse the tokenizer in this directory instead of training one")
    ap.add_argument("--workers", type=int, default=1, help="processes that encode the data")
    ap.add_argument("--eval-every", type=int, default=0, help="validate every N steps and keep the best weights")
    ap.add_argument("--counterfactuals", type=float, default=0.0,
                    help="probability of adding each ablated copy of a followed-attack case (data.counterfactuals)")
    ap.add_argument("--request-counterfactuals", type=float, default=0.0,
                    help="probability of adding a request counterfactual of each user-driven generator case "
                         "(data.request_counterfactual)")
    ap.add_argument("--trace-request-counterfactuals", type=float, default=0.0,
                    help="the same for each AgentDojo run with no attack (data.trace_request_counterfactual); "
                         "without attack counterfactuals from the traces it teaches that no AgentDojo call "
                         "survives without its request, injected ones included (see lab/model/gpu-trials.md)")
    ap.add_argument("--trace-exclude-suite", default=None,
                    help="leave every AgentDojo run of this suite out (cross-suite held-out models: the suite is then "
                         "scored by a model that never saw it)")
    ap.add_argument("--trace-holdout", type=int, default=0,
                    help="percent of AgentDojo runs kept out of training (by run id, agentdojo.held_out), for "
                         "guard cases cut from them with model/agentdojo.py")
    ap.add_argument("--trace-counterfactuals", type=float, default=0.0,
                    help="probability of adding each AgentDojo run's labelled counterfactual copies "
                         "(agentdojo.counterfactuals: an injected call without the user's turns stays, without "
                         "the injected results it goes; a benign call without the injected results stays)")
    ap.add_argument("--strip-context", type=float, default=0.0,
                    help="probability of dropping a generator case's system prompt and tool list before its "
                         "copies are made (data.strip_context): calls from agents that pass neither")
    ap.add_argument("--scramble-values", type=float, default=0.0,
                    help="fraction of training conversations whose copied identifiers are redrawn (model/scramble.py)")
    ap.add_argument("--scramble-names", type=float, default=0.0,
                    help="fraction of training conversations (generator and traces) whose identifier-like tool names "
                         "are redrawn as names of no meaning (model/scramble.py), so only descriptions tell tools apart")
    ap.add_argument("--scramble-traces", type=float, default=None,
                    help="the same fraction for the AgentDojo runs and every copy cut from them (default: "
                         "--scramble-values); 1 leaves no attacker or user value of theirs to memorise")
    ap.add_argument("--data-fraction", type=float, default=1.0,
                    help="keep this random share of the --train cases (its own draws): a short run encodes only "
                         "about what it can train on")
    ap.add_argument("--copy-drills", type=float, default=0.0,
                    help="synthetic copy sequences added, as a fraction of the training sequences (data.copy_drill)")
    ap.add_argument("--pad-results", type=float, default=0.0,
                    help="fraction of generator train conversations with a tool result padded with filler up to the "
                         "window (model/padding.py); their counterfactuals keep the padding")
    ap.add_argument("--pad-filler", default="../shared/datasets/gsm8k/problems.jsonl.xz",
                    help="GSM8K problems whose train-split sentences are the filler of --pad-results")
    ap.add_argument("--resume", action="store_true",
                    help="continue from <out>/checkpoint.pt when it exists (written at every validation): weights, "
                         "optimiser, step, tokens and minutes so far; the batch order is drawn anew")
    ap.add_argument("--init", default=None,
                    help="start from this run directory's weights, config and tokenizer (fine-tuning)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()

    gen_train = [c for p in args.train.split(",") for c in load_jsonl(p)]
    if args.data_fraction < 1:
        df_rng = random.Random(args.seed + 6)
        gen_train = [c for c in gen_train if df_rng.random() < args.data_fraction]
    gen_val = [c for p in args.validation.split(",") for c in load_jsonl(p)]
    traces = [t for t in load_jsonl(args.traces) if not agentdojo.held_out(t, args.trace_holdout)
              and t.get("suite") != args.trace_exclude_suite]
    rng.shuffle(traces)
    n_trace_val = len(traces) // 20
    trace_val, trace_train = traces[:n_trace_val], traces[n_trace_val:]
    print(f"data: {len(gen_train)} generator train, {len(gen_val)} validation, {len(trace_train)} traces "
          f"(+{len(trace_val)} held out)", flush=True)

    if args.init:
        args.tokenizer = args.init
    if args.tokenizer:
        tok = bpe.Tokenizer.load(f"{args.tokenizer}/tokenizer.json")
        tok.save(args.out, args.max_len)
        vocab = tok.vocab
        print(f"tokenizer: {len(vocab)} tokens from {args.tokenizer}", flush=True)
    else:
        texts = [t for c in gen_train + trace_train for t in trace_texts(c)]
        vocab, merges = bpe.train(texts, args.vocab_size)
        tok = bpe.Tokenizer(vocab, merges)
        tok.save(args.out, args.max_len)
        print(f"tokenizer: {len(vocab)} tokens in {time.time() - t0:.0f}s", flush=True)

    global _TOK
    _TOK = tok

    def enc(cases, tools_p, redact_p):
        # Draws stay in this process (same jobs for any worker count); encoding may fan out.
        jobs = [(c, args.max_len, rng.getrandbits(32), rng.random() < tools_p, rng.random() < redact_p) for c in cases]
        if args.workers > 1:
            import multiprocessing as mp
            with mp.get_context("fork").Pool(args.workers) as pool:
                encoded = pool.map(_encode_job, jobs, chunksize=64)
        else:
            encoded = [_encode_job(j) for j in jobs]
        return [e for e in encoded if e is not None]

    if args.strip_context > 0:
        sc_rng = random.Random(args.seed + 3)
        gen_train = [strip_context(c) if sc_rng.random() < args.strip_context else c for c in gen_train]
    if args.pad_results > 0:
        # Before the counterfactuals, so a padded conversation's ablated copies are padded too. Own draws.
        pr_rng = random.Random(args.seed + 7)
        filler = filler_sentences(args.pad_filler)
        padded = 0
        for k, c in enumerate(gen_train):
            if pr_rng.random() >= args.pad_results:
                continue
            p = pad_case(tok, c, pr_rng, filler, args.max_len)
            if p is not None:
                gen_train[k] = p
                padded += 1
        print(f"padded: {padded} of {len(gen_train)} generator train conversations", flush=True)
    # Counterfactual copies are scored with the reasoning masked, as the guard scores them.
    cf = [x for c in gen_train for x in counterfactuals(c) if rng.random() < args.counterfactuals]
    # Their own draws: the default recipe's data stays as it was.
    rq_rng = random.Random(args.seed + 1)
    rq = [x for x in (request_counterfactual(c) for c in gen_train)
          if x is not None and args.request_counterfactuals > 0 and rq_rng.random() < args.request_counterfactuals]
    rq_tr, cf_tr = [], []
    if args.trace_request_counterfactuals > 0:
        rq_tr = [x for x in (trace_request_counterfactual(t, rq_rng) for t in trace_train)
                 if x is not None and rq_rng.random() < args.trace_request_counterfactuals]
    if args.trace_counterfactuals > 0:
        ad_rng = random.Random(args.seed + 2)
        functions = agentdojo.user_task_functions(trace_train)
        cf_tr = [x for t in trace_train for x in agentdojo.counterfactuals(t, functions, ad_rng)
                 if ad_rng.random() < args.trace_counterfactuals]
    p_gen = args.scramble_values
    p_tr = p_gen if args.scramble_traces is None else args.scramble_traces
    if p_gen > 0 or p_tr > 0:
        # After the counterfactuals are cut, which find AgentDojo's attacker values by their real text. One
        # draw per conversation in a fixed order, so equal fractions give the recipe's data as before.
        sv_rng = random.Random(args.seed + 5)
        sv = lambda cases, p: [scramble_values(c, sv_rng) if sv_rng.random() < p else c for c in cases]
        gen_train, trace_train = sv(gen_train, p_gen), sv(trace_train, p_tr)
        cf, cf_tr = sv(cf, p_gen), sv(cf_tr, p_tr)
        rq, rq_tr = sv(rq, p_gen), sv(rq_tr, p_tr)
    if args.scramble_names > 0:
        # Its own draws, after the values' (a recipe without it keeps its data); counterfactual copies are
        # redrawn apart from their source, so a name is never memorised across the pair either.
        sn_rng = random.Random(args.seed + 6)
        sn = lambda cases: [scramble_names(c, sn_rng) if sn_rng.random() < args.scramble_names else c for c in cases]
        gen_train, trace_train, cf, cf_tr, rq, rq_tr = (sn(x) for x in (gen_train, trace_train, cf, cf_tr, rq, rq_tr))
    cf, rq = cf + cf_tr, rq + rq_tr
    # Most sequences carry their tool list (the guard renders it when the input has one); some go
    # without, as callers that pass no tools do.
    train_ex = enc(gen_train, 1.0, 0.15) + enc(trace_train, 0.8, 0.15) + enc(cf + rq, 1.0, 1.0)
    if args.copy_drills > 0:
        cd_rng = random.Random(args.seed + 4)
        first_id = max(tok.special.values()) + 1
        train_ex += [copy_drill(cd_rng, first_id, len(vocab), tok.special["<|bos|>"])
                     for _ in range(int(args.copy_drills * len(train_ex)))]
    val_gen = enc(gen_val, 1.0, 0.0)
    val_traces = enc(trace_val, 0.8, 0.0)
    n_tok = sum(len(e.ids) for e in train_ex)
    print(f"encoded: {len(train_ex)} sequences ({len(cf)} counterfactual, {len(rq)} request counterfactual), "
          f"{n_tok} tokens, "
          f"in {time.time() - t0:.0f}s", flush=True)

    cfg = ProxyConfig(vocab_size=len(vocab), hidden_size=args.hidden, intermediate_size=args.ffn,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.heads, max_position_embeddings=args.max_len,
                      bos_token_id=tok.special["<|bos|>"], eos_token_id=tok.special["<|eos|>"],
                      pad_token_id=tok.special["<|pad|>"])
    if args.init:
        model = load(args.init).train()
        cfg = model.cfg
        print(f"init: weights from {args.init}", flush=True)
    else:
        model = ProxyLM(cfg)
    model = model.to(args.device)
    model.fused_attention = args.device != "cpu" and hasattr(F, "scaled_dot_product_attention")
    amp = torch.bfloat16 if args.bf16 else None
    n_params = sum(p.numel() for p in model.parameters())
    opt = make_optimizer(model, args.lr)
    warmup = args.warmup if args.warmup is not None else max(20, args.steps // 30)

    def lr_at(step):
        done = (time.time() - t_train) / 60 / args.max_minutes if args.time_schedule and step > 0 else 0.0
        return cosine_lr(args.lr, step, warmup, args.steps, done)

    log = {"config": cfg.to_hf(), "params": n_params, "args": vars(args), "steps": [], "evals": []}
    best = None

    def validate():
        nonlocal best
        vl, va = evaluate(model, val_gen, cfg.pad_token_id, args.batch_tokens, args.device, amp)
        tl, ta = evaluate(model, val_traces, cfg.pad_token_id, args.batch_tokens, args.device, amp)
        rec = {"step": step, "validation_loss": vl, "validation_agent_loss": va, "trace_validation_loss": tl,
               "trace_validation_agent_loss": ta, "minutes": (time.time() - t_train) / 60}
        log["evals"].append(rec)
        print("eval " + json.dumps(rec), flush=True)
        if best is None or vl + tl < best[0]:
            best = (vl + tl, step, {k: v.detach().clone() for k, v in model.state_dict().items()})
        if args.resume:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "tokens_seen": tokens_seen,
                        "minutes": (time.time() - t_train) / 60, "best": best, "log": log},
                       f"{args.out}/checkpoint.pt.tmp")
            os.replace(f"{args.out}/checkpoint.pt.tmp", f"{args.out}/checkpoint.pt")

    step, epoch = 0, 0
    t_train = time.time()
    tokens_seen = 0
    if args.resume and os.path.exists(f"{args.out}/checkpoint.pt"):
        ck = torch.load(f"{args.out}/checkpoint.pt", map_location=args.device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, tokens_seen, best, log = ck["step"], ck["tokens_seen"], ck["best"], ck["log"]
        t_train = time.time() - ck["minutes"] * 60
        print(f"resume: step {step}, {ck['minutes']:.1f} minutes done", flush=True)
    while step < args.steps:
        for idx in batches(train_ex, args.batch_tokens, rng):
            if step >= args.steps or (time.time() - t_train) / 60 > args.max_minutes:
                break
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss, n_tokens = train_step(model, opt, train_ex, idx, cfg.pad_token_id, args.device, amp)
            tokens_seen += n_tokens
            step += 1
            if args.eval_every and step % args.eval_every == 0:
                validate()
            if step % 25 == 0 or step == 1:
                el = time.time() - t_train
                print(f"step {step}/{args.steps} loss {loss.item():.3f} lr {lr_at(step):.2e} "
                      f"{tokens_seen / el:.0f} tok/s {el / 60:.1f} min", flush=True)
                log["steps"].append({"step": step, "loss": loss.item(), "minutes": el / 60})
        else:
            epoch += 1
            continue
        break
    train_minutes = (time.time() - t_train) / 60
    if args.eval_every:
        validate()
        model.load_state_dict(best[2])
        log["best_step"] = best[1]
    # The reported losses are fp32 with the export's attention, whatever the training precision.
    model.fused_attention = False
    val_loss, val_action = evaluate(model, val_gen, cfg.pad_token_id, args.batch_tokens, args.device)
    tr_loss, tr_action = evaluate(model, val_traces, cfg.pad_token_id, args.batch_tokens, args.device)
    log.update(steps_done=step, epochs=epoch, train_minutes=train_minutes, tokens_seen=tokens_seen,
               train_tokens=n_tok, validation_loss=val_loss, validation_agent_loss=val_action,
               trace_validation_loss=tr_loss, trace_validation_agent_loss=tr_action,
               total_minutes=(time.time() - t0) / 60)
    print(json.dumps({k: v for k, v in log.items() if k not in ("steps", "config")}, indent=1), flush=True)
    with open(f"{args.out}/config.json", "w") as f:
        json.dump(cfg.to_hf(), f, indent=2)
    torch.save({k: v.float().cpu() for k, v in model.state_dict().items()}, f"{args.out}/model.pt")
    with open(f"{args.out}/train-log.json", "w") as f:
        json.dump(log, f, indent=1)


if __name__ == "__main__":
    main()
