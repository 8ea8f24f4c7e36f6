"""Build test/fixtures/tiny-proxy-genai: the fused q4 fixture (tiny-proxy-gqa/onnx/model_q4.onnx, the same
seeded weights as tiny-proxy) in the directory layout onnxruntime-genai's model builder writes
(src/python/py/models/builders/base.py, save_model / make_genai_config / save_processing):

  genai_config.json   model.{bos,eos,pad}_token_id, context_length, vocab_size, type, and model.decoder's
                      filename, head_size, hidden_size, num_attention_heads, num_hidden_layers,
                      num_key_value_heads, inputs and outputs; search defaults
  model.onnx          the graph, every initializer stored outside it (the builder's size_threshold_bytes=0)
  model.onnx.data     one external data file named after the graph, beside it
  tokenizer.json, tokenizer_config.json   beside them (tokenizer.save_pretrained)

No config.json and no onnx/ folder, as the builder leaves it. The graph is tiny-proxy-gqa's, its integer
constants as Constant nodes (the builder's make_constant); the Node test checks that both score alike.

Usage: /usr/bin/python3 lab/model/make_genai_fixture.py
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import onnx
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
SOURCE = os.path.join(ROOT, "test", "fixtures", "tiny-proxy-gqa")
OUT = os.path.join(ROOT, "test", "fixtures", "tiny-proxy-genai")
NAME = "tiny-proxy-genai"
GRAPH = "model.onnx"


def genai_config(config: dict) -> dict:
    """genai_config.json as make_genai_config writes it for a decoder with a KV cache."""
    return {
        "model": {
            "bos_token_id": config["bos_token_id"],
            "context_length": config["max_position_embeddings"],
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": GRAPH,
                "head_size": config["head_dim"],
                "hidden_size": config["hidden_size"],
                "inputs": {
                    "input_ids": "input_ids",
                    "attention_mask": "attention_mask",
                    "past_key_names": "past_key_values.%d.key",
                    "past_value_names": "past_key_values.%d.value",
                },
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key", "present_value_names": "present.%d.value"},
                "num_attention_heads": config["num_attention_heads"],
                "num_hidden_layers": config["num_hidden_layers"],
                "num_key_value_heads": config["num_key_value_heads"],
            },
            "eos_token_id": config["eos_token_id"],
            "pad_token_id": config["pad_token_id"],
            "type": config["model_type"],
            "vocab_size": config["vocab_size"],
        },
        "search": {
            "diversity_penalty": 0.0, "do_sample": False, "early_stopping": True, "length_penalty": 1.0,
            "max_length": config["max_position_embeddings"], "min_length": 0, "no_repeat_ngram_size": 0,
            "num_beams": 1, "num_return_sequences": 1, "past_present_share_buffer": False,
            "repetition_penalty": 1.0, "temperature": 1.0, "top_k": 50, "top_p": 1.0,
        },
    }


def as_builder_constants(model: onnx.ModelProto) -> onnx.ModelProto:
    """Integer initializers (shape and axis constants) as Constant nodes, as the builder's make_constant writes
    them: with every initializer stored outside the graph, onnxruntime could not read them for shape inference
    when the graph is loaded from bytes, and the builder never stores them so."""
    ints = [t for t in model.graph.initializer if t.data_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)]
    nodes = [helper.make_node("Constant", [], [t.name], name=f"{t.name}/constant_node", value=t) for t in ints]
    keep = [t for t in model.graph.initializer if t not in ints]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    for n in reversed(nodes):
        model.graph.node.insert(0, n)
    return model


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    with open(os.path.join(SOURCE, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(OUT, "genai_config.json"), "w") as f:
        json.dump(genai_config(config), f, indent=4)
        f.write("\n")
    model = as_builder_constants(onnx.load(os.path.join(SOURCE, "onnx", "model_q4.onnx")))
    onnx.save_model(model, os.path.join(OUT, GRAPH), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=GRAPH + ".data", size_threshold=0)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(SOURCE, name), os.path.join(OUT, name))
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write(f"# {NAME} (test fixture)\n\n"
                "tiny-proxy-gqa's q4 graph (GroupQueryAttention with rotary inside, MatMulNBits; random weights, seed 0) "
                "in onnxruntime-genai's layout: genai_config.json, model.onnx and model.onnx.data at the root, "
                "tokenizer files beside them, no config.json.\n\n"
                "Regenerate: `/usr/bin/python3 lab/model/make_genai_fixture.py`\n")
    subprocess.run([sys.executable, os.path.join(ROOT, "model", "manifest.py"), OUT, "--name", NAME], check=True)


if __name__ == "__main__":
    main()
