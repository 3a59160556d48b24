#!/usr/bin/env python3
"""Writes the decode benchmark's model: a Llama-architecture decoder of about
125M parameters (hidden 768, 12 layers, 12 query / 4 key-value heads, MLP
2048, vocab 32000, fp32), random weights from a fixed seed, exported by
optimum (text-generation-with-past: the past/present form onnxruntime
decodes incrementally). Generated, never committed.

  python3 bench/cpu/make_llama_bench.py /tmp/llama-125m     # -> model.onnx (+ .data)
"""
import os
import sys
import tempfile

import torch

SEED = 20261123


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/llama-125m"
    if os.path.exists(os.path.join(out, "model.onnx")):
        print("exists:", out)
        return
    from optimum.exporters.onnx import main_export
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                      num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
                      max_position_embeddings=2048, bos_token_id=1, eos_token_id=2,
                      tie_word_embeddings=False)
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(cfg).eval()
    print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
    with tempfile.TemporaryDirectory() as tmp:
        hf = os.path.join(tmp, "hf")
        model.save_pretrained(hf)
        main_export(hf, output=out, task="text-generation-with-past")
    print("wrote", out)


if __name__ == "__main__":
    main()
