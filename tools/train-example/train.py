#!/usr/bin/env python3
"""Trains the bundled example model, examples/kjv-llama: a small Llama
(hidden 256, 4 layers, 4 query and 2 key/value heads of 64, SwiGLU MLP of
768, vocabulary 2048; 4.2M parameters) on the King James Bible, with a
byte-level BPE tokenizer trained alongside, then exports it to ONNX with
optimum (past/present KV cache inputs and outputs, as the optimum fixtures)
and records onnxruntime's logits for `llmc verify` (fixture.json,
reference/).

The text comes from Debian's bible-kjv-text package (the 1611 translation,
whose copyright has expired; read through the package's `bible` program,
apt-get install bible-kjv). One chapter is one document: its verses one per
line, documents separated by the end-of-text token. Every 40th chapter is
held out from training: its text is written to eval.txt, so perplexity
there (`llmc compile --eval-text`) is on text the model has not seen
(training checks it every 200 steps and keeps the weights that did best,
should the last epochs overfit). Every 40th training chapter (the one
before each held-out chapter's block starts) is also written to
calibration.txt, text the model did train on, for `llmc compile
--calibration-text` (GPTQ's statistics); `--calibration-only` writes just
that file from the Bible text, without training.

Developer tooling, not run by tests or CI (the exported model is committed).
It needs PyTorch and the packages in requirements.txt beside this file:

  python3 -m venv /tmp/train-venv
  /tmp/train-venv/bin/pip install -r tools/train-example/requirements.txt
  /tmp/train-venv/bin/python tools/train-example/train.py examples/kjv-llama

On 2 cores of the development VM it trains for --minutes (30 by default)
(--draft: 10 minutes is plenty) and exports in another minute or two; the
seed fixes the data order and the
initial weights (PyTorch's CPU kernels may still differ in the last bits
between machines, so a rerun elsewhere gives a close but not identical model).

  --draft  trains the smaller draft model for speculative decoding instead
           (hidden 128, 2 layers, 0.9M parameters) with the example's tokenizer:
  .../python tools/train-example/train.py examples/kjv-llama-draft --draft \
      --tokenizer examples/kjv-llama --minutes 10
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import add_greedy  # noqa: E402  (onnxruntime's 32 greedy tokens, for llmc run tests)
import make_models  # noqa: E402  (references and fixture.json, as for test/models)

SEED = 20261125
VOCAB = 2048
HELD_OUT_EVERY = 40
EOT = "<|endoftext|>"
SIZES = {  # hidden, layers, heads, kv heads, MLP
    "example": (256, 4, 4, 2, 768),
    "draft": (128, 2, 2, 1, 384),
}


def chapters():
    """[(title, [verse, ...])] of the whole Bible, in order."""
    text = subprocess.run(["bible", "-l100000", "Genesis1:1-Revelation22:21"], check=True,
                          capture_output=True, text=True).stdout
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        verse = re.match(r"^\s+\d+ (.*)$", line)
        if verse:
            out[-1][1].append(verse.group(1).strip())
        else:
            out.append((line.strip(), []))
    assert len(out) == 1189, len(out)
    return out


def split(chs):
    train, held = [], []
    for i, (_, verses) in enumerate(chs):
        (held if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else train).append("\n".join(verses))
    return train, held


def calibration_docs(chs):
    """Training chapters (every 40th, never a held-out one) for GPTQ."""
    return ["\n".join(verses) for i, (_, verses) in enumerate(chs) if i % HELD_OUT_EVERY == 0]


def train_tokenizer(docs, folder):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(docs, trainer)
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOT, eos_token=EOT,
                            unk_token=EOT).save_pretrained(folder)


def encode(folder, docs):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    eot = tok.token_to_id(EOT)
    ids = []
    for enc in tok.encode_batch(docs):
        ids += enc.ids + [eot]
    return np.array(ids, np.int64), eot


def make_model(size, eot):
    from transformers import LlamaConfig, LlamaForCausalLM
    hidden, layers, heads, kv, mlp = SIZES[size]
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=mlp,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv, max_position_embeddings=512, rms_norm_eps=1e-5,
                      rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=eot,
                      eos_token_id=eot, pad_token_id=eot)
    torch.manual_seed(SEED)
    return LlamaForCausalLM(cfg)


def batches(ids, seq, batch, rng):
    """Random windows of seq + 1 tokens (inputs and their next tokens)."""
    while True:
        starts = rng.integers(0, len(ids) - seq - 1, batch)
        w = np.stack([ids[s:s + seq + 1] for s in starts])
        yield torch.from_numpy(w[:, :-1]), torch.from_numpy(w[:, 1:])


@torch.no_grad()
def held_out_loss(model, ids, seq):
    model.eval()
    n = (len(ids) - 1) // seq
    total, count = 0.0, 0
    for i in range(0, n, 16):
        rows = [ids[j * seq:j * seq + seq + 1] for j in range(i, min(n, i + 16))]
        w = torch.from_numpy(np.stack(rows))
        logits = model(input_ids=w[:, :-1]).logits
        total += torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum").item()
        count += w[:, 1:].numel()
    model.train()
    return total / count


def train(model, train_ids, held_ids, minutes, args):
    rng = np.random.default_rng(SEED)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    # Steps from the measured rate: a cosine schedule needs its length up front.
    data = batches(train_ids, args.seq, args.batch, rng)
    model.train()
    t0 = time.time()
    for _ in range(3):
        x, y = next(data)
        model(input_ids=x, labels=None).logits.sum().backward()
        opt.zero_grad()
    per_step = (time.time() - t0) / 3
    steps = max(50, int(minutes * 60 / per_step))
    warmup = min(200, steps // 10)
    print("training: %.2f s/step -> %d steps of %d x %d tokens (%.1f epochs of %d)" % (
        per_step, steps, args.batch, args.seq, steps * args.batch * args.seq / len(train_ids),
        len(train_ids)), flush=True)
    t0 = time.time()
    log, best = [], (float("inf"), None)
    for step in range(steps):
        lr = args.lr * min(1.0, (step + 1) / warmup) * (
            0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, step / steps))))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = next(data)
        logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 200 == 0 or step == steps - 1:
            held = held_out_loss(model, held_ids, args.seq)
            log.append({"step": step, "train_loss": round(loss.item(), 4),
                        "held_out_loss": round(held, 4)})
            print("step %5d  loss %.3f  held-out %.3f (perplexity %.2f)  %.0f s" % (
                step, loss.item(), held, math.exp(held), time.time() - t0), flush=True)
            if held < best[0]:
                best = (held, {k: v.clone() for k, v in model.state_dict().items()})
    # A few epochs over 1.1M tokens: keep the weights that did best on the
    # held-out chapters (checked every 200 steps) should the last overfit.
    model.load_state_dict(best[1])
    log.append({"kept_held_out_loss": round(best[0], 4)})
    return log


def export(hf_dir, out, log, args, size):
    versions = make_models.export_optimum(hf_dir, out)
    for f in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
              "special_tokens_map.json"):
        if os.path.exists(os.path.join(hf_dir, f)):
            shutil.copy(os.path.join(hf_dir, f), os.path.join(out, f))
    from transformers import AutoModelForCausalLM, AutoTokenizer
    model = AutoModelForCausalLM.from_pretrained(hf_dir).eval()
    tok = AutoTokenizer.from_pretrained(hf_dir)
    model_path = os.path.join(out, "model.onnx")
    io = make_models.io_of(model_path)
    prompt = tok("And God said")["input_ids"]
    name = os.path.basename(os.path.normpath(out))
    fixture = {
        "name": name,
        "architecture": type(model).__name__,
        "model": "model.onnx",
        "io": io,
        "tolerance": 1e-4,
        "exporter": versions,
        "oracle": "onnxruntime %s CPUExecutionProvider, graph optimizations off" %
                  make_models.ort.__version__,
        "training": {"script": "tools/train-example/train.py" + (" --draft" if size == "draft"
                                                                   else ""),
                     "text": "King James Bible (Debian bible-kjv-text), every %dth chapter "
                             "held out (eval.txt)" % HELD_OUT_EVERY,
                     "seed": SEED, "minutes": args.minutes, "batch": args.batch,
                     "seq": args.seq, "lr": args.lr, "torch": make_models.version("torch"),
                     "log": log},
        "config": {k: v for k, v in model.config.to_dict().items()
                   if k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                            "num_key_value_heads", "intermediate_size", "vocab_size")},
    }
    heads, head_dim = make_models.kv_shape(model.config)
    make_models.make_references(out, model_path, [1, heads, 0, head_dim], model, io, prompt,
                                fixture)
    make_models.write_fixture(out, fixture)
    add_greedy.add_greedy(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--draft", action="store_true")
    ap.add_argument("--calibration-only", action="store_true",
                    help="write calibration.txt into OUT and stop")
    ap.add_argument("--tokenizer", help="a folder holding the tokenizer to reuse (for --draft)")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    size = "draft" if args.draft else "example"
    os.makedirs(args.out, exist_ok=True)
    chs = chapters()
    if not args.draft:
        with open(os.path.join(args.out, "calibration.txt"), "w") as f:
            f.write("\n\n".join(calibration_docs(chs)) + "\n")
    if args.calibration_only:
        return
    train_docs, held_docs = split(chs)
    with tempfile.TemporaryDirectory() as hf_dir:
        if args.tokenizer:
            for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                shutil.copy(os.path.join(args.tokenizer, f), os.path.join(hf_dir, f))
        else:
            train_tokenizer(train_docs, hf_dir)
        train_ids, eot = encode(hf_dir, train_docs)
        held_ids, _ = encode(hf_dir, held_docs)
        model = make_model(size, eot)
        print("%s: %.2fM parameters; %d training tokens, %d held out" % (
            size, sum(p.numel() for p in model.parameters()) / 1e6, len(train_ids),
            len(held_ids)), flush=True)
        log = train(model, train_ids, held_ids, args.minutes, args)
        model.save_pretrained(hf_dir)
        export(hf_dir, args.out, log, args, size)
    if not args.draft:
        with open(os.path.join(args.out, "eval.txt"), "w") as f:
            f.write("\n\n".join(held_docs) + "\n")


if __name__ == "__main__":
    main()
