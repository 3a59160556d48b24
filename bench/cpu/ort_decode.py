#!/usr/bin/env python3
"""onnxruntime's decode speed on a past/present export, measured like `llmc
bench`: a prompt of P tokens, then G greedy tokens one at a time (present fed
back as past), median of R runs after a warm-up. Prints JSON. A static-cache
export (ONNX 24: write_indices and nonpad_kv_seqlen inputs, caches of fixed
length that TensorScatter writes) gets its caches back as they come out.

  python3 bench/cpu/ort_decode.py model.onnx --prompt-len 64 --gen 64 --threads 2
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=0,
                    help="the caches' head size where the model names it instead "
                         "(onnxruntime-genai's kv_cache_dim)")
    args = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in sess.get_inputs()}
    outputs = [o.name for o in sess.get_outputs()]
    static = "write_indices" in inputs
    if static:  # the cache inputs, and their outputs in the same order after the logits
        past = [n for n, i in inputs.items() if len(i.shape) == 4]
        present = dict(zip(past, outputs[1:]))
    else:
        past = [n for n in inputs if n.startswith("past")]
        present = {p: p.replace("past_key_values", "present") for p in past}
    heads, head_dim = inputs[past[0]].shape[1], inputs[past[0]].shape[3]
    if not isinstance(head_dim, int):
        if not args.head_dim:
            sys.exit("the caches' head size is named %r: give --head-dim" % head_dim)
        head_dim = args.head_dim
    rows = inputs[past[0]].shape[2] if static else 0
    vocab = sess.get_outputs()[0].shape[-1]
    rng = np.random.default_rng(0)
    prompt = [int(t) for t in rng.integers(0, vocab if isinstance(vocab, int) else 1000,
                                           args.prompt_len)]

    def step(ids, cache, start):
        n = len(ids)
        feed = {"input_ids": np.array([ids], np.int64)}
        if "attention_mask" in inputs:
            feed["attention_mask"] = np.ones((1, start + n), np.int64)
        if "position_ids" in inputs:
            feed["position_ids"] = np.arange(start, start + n, dtype=np.int64)[None]
        if static:
            feed["write_indices"] = np.array([start], np.int64)
            feed["nonpad_kv_seqlen"] = np.array([start + n], np.int64)
        feed.update(cache)
        res = sess.run(None, feed)
        new = {p: res[outputs.index(present[p])] for p in past}
        return res[0], new

    ttft, tpot = [], []
    for run in range(args.runs + 1):
        cache = {p: np.zeros((1, heads, rows, head_dim), np.float32) for p in past}
        t0 = time.perf_counter()
        logits, cache = step(prompt, cache, 0)
        tok = int(np.argmax(logits[0, -1]))
        t1 = time.perf_counter()
        start = args.prompt_len
        for _ in range(args.gen - 1):
            logits, cache = step([tok], cache, start)
            start += 1
            tok = int(np.argmax(logits[0, -1]))
        t2 = time.perf_counter()
        if run:
            ttft.append((t1 - t0) * 1e3)
            tpot.append((t2 - t1) * 1e3 / (args.gen - 1))
    print(json.dumps({"onnxruntime": ort.__version__, "threads": args.threads,
                      "time_to_first_token_ms": statistics.median(ttft),
                      "time_per_output_token_ms": statistics.median(tpot),
                      "decode_tokens_per_s": 1e3 / statistics.median(tpot)}, indent=2))


if __name__ == "__main__":
    main()
