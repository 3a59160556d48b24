#!/usr/bin/env python3
"""Writes the GPU benchmark's model (issue 11): a Llama-shaped ONNX decoder
with random weights (normal, std 0.02, fixed seed; RMS norm weights 1),
external data, no PyTorch needed: the graph of
tools/fixtures/make_onnx_forms.py's opset-23 past/present form (Attention and
RotaryEmbedding ops, SwiGLU MLP, untied lm_head), the form
bench/cpu/make_llama_onnx.py writes for the CPU benchmarks, at:

  1b   hidden 2048, 16 layers, 32 query / 8 key-value heads (head 64),
       MLP 8192, vocab 32000: 1.24B parameters
  7b   hidden 4096, 32 layers, 32 / 8 heads (head 128), MLP 14336, vocab
       32000: 7.2B parameters (Llama-3-8B-like without its vocabulary)
  tiny hidden 64, 2 layers, 4 / 2 heads, MLP 128, vocab 512 (the scripts'
       own check, on a CPU)

The rope tables hold MAX_POSITIONS rows (default 4224: a 4096-token context
and its decode). bench/cuda/torch_decode.py loads the same initializers into
transformers' LlamaForCausalLM. Generated on the machine that runs the
benchmark, never committed.

  python3 bench/cuda/make_model.py 1b OUT_DIR [MAX_POSITIONS]
"""
import json
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "fixtures"))
import make_onnx_forms as forms  # noqa: E402

SHAPES = {
    "tiny": dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=512),
    "1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=32000),
    "7b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=32000),
}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in SHAPES:
        sys.exit("usage: make_model.py {%s} OUT_DIR [MAX_POSITIONS]" % "|".join(SHAPES))
    shape, out = sys.argv[1], sys.argv[2]
    max_pos = int(sys.argv[3]) if len(sys.argv) > 3 else 4224
    s = SHAPES[shape]
    if os.path.exists(os.path.join(out, "model.onnx")):
        print("exists:", out)
        return
    os.makedirs(out, exist_ok=True)
    forms.VOCAB, forms.LAYERS, forms.HEADS, forms.FFN = s["vocab"], s["layers"], s["heads"], s["ffn"]
    forms.MAX_POS, forms.HIDDEN = max_pos, s["hidden"]
    forms.HEAD_DIM = s["hidden"] // s["heads"]
    forms.WEIGHT_SCALE = 0.02  # a trained model's scale: fp16 activations stay finite
    forms.KEEP_WEIGHTS = False
    forms.CHECK = False  # (past protobuf's 2 GB: checked below, by path, once saved)
    forms.FORMS["bench"] = dict(layout="4d", kv_heads=s["kv_heads"], rope="ids", interleaved=0,
                                rotary=forms.HEAD_DIM, cache="past_present", mask="causal",
                                mlp="swiglu",
                                names=("past_key_values.%d.%s", "present.%d.%s"))
    model, _, _, _ = forms.build("bench")
    onnx.save(model, os.path.join(out, "model.onnx"), save_as_external_data=True,
              location="model.onnx.data")
    onnx.checker.check_model(os.path.join(out, "model.onnx"), full_check=True)
    config = dict(s, head_dim=forms.HEAD_DIM, max_positions=max_pos, rope_theta=forms.THETA,
                  rms_norm_eps=forms.EPS)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    print(out)


if __name__ == "__main__":
    main()
