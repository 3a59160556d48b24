#!/usr/bin/env python3
"""Writes a ~125M-parameter Llama-shaped ONNX model without PyTorch (random
weights, external data) for the quantization benchmark (bench/cpu/quant.sh):
the graph of tools/fixtures/make_onnx_forms.py's opset-23 past/present form
(Attention and RotaryEmbedding ops, SwiGLU MLP) at the shape of the decode
benchmark's model (bench/cpu/make_llama_bench.py): hidden 768, 12 layers,
12 query / 4 key-value heads, MLP 2048, vocab 32000, untied lm_head. Needs
onnx, onnxruntime and numpy; generated, never committed.

  python3 bench/cpu/make_llama_onnx.py /tmp/llama-125m-onnx [MAX_POSITIONS]

MAX_POSITIONS (default 2048): the rope tables' rows, the longest context
the model takes (bench/cpu/kv_cache.sh uses 4096).
"""
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "fixtures"))
import make_onnx_forms as forms  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/llama-125m-onnx"
max_pos = int(sys.argv[2]) if len(sys.argv) > 2 else 2048
if os.path.exists(os.path.join(out, "model.onnx")):
    print("exists:", out)
    sys.exit(0)
os.makedirs(out, exist_ok=True)
forms.VOCAB, forms.LAYERS, forms.HEADS, forms.FFN, forms.MAX_POS = 32000, 12, 12, 2048, max_pos
forms.HEAD_DIM, forms.HIDDEN = 64, 12 * 64
forms.FORMS["bench"] = dict(layout="4d", kv_heads=4, rope="ids", interleaved=0, rotary=64,
                            cache="past_present", mask="causal", mlp="swiglu",
                            names=("past_key_values.%d.%s", "present.%d.%s"))
model, _, _, _ = forms.build("bench")
onnx.save(model, os.path.join(out, "model.onnx"), save_as_external_data=True,
          location="model.onnx.data")
print(out)
