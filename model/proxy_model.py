"""Llama-architecture decoder for the EdgeArmor proxy (RMSNorm, rotary positions, SwiGLU).

Attention is written out by hand (torch 1.13 has no fused SDPA and the ONNX export must expose
softmax probabilities); training on a GPU with torch 2 may switch to the fused kernel
(`ProxyLM.fused_attention`), which computes the same function for right-padded batches. The forward pass takes the same inputs as a transformers.js decoder
export: input_ids, attention_mask, position_ids and an optional KV cache.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ProxyConfig:
    vocab_size: int = 4096
    hidden_size: int = 256
    intermediate_size: int = 704
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    max_position_embeddings: int = 2048
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    bos_token_id: int = 0
    eos_token_id: int = 1
    pad_token_id: int = 2

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def to_hf(self) -> dict:
        """config.json in the layout transformers.js reads for model_type llama."""
        d = asdict(self)
        d.update(
            model_type="llama",
            architectures=["LlamaForCausalLM"],
            hidden_act="silu",
            tie_word_embeddings=True,
            head_dim=self.head_dim,
            torch_dtype="float32",
            use_cache=True,
            attention_bias=False,
            mlp_bias=False,
        )
        return d


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(position_ids: torch.Tensor, head_dim: int, theta: float):
    """cos/sin of shape [batch, 1, seq, head_dim] for the HF (non-interleaved) rotary layout."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=position_ids.device) / head_dim))
    freqs = position_ids.to(torch.float32).unsqueeze(-1) * inv_freq  # [b, s, hd/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)


class Attention(nn.Module):
    def __init__(self, cfg: ProxyConfig):
        super().__init__()
        self.cfg = cfg
        h, hd = cfg.num_attention_heads, cfg.head_dim
        kv = cfg.num_key_value_heads
        self.q_proj = nn.Linear(cfg.hidden_size, h * hd, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, kv * hd, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, kv * hd, bias=False)
        self.o_proj = nn.Linear(h * hd, cfg.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask_bias, past_k=None, past_v=None, fused=False):
        b, s, _ = x.shape
        cfg = self.cfg
        h, kv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        q = self.q_proj(x).view(b, s, h, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, s, kv, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, s, kv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past_k is not None:
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        present_k, present_v = k, v
        if kv != h:
            # Same as repeat_interleave(rep, dim=1), written as unsqueeze/expand/reshape: torch 1.13 exports
            # repeat_interleave with the trace's batch and length baked in, which breaks dynamic shapes.
            rep = h // kv
            t = k.shape[2]
            k = k.unsqueeze(2).expand(b, kv, rep, t, hd).reshape(b, h, t, hd)
            v = v.unsqueeze(2).expand(b, kv, rep, t, hd).reshape(b, h, t, hd)
        if fused:
            # Causal only: with right padding no real token attends to a pad, and pads carry no loss.
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h * hd)
            return self.o_proj(out), None, present_k, present_v
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + mask_bias
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h * hd)
        return self.o_proj(out), probs, present_k, present_v


class MLP(nn.Module):
    def __init__(self, cfg: ProxyConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg: ProxyConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, mask_bias, past_k=None, past_v=None, fused=False):
        a, probs, pk, pv = self.self_attn(self.input_layernorm(x), cos, sin, mask_bias, past_k, past_v, fused)
        x = x + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, probs, pk, pv


class ProxyLM(nn.Module):
    def __init__(self, cfg: ProxyConfig):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([Block(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        # Training-only switch: fused causal attention (torch >= 2), no attention rows, no KV cache.
        self.fused_attention = False
        self.apply(self._init)

    @staticmethod
    def _init(m):
        # std 0.02: torch's default init on tied embeddings starts the loss near 235 (SETUP.md).
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def mask_bias(self, attention_mask: torch.Tensor, q_len: int) -> torch.Tensor:
        """Additive bias [b, 1, q, k]: causal within the new tokens, padding keys masked out."""
        b, k_len = attention_mask.shape
        past = k_len - q_len
        q_pos = torch.arange(q_len, device=attention_mask.device).unsqueeze(1) + past
        k_pos = torch.arange(k_len, device=attention_mask.device).unsqueeze(0)
        causal = (k_pos <= q_pos).unsqueeze(0)  # [1, q, k]
        keep = causal & attention_mask.bool().unsqueeze(1)  # [b, q, k]
        # A large finite negative, not -inf: a fully padded query row must stay finite.
        bias = (~keep).to(torch.float32) * torch.finfo(torch.float32).min
        return bias.unsqueeze(1)

    def forward(self, input_ids, attention_mask, position_ids, past=None, logits_to_keep: int = 0,
                attn_rows: int = 0):
        """Returns (logits, presents, attentions).

        logits covers the last `logits_to_keep` positions (all when 0); attentions holds, per layer,
        the softmax rows of the last `attn_rows` query positions (empty when 0).
        """
        x = self.embed_tokens(input_ids)
        cos, sin = rope_cos_sin(position_ids, self.cfg.head_dim, self.cfg.rope_theta)
        fused = self.fused_attention and past is None and not attn_rows
        bias = None if fused else self.mask_bias(attention_mask, input_ids.shape[1])
        presents, attentions = [], []
        for i, layer in enumerate(self.layers):
            pk, pv = (past[i] if past is not None else (None, None))
            x, probs, nk, nv = layer(x, cos, sin, bias, pk, pv, fused)
            presents.append((nk, nv))
            if attn_rows:
                attentions.append(probs[:, :, -attn_rows:, :])
        x = self.norm(x)
        if logits_to_keep:
            x = x[:, -logits_to_keep:, :]
        logits = F.linear(x, self.embed_tokens.weight)
        return logits, presents, attentions
