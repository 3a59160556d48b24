#!/usr/bin/env bash
# Grammar-guided generation: what token masks cost against a decode step.
# `llmc bench --json-schema/--grammar/--regex` makes the grammar, runs one
# constrained generation (each state's masks are built when first reached:
# the cold cost), then plain and constrained greedy generation in turns and
# reports the masks' and grammar's time per token against a plain decode
# step (medians of RUNS). On the decode benchmark's 125M Llama
# (bench/cpu/make_llama_bench.py: vocab 32000, random weights) with Llama-2's
# SentencePiece tokenizer (the shared tiny Llama's tokenizer.json, 32000
# tokens), and on the trained example (examples/kjv-llama, 2048-token
# byte-level BPE). Needs a build and, for the 125M model, the Python of
# bench/cpu/make_llama_bench.py (torch, transformers, optimum).
#   bench/cpu/grammar.sh [WORK] [RUNS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/llmc-grammar-bench}
runs=${2:-5}
threads=${3:-$(nproc)}
mkdir -p "$work"
llmc=./build/bin/llmc
[ -e "$work/llama-125m/model.onnx" ] || python3 bench/cpu/make_llama_bench.py "$work/llama-125m" >&2
[ -e "$work/l125.llmc" ] || $llmc compile "$work/llama-125m/model.onnx" -o "$work/l125.llmc" \
  --max-seq 1024 --tokenizer ../shared/models/ort-genai-tiny-llama-fp16/tokenizer.json 2>/dev/null
[ -e "$work/kjv.llmc" ] || $llmc compile examples/kjv-llama/model.onnx -o "$work/kjv.llmc" \
  --max-seq 1024 2>/dev/null
g=bench/cpu/grammar
regex='[A-Z][a-z]+(, [A-Z][a-z]+){0,8} and [A-Z][a-z]+\.'
for model in l125 kjv; do
  for kind in json-schema grammar regex; do
    case $kind in
      json-schema) value=$g/people.schema.json ;;
      grammar) value=$g/expr.gbnf ;;
      regex) value=$regex ;;
    esac
    echo "== $model $kind"
    $llmc bench "$work/$model.llmc" --prompt "Here is the answer:" --gen 400 --runs "$runs" \
      --threads "$threads" "--$kind" "$value" --json > "$work/$model-$kind.json"
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('  %d tokens; made in %.1f ms; first run %.1f ms (%.3f ms/token); then %.3f ms/token of masks and grammar against a %.3f ms plain decode step: %.2f%%' % (r['constrained_tokens'], r['grammar_create_ms'], r['first_run_grammar_ms'], r['first_run_grammar_ms_per_token'], r['grammar_ms_per_token'], r['plain_time_per_output_token_ms'], 100*r['grammar_share_of_decode_step']))" "$work/$model-$kind.json"
  done
done
