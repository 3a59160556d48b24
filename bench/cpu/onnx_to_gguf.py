#!/usr/bin/env python3
"""Writes the weights of bench/cpu/make_llama_onnx.py's model as an F16 (or,
with --type f32, F32) GGUF for llama.cpp (the peer of bench/cpu/quant.sh), with llama.cpp's own gguf-py
(from the llama-cpp-python source distribution's vendor/llama.cpp/gguf-py):
the same tensors, the same shapes, LLM_ARCH_LLAMA. llama-quantize then makes
its Q8_0 and Q4_0 from this file, as it would from any converted model.

llama.cpp's Llama rotates query/key pairs (2i, 2i + 1) where the ONNX graph
rotates halves; convert_hf_to_gguf.py permutes the q/k rows to match. The
benchmark compares speed, not logits, so the rows are written as they are
(the same bytes per token either way). The vocabulary is placeholder
tokens (the model has random weights and no tokenizer).

  python3 bench/cpu/onnx_to_gguf.py MODEL_DIR OUT.gguf --gguf-py DIR [--type f32]
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--gguf-py", required=True)
    ap.add_argument("--type", choices=["f16", "f32"], default="f16",
                    help="the linear layers' and embedding's type")
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf

    m = onnx.load(args.model_dir + "/model.onnx")
    w = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    layers = 1 + max(int(n.split(".")[1]) for n in w if n.startswith("layers."))
    vocab, hidden = w["embed"].shape
    ffn = w["layers.0.w_up"].shape[1]
    kv_dim = w["layers.0.wk"].shape[1]
    head_dim = w["rope.cos_cache"].shape[1] * 2
    heads, kv_heads = hidden // head_dim, kv_dim // head_dim
    out = gguf.GGUFWriter(args.out, "llama")
    out.add_context_length(w["rope.cos_cache"].shape[0])
    out.add_embedding_length(hidden)
    out.add_block_count(layers)
    out.add_feed_forward_length(ffn)
    out.add_head_count(heads)
    out.add_head_count_kv(kv_heads)
    out.add_rope_dimension_count(head_dim)
    out.add_layer_norm_rms_eps(1e-5)
    out.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if args.type == "f16"
                      else gguf.LlamaFileType.ALL_F32)
    out.add_tokenizer_model("llama")
    out.add_token_list(["<tok%d>" % i for i in range(vocab)])
    out.add_token_scores([0.0] * vocab)
    out.add_token_types([gguf.TokenType.NORMAL] * vocab)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)
    f16 = f32 if args.type == "f32" else (lambda a: np.ascontiguousarray(a, dtype=np.float16))
    # GGUF stores a linear weight as [out, in] rows (ONNX MatMul weights are [in, out]).
    out.add_tensor("token_embd.weight", f16(w["embed"]))
    for i in range(layers):
        p = "layers.%d." % i
        out.add_tensor("blk.%d.attn_norm.weight" % i, f32(w[p + "attn_norm"]))
        out.add_tensor("blk.%d.attn_q.weight" % i, f16(w[p + "wq"].T))
        out.add_tensor("blk.%d.attn_k.weight" % i, f16(w[p + "wk"].T))
        out.add_tensor("blk.%d.attn_v.weight" % i, f16(w[p + "wv"].T))
        out.add_tensor("blk.%d.attn_output.weight" % i, f16(w[p + "wo"].T))
        out.add_tensor("blk.%d.ffn_norm.weight" % i, f32(w[p + "mlp_norm"]))
        out.add_tensor("blk.%d.ffn_gate.weight" % i, f16(w[p + "w_gate"].T))
        out.add_tensor("blk.%d.ffn_up.weight" % i, f16(w[p + "w_up"].T))
        out.add_tensor("blk.%d.ffn_down.weight" % i, f16(w[p + "w_down"].T))
    out.add_tensor("output_norm.weight", f32(w["final_norm"]))
    out.add_tensor("output.weight", f16(w["lm_head"].T))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    print(args.out)


if __name__ == "__main__":
    main()
