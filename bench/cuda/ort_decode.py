#!/usr/bin/env python3
"""onnxruntime's side of the GPU benchmark (bench/cuda/decode.sh): the same
ONNX file (bench/cuda/make_model.py's past/present form) run by
onnxruntime with the CUDA execution provider, greedy generation timed the
way torch_decode.py and `llmc bench` time it: the same P pseudo-random
prompt ids (seed 1), its prefill (time to first token, which here includes
copying that prefill's logits to the host: the graph computes them for
every position, and argmax runs on the host), then G decode steps, each
feeding the step before's present caches back as past ones without leaving
the device (I/O binding; the past grows each step, so the step cannot be
one CUDA graph).

In fp16 (the default on cuda) it runs MODEL_DIR/model-f16.onnx, written
once from model.onnx: every float initializer, input, output and constant
in half, casts to float made casts to half (what llmc compile --dtype f16
does to the weights); model.onnx itself when make_model.py wrote it in
half.

(bench/cpu/ort_decode.py is the CPU benchmarks' counterpart: one sequence,
caches through the host, f32.)

Prints one JSON object: mode ("ort"), provider, batch, prompt, generated,
ttft_ms, tpot_ms (medians over the runs), tokens_per_s, and the greedy ids
of sequence 0.

  ort_decode.py MODEL_DIR [--batch B] [--prompt-len P] [--gen G] [--runs R]
                [--device cuda|cpu] [--dtype f16|f32] [--convert]

--convert only writes model-f16.onnx (onnx needed, not onnxruntime: it can
run beside the GPU tests). onnxruntime-gpu is not on the device tool's
machines (their onnxruntime has no CUDA provider): scripts/carry-ort-gpu.sh
says how its wheel travels there.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx


def to_half(src, dst):
    """model.onnx with every float tensor in half (make_model.half_model),
    saved to dst (external data beside it)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_model import half_model
    m = half_model(onnx.load(src))
    onnx.save(m, dst + ".tmp", save_as_external_data=True,
              location=os.path.basename(dst) + ".data")
    os.replace(dst + ".tmp", dst)


class Runner:
    def __init__(self, path, device):
        import onnxruntime as ort
        self.ort = ort
        if device == "cuda" and hasattr(ort, "preload_dlls"):
            # cuDNN 9 and the CUDA 13 libraries from the nvidia-* Python
            # packages beside PyTorch (the provider needs cuDNN to load).
            ort.preload_dlls()
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        providers = (["CUDAExecutionProvider"] if device == "cuda" else []) + \
            ["CPUExecutionProvider"]
        self.session = ort.InferenceSession(path, so, providers=providers)
        self.provider = self.session.get_providers()[0]
        if device == "cuda" and self.provider != "CUDAExecutionProvider":
            raise SystemExit("ort_decode: onnxruntime has no CUDA execution provider here")
        self.device = "cuda" if device == "cuda" else "cpu"
        self.past = [i for i in self.session.get_inputs() if i.name.startswith("past")]
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.dtype = np.float16 if self.past[0].type == "tensor(float16)" else np.float32

    def step(self, ids, start, past):
        """Runs ids [B, S] at positions start.. over `past` (OrtValues or
        None: empty); returns (logits of the last position as numpy,
        presents as OrtValues on the device)."""
        b, s = ids.shape
        io = self.session.io_binding()
        io.bind_cpu_input("input_ids", ids)
        io.bind_cpu_input("position_ids",
                          np.broadcast_to(np.arange(start, start + s, dtype=np.int64), (b, s)).copy())
        for i, inp in enumerate(self.past):
            if past is None:
                shape = [b if isinstance(d, str) and d == "batch_size" else
                         (0 if isinstance(d, str) else d) for d in inp.shape]
                empty = self.ort.OrtValue.ortvalue_from_numpy(np.zeros(shape, self.dtype),
                                                              self.device, 0)
                io.bind_ortvalue_input(inp.name, empty)
            else:
                io.bind_ortvalue_input(inp.name, past[i])
        for name in self.outputs:
            io.bind_output(name, self.device)
        self.session.run_with_iobinding(io)
        out = io.get_outputs()
        logits = out[0].numpy()[:, -1]
        return logits, out[1:]

    def generate(self, prompt, gen):
        t0 = time.perf_counter()
        logits, past = self.step(prompt, 0, None)
        nxt = logits.argmax(-1).astype(np.int64)[:, None]
        t1 = time.perf_counter()
        ids = [int(nxt[0, 0])]
        n = prompt.shape[1]
        for i in range(gen - 1):
            logits, past = self.step(nxt, n + i, past)
            nxt = logits.argmax(-1).astype(np.int64)[:, None]
            ids.append(int(nxt[0, 0]))
        t2 = time.perf_counter()
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / (gen - 1), ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=["f16", "f32"])
    ap.add_argument("--convert", action="store_true")
    a = ap.parse_args()
    dtype = a.dtype or ("f16" if a.device == "cuda" else "f32")
    path = os.path.join(a.model_dir, "model.onnx")
    with open(os.path.join(a.model_dir, "config.json")) as f:
        written = json.load(f).get("dtype", "f32")  # (make_model.py's DTYPE)
    if written == "f16":
        dtype = "f16"  # (the file is half already)
    if dtype == "f16" and written != "f16":
        half = os.path.join(a.model_dir, "model-f16.onnx")
        if not os.path.exists(half):
            to_half(path, half)
        path = half
    if a.convert:
        return
    r = Runner(path, a.device)
    with open(os.path.join(a.model_dir, "config.json")) as f:
        vocab = json.load(f)["vocab"]
    rng = np.random.default_rng(1)
    prompt = rng.integers(0, vocab, (a.batch, a.prompt_len)).astype(np.int64)
    r.generate(prompt, a.gen)  # warm-up
    results = [r.generate(prompt, a.gen) for _ in range(a.runs)]
    tpot = statistics.median(x[1] for x in results)
    print(json.dumps(dict(mode="ort", provider=r.provider, dtype=dtype, batch=a.batch,
                          prompt=a.prompt_len, generated=a.gen,
                          ttft_ms=statistics.median(x[0] for x in results), tpot_ms=tpot,
                          tokens_per_s=a.batch * 1e3 / tpot, ids=results[-1][2])))


if __name__ == "__main__":
    main()
