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
and its decode). DTYPE f16 writes every float tensor in half (half_model:
the 7b shape's file is then 14 GB instead of 29, which with llmc's and
PyTorch's copies fits the GPU machines' 64 GB disk); f32 by default.
bench/cuda/torch_decode.py loads the same initializers into transformers'
LlamaForCausalLM. Generated on the machine that runs the benchmark, never
committed.

  python3 bench/cuda/make_model.py 1b OUT_DIR [MAX_POSITIONS] [f32|f16]
"""
import json
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "fixtures"))
import make_onnx_forms as forms  # noqa: E402

SHAPES = {
    "tiny": dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=512),
    "1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=32000),
    "7b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=32000),
}


def half_model(m):
    """m with every float initializer, input, output, intermediate and
    constant in half, and casts to float made casts to half (in place)."""
    f32, f16 = TensorProto.FLOAT, TensorProto.FLOAT16
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == f32:
            g.initializer[i].CopyFrom(onnx.numpy_helper.from_array(
                onnx.numpy_helper.to_array(t).astype(np.float16), t.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == f32:
            v.type.tensor_type.elem_type = f16
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == f32:
                a.i = f16
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == f32:
                a.t.CopyFrom(onnx.numpy_helper.from_array(
                    onnx.numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    return m


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in SHAPES or \
            (len(sys.argv) > 4 and sys.argv[4] not in ("f32", "f16")):
        sys.exit("usage: make_model.py {%s} OUT_DIR [MAX_POSITIONS] [f32|f16]" % "|".join(SHAPES))
    shape, out = sys.argv[1], sys.argv[2]
    max_pos = int(sys.argv[3]) if len(sys.argv) > 3 else 4224
    dtype = sys.argv[4] if len(sys.argv) > 4 else "f32"
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
    if dtype == "f16":
        half_model(model)
    onnx.save(model, os.path.join(out, "model.onnx"), save_as_external_data=True,
              location="model.onnx.data")
    onnx.checker.check_model(os.path.join(out, "model.onnx"), full_check=True)
    config = dict(s, head_dim=forms.HEAD_DIM, max_positions=max_pos, rope_theta=forms.THETA,
                  rms_norm_eps=forms.EPS, dtype=dtype)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    print(out)


if __name__ == "__main__":
    main()
