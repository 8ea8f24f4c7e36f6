"""Export a trained proxy to the transformers.js decoder layout, plus EdgeArmor's two extensions.

onnx/model.onnx inputs:  input_ids [b, s], attention_mask [b, past + s], position_ids [b, s],
                         past_key_values.N.key|value [b, kv_heads, past, head_dim],
                         num_logits_to_keep (int64 scalar: logits for the last K positions, 0 = all),
                         num_attention_rows (int64 scalar: attention rows for the last R queries, 0 = none)
         outputs:        logits [b, K, vocab], present.N.key|value, attentions.N [b, heads, R, past + s]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil

import onnx
import torch

from proxy_model import ProxyConfig, ProxyLM


class ExportWrapper(torch.nn.Module):
    def __init__(self, model: ProxyLM):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids, num_logits_to_keep, num_attention_rows, *past_flat):
        m = self.model
        cfg = m.cfg
        x = m.embed_tokens(input_ids)
        from proxy_model import rope_cos_sin
        cos, sin = rope_cos_sin(position_ids, cfg.head_dim, cfg.rope_theta)
        bias = m.mask_bias(attention_mask, input_ids.shape[1])
        presents, attentions = [], []
        seq = input_ids.shape[1]
        rows = torch.clamp(num_attention_rows, max=seq)
        for i, layer in enumerate(m.layers):
            x, probs, nk, nv = layer(x, cos, sin, bias, past_flat[2 * i], past_flat[2 * i + 1])
            presents += [nk, nv]
            attentions.append(probs[:, :, seq - rows:, :])
        x = m.norm(x)
        keep = torch.where(num_logits_to_keep > 0, torch.clamp(num_logits_to_keep, max=seq), seq + 0 * num_logits_to_keep)
        x = x[:, seq - keep:, :]
        logits = torch.matmul(x, m.embed_tokens.weight.t())
        return (logits, *presents, *attentions)


class StandardWrapper(torch.nn.Module):
    """The decoder as onnx-community / Optimum export it: no extension inputs, logits for every position."""

    def __init__(self, model: ProxyLM):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids, *past_flat):
        return self.decode(input_ids, attention_mask, position_ids, past_flat)

    def decode(self, input_ids, attention_mask, position_ids, past_flat):
        m = self.model
        x = m.embed_tokens(input_ids)
        from proxy_model import rope_cos_sin
        cos, sin = rope_cos_sin(position_ids, m.cfg.head_dim, m.cfg.rope_theta)
        bias = m.mask_bias(attention_mask, input_ids.shape[1])
        presents = []
        for i, layer in enumerate(m.layers):
            x, _, nk, nv = layer(x, cos, sin, bias, past_flat[2 * i], past_flat[2 * i + 1])
            presents += [nk, nv]
        logits = torch.matmul(m.norm(x), m.embed_tokens.weight.t())
        return (logits, *presents)


class NoPositionsWrapper(StandardWrapper):
    """A standard export without a position_ids input: positions come from the attention mask, as
    exports of models that never took position ids compute them (cumsum of the mask, minus one)."""

    def forward(self, input_ids, attention_mask, *past_flat):
        pos = (torch.cumsum(attention_mask, dim=-1) - 1).clamp(min=0)[:, -input_ids.shape[1]:]
        return self.decode(input_ids, attention_mask, pos, past_flat)


def load(run_dir: str) -> ProxyLM:
    with open(f"{run_dir}/config.json") as f:
        hf = json.load(f)
    fields = ProxyConfig.__dataclass_fields__
    cfg = ProxyConfig(**{k: v for k, v in hf.items() if k in fields})
    model = ProxyLM(cfg)
    model.load_state_dict(torch.load(f"{run_dir}/model.pt", map_location="cpu"))
    model.eval()
    return model


def export(model: ProxyLM, path: str, extensions: bool = True, external_data: str | None = None,
           position_ids: bool = True) -> None:
    """Exports to `path`; `extensions=False` gives the standard layout (no num_logits_to_keep, no
    attentions), `position_ids=False` (standard layout only) drops that input, `external_data` names
    a file beside `path` that holds every initializer."""
    cfg = model.cfg
    L = cfg.num_hidden_layers
    b, s, past = 2, 5, 3
    ids = torch.randint(0, cfg.vocab_size, (b, s))
    am = torch.ones(b, past + s, dtype=torch.long)
    pos = torch.arange(past, past + s).unsqueeze(0).expand(b, -1).contiguous()
    pk = [torch.zeros(b, cfg.num_key_value_heads, past, cfg.head_dim) for _ in range(2 * L)]
    names_in = ["input_ids", "attention_mask"] + (["position_ids"] if position_ids or extensions else []) + (["num_logits_to_keep", "num_attention_rows"] if extensions else [])
    names_past = [f"past_key_values.{i}.{kv}" for i in range(L) for kv in ("key", "value")]
    names_out = ["logits"] + [f"present.{i}.{kv}" for i in range(L) for kv in ("key", "value")]
    if extensions:
        names_out += [f"attentions.{i}" for i in range(L)]
    dyn = {"input_ids": {0: "batch_size", 1: "sequence_length"},
           "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
           "logits": {0: "batch_size", 1: "num_logits"}}
    if "position_ids" in names_in:
        dyn["position_ids"] = {0: "batch_size", 1: "sequence_length"}
    for n in names_past:
        dyn[n] = {0: "batch_size", 2: "past_sequence_length"}
    for i in range(L):
        for kv in ("key", "value"):
            dyn[f"present.{i}.{kv}"] = {0: "batch_size", 2: "total_sequence_length"}
        if extensions:
            dyn[f"attentions.{i}"] = {0: "batch_size", 2: "num_attention_rows", 3: "total_sequence_length"}
    if extensions:
        wrapper, args = ExportWrapper(model), (ids, am, pos, torch.tensor(2), torch.tensor(2), *pk)
    elif position_ids:
        wrapper, args = StandardWrapper(model), (ids, am, pos, *pk)
    else:
        wrapper, args = NoPositionsWrapper(model), (ids, am, *pk)
    with torch.no_grad():
        torch.onnx.export(wrapper, args, path, input_names=names_in + names_past, output_names=names_out, dynamic_axes=dyn,
                          opset_version=17, do_constant_folding=False)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    if external_data:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=external_data, size_threshold=0)
    else:
        onnx.save(m, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="lab/runs/edgearmor-proxy")
    ap.add_argument("--out", default="public/models/edgearmor-proxy")
    args = ap.parse_args()
    model = load(args.run)
    os.makedirs(f"{args.out}/onnx", exist_ok=True)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(f"{args.run}/{f}", f"{args.out}/{f}")
    export(model, f"{args.out}/onnx/model.onnx")
    print(f"exported {args.out}/onnx/model.onnx")


if __name__ == "__main__":
    main()
