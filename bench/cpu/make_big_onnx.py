#!/usr/bin/env python3
"""Writes a large Llama-shaped ONNX model (random weights, external data) for
the load benchmark (bench/cpu/load_checksum.sh): the graph of
tools/fixtures/make_onnx_forms.py's opset-24 static-cache form at
hidden 1024, 24 layers, 16/8 heads, MLP 4096, vocab 32000 (~470M parameters,
1.9 GB in f32). Needs onnx, onnxruntime and numpy; generated, never committed.

  python3 bench/cpu/make_big_onnx.py /tmp/llmc-big
"""
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "fixtures"))
import make_onnx_forms as forms  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/llmc-big"
os.makedirs(out, exist_ok=True)
forms.VOCAB, forms.LAYERS, forms.HEADS, forms.FFN = 32000, 24, 16, 4096
forms.HEAD_DIM, forms.HIDDEN = 64, 16 * 64
forms.FORMS["big"] = dict(layout="4d", kv_heads=8, rope="ids", interleaved=0, rotary=64,
                          cache="static_4d", mask="causal", mlp="swiglu",
                          names=("past.%d.%s", "present.%d.%s"))
model, _, _, _ = forms.build("big")
onnx.save(model, os.path.join(out, "model.onnx"), save_as_external_data=True,
          location="model.onnx.data")
print(out)
