#!/usr/bin/env python3
"""`llmc compile --quant ... --eval` against the oracle: for each quantized
fixture folder given, compiles its model with the folder's scheme (f32
activations: the arithmetic of the references) and its eval_oracle sequence
as the evaluation file, and checks the report in the manifest (top-1
agreement, mean and max KL, both perplexities) against eval_oracle's
numbers from onnxruntime; then checks that --max-kl just below the mean KL
refuses the compile (no artifact) and just above it accepts. --markdown
prints the reports as a table instead (docs/quantization.md).

  eval_check.py LLMC MODELS_DIR WORK FIXTURE_DIR... [--markdown]
"""
import json
import os
import subprocess
import sys

SCHEMES = {"int8": "int8", "int4": "int4", "int4-g32-asym": "int4:g32:asym"}


def compile_eval(llmc, model, out, scheme, seq_file, max_kl=None):
    cmd = [llmc, "compile", model, "-o", out, "--quant", scheme, "--quant-activations", "f32",
           "--eval", seq_file, "--eval-seq-len", "16", "--max-seq", "64",
           "--prefill-buckets", "16"]
    if max_kl is not None:
        cmd += ["--max-kl", repr(max_kl)]
    return subprocess.run(cmd, capture_output=True, text=True)


def close(a, b, rel=1e-3, abs_=1e-6):
    return abs(a - b) <= abs_ + rel * abs(b)


def main():
    args = [a for a in sys.argv[1:] if a != "--markdown"]
    markdown = "--markdown" in sys.argv
    llmc, models, work, folders = args[0], args[1], args[2], args[3:]
    os.makedirs(work, exist_ok=True)
    rows, failures = [], 0
    for folder in folders:
        with open(os.path.join(folder, "fixture.json")) as f:
            fx = json.load(f)
        name = fx["name"]
        scheme = next(v for k, v in SCHEMES.items() if name.endswith("-" + k))
        oracle = fx["eval_oracle"]
        seq_file = os.path.join(work, name + ".ids")
        with open(seq_file, "w") as f:
            f.write(",".join(map(str, oracle["sequence"])) + "\n")
        model = os.path.join(models, fx["shared_model"])
        out = os.path.join(work, name + ".llmc")
        r = compile_eval(llmc, model, out, scheme, seq_file)
        if r.returncode != 0:
            print("FAIL %s: compile failed: %s" % (name, r.stderr.strip().splitlines()[-1]))
            failures += 1
            continue
        with open(os.path.join(out, "manifest.json")) as f:
            report = json.load(f)["quantization"]["eval"]
        keys = ("top1_agreement", "mean_kl", "max_kl", "float_perplexity", "quantized_perplexity")
        bad = [k for k in keys if not close(report[k], oracle[k])]
        rows.append((name, report))
        if bad:
            print("FAIL %s: %s" % (name, ", ".join("%s %.6g (onnxruntime %.6g)" % (
                k, report[k], oracle[k]) for k in bad)))
            failures += 1
            continue
        # The gate: just below the mean KL refuses, just above accepts.
        kl = report["mean_kl"]
        refused = compile_eval(llmc, model, out + ".gate", scheme, seq_file, kl * 0.99)
        accepted = compile_eval(llmc, model, out + ".gate", scheme, seq_file, kl * 1.01)
        if (refused.returncode == 0 or "exceeds --max-kl" not in refused.stderr or
                accepted.returncode != 0):
            print("FAIL %s: --max-kl did not gate (%d, %d)" % (
                name, refused.returncode, accepted.returncode))
            failures += 1
            continue
        print("PASS %s: %s" % (name, ", ".join("%s %.4g" % (k, report[k]) for k in keys)))
    if markdown:
        print("| fixture | top-1 agreement | mean KL | max KL | perplexity float -> quantized |")
        print("| --- | --- | --- | --- | --- |")
        for name, r in rows:
            print("| %s | %.1f%% | %.3g | %.3g | %.2f -> %.2f |" % (
                name, 100 * r["top1_agreement"], r["mean_kl"], r["max_kl"],
                r["float_perplexity"], r["quantized_perplexity"]))
    print("%d passed, %d failed" % (len(folders) - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
