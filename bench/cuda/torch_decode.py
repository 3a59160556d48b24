#!/usr/bin/env python3
"""PyTorch's side of the GPU benchmark (bench/cuda/decode.sh): the ONNX
model of bench/cuda/make_model.py loaded into transformers'
LlamaForCausalLM (the same weights: each MatMul's [in, out] initializer
transposed into the Linear's [out, in]; the same rope, RMS norm epsilon and
SwiGLU), in fp16 on the GPU, then greedy generation timed the way `llmc
bench` times it: a prompt of P pseudo-random ids (the same ones for every
runner: seed 1), its prefill (time to first token; the logits of its last
position only, as llmc computes them), then G decode steps.

  eager     the model as transformers runs it (a dynamic cache)
  convert   only the weights' conversion into MODEL_DIR/torch-DTYPE.pt,
            which the other modes then load (no GPU needed)
  compile   torch.compile(mode="reduce-overhead", fullgraph) over a static
            cache of P + G positions (gpt-fast's recipe: CUDA graphs, no
            allocation per step); compiled and warmed up before timing

Prints one JSON object per run: mode, batch, prompt, generated, ttft_ms,
tpot_ms (median of the runs' mean time per decode step), tokens_per_s
(batch / tpot), and the greedy ids of sequence 0 (to compare with llmc's).

  torch_decode.py MODEL_DIR --mode eager|compile|convert [--batch B] [--prompt-len P]
                  [--gen G] [--runs R] [--device cuda|cpu]
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import onnx
import onnx.numpy_helper
import torch
from transformers import LlamaConfig, LlamaForCausalLM


def load_model(model_dir, device, dtype):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    kwargs = dict(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["ffn"],
                  num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
                  num_key_value_heads=c["kv_heads"], head_dim=c["head_dim"],
                  max_position_embeddings=c["max_positions"], rms_norm_eps=c["rms_norm_eps"],
                  tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
    cfg = LlamaConfig(**kwargs)
    # (transformers 5 keeps the rope in rope_parameters, 4 in rope_theta.)
    if isinstance(getattr(cfg, "rope_parameters", None), dict):
        cfg.rope_parameters["rope_theta"] = c["rope_theta"]
    cfg.rope_theta = c["rope_theta"]
    torch.set_default_dtype(dtype)
    with torch.device(device):
        model = LlamaForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    missing, unexpected = model.load_state_dict(state_dict(model_dir, c["layers"], dtype),
                                                strict=False)
    missing = [m for m in missing if "rotary_emb" not in m]
    if missing or unexpected:
        raise SystemExit("torch_decode: weights do not match: missing %s, unexpected %s"
                         % (missing, unexpected))
    return model.eval(), cfg


def state_dict(model_dir, layers, dtype):
    """The weights in dtype, converted once per dtype and kept beside the
    model (reading the ONNX file's float32 initializers takes most of a
    run's start)."""
    cached = os.path.join(model_dir, "torch-%s.pt" % str(dtype).split(".")[-1])
    if os.path.exists(cached):
        return torch.load(cached)
    state = {k: torch.from_numpy(np.ascontiguousarray(v)).to(dtype)
             for k, v in onnx_state_dict(model_dir, layers).items()}
    torch.save(state, cached + ".tmp")
    os.replace(cached + ".tmp", cached)
    return state


def onnx_state_dict(model_dir, layers):
    """transformers' names for the ONNX model's initializers ([out, in]
    Linear weights)."""
    model_proto = onnx.load(os.path.join(model_dir, "model.onnx"))
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model_proto.graph.initializer}
    sd = {"model.embed_tokens.weight": init["embed"], "model.norm.weight": init["final_norm"],
          "lm_head.weight": init["lm_head"].T}
    linear = {"self_attn.q_proj": "wq", "self_attn.k_proj": "wk", "self_attn.v_proj": "wv",
              "self_attn.o_proj": "wo", "mlp.gate_proj": "w_gate", "mlp.up_proj": "w_up",
              "mlp.down_proj": "w_down"}
    for i in range(layers):
        p = "model.layers.%d." % i
        for hf, ours in linear.items():
            sd[p + hf + ".weight"] = init["layers.%d.%s" % (i, ours)].T
        sd[p + "input_layernorm.weight"] = init["layers.%d.attn_norm" % i]
        sd[p + "post_attention_layernorm.weight"] = init["layers.%d.mlp_norm" % i]
    return sd


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def run_eager(model, prompt, gen, device):
    t0 = time.perf_counter()
    out = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
    past = out.past_key_values
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    sync(device)
    t1 = time.perf_counter()
    ids = [int(nxt[0, 0])]
    for _ in range(gen - 1):
        out = model(input_ids=nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        ids.append(int(nxt[0, 0]))  # (a host sync per token, as a generation loop has)
    sync(device)
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / (gen - 1), ids


class Compiled:
    """A static cache and torch.compile'd decode step (CUDA graphs)."""

    def __init__(self, model, cfg, batch, length, device, dtype):
        from transformers import StaticCache
        self.model, self.device = model, device
        try:  # transformers 5
            self.cache = StaticCache(config=cfg, max_cache_len=length)
        except TypeError:  # 4.x
            self.cache = StaticCache(config=cfg, max_batch_size=batch, max_cache_len=length,
                                     device=device, dtype=dtype)
        self.step = torch.compile(self._step, mode="reduce-overhead", fullgraph=True)

    def _step(self, ids, position):
        out = self.model(input_ids=ids, past_key_values=self.cache, cache_position=position,
                         use_cache=True)
        return out.logits[:, -1].argmax(-1, keepdim=True)

    def run(self, prompt, gen):
        self.cache.reset()
        n = prompt.shape[1]
        t0 = time.perf_counter()
        out = self.model(input_ids=prompt, past_key_values=self.cache,
                         cache_position=torch.arange(n, device=self.device), use_cache=True,
                         logits_to_keep=1)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        sync(self.device)
        t1 = time.perf_counter()
        ids = [int(nxt[0, 0])]
        for i in range(gen - 1):
            nxt = self.step(nxt, torch.tensor([n + i], device=self.device)).clone()
            ids.append(int(nxt[0, 0]))
        sync(self.device)
        t2 = time.perf_counter()
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / (gen - 1), ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--mode", choices=["eager", "compile", "convert"], required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    dtype = torch.float16 if a.device == "cuda" else torch.float32
    if a.mode == "convert":  # only the weights' conversion (no GPU needed)
        with open(os.path.join(a.model_dir, "config.json")) as f:
            state_dict(a.model_dir, json.load(f)["layers"], dtype)
        return
    model, cfg = load_model(a.model_dir, a.device, dtype)
    rng = np.random.default_rng(1)
    prompt = torch.from_numpy(rng.integers(0, cfg.vocab_size, (a.batch, a.prompt_len))).to(a.device)
    with torch.inference_mode():
        if a.mode == "eager":
            def run():
                return run_eager(model, prompt, a.gen, a.device)
        else:
            c = Compiled(model, cfg, a.batch, a.prompt_len + a.gen, a.device, dtype)

            def run():
                return c.run(prompt, a.gen)
        run()  # warm-up: compilation, then CUDA graph recording
        run()
        results = [run() for _ in range(a.runs)]
    print(json.dumps(dict(mode=a.mode, batch=a.batch, prompt=a.prompt_len, generated=a.gen,
                          ttft_ms=statistics.median(r[0] for r in results),
                          tpot_ms=statistics.median(r[1] for r in results),
                          tokens_per_s=a.batch * 1e3 / statistics.median(r[1] for r in results),
                          ids=results[-1][2])))


if __name__ == "__main__":
    main()
