"""Runs `llmc run` sampled on two artifacts of one model with the same
seeds and parameters, and prints "same: PARAMS seed S" for each run whose
token ids agree (a line "DIFFERENT: ..." with both otherwise, "GREEDY: ..."
where the reference drew the greedy tokens).
  sample_runs.py REFERENCE.llmc OTHER.llmc [OTHER's llmc run options...]"""
import subprocess
import sys

# (parameters, seed): each rule alone and together (the emulation takes
# ~1.4 s a token on this model, so few and short runs).
# The last two with a repetition penalty: sampled, and greedy (whose
# tokens must then differ from plain greedy's, or the run shows nothing).
CONFIGS = [("--top-k 40 --temperature 0.8", 1), ("--top-p 0.9 --temperature 1.3", 2),
           ("--min-p 0.05 --temperature 1.2", 3), ("--temperature 1.5", 4),
           ("--top-k 50 --top-p 0.8 --min-p 0.02 --temperature 1.4", 5),
           ("--top-k 40 --temperature 0.9 --repetition-penalty 1.3", 6),
           ("--temperature 0 --repetition-penalty 1.5", 7)]


def run(artifact, extra, config, seed):
    cmd = ["llmc", "run", artifact, "--prompt", "And God said", "--max-new-tokens", "10",
           "--ignore-eos", "--format", "ids", "--seed", str(seed)] + config.split() + extra
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


reference, other, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
greedy = run(reference, [], "--temperature 0", 0)
for config, seed in CONFIGS:
    want, got = run(reference, [], config, seed), run(other, extra, config, seed)
    if want == greedy: # (it would show nothing about sampling or the penalty)
        print("GREEDY: %s seed %d chose the greedy tokens" % (config, seed))
    elif want == got:
        print("same: %s seed %d" % (config, seed))
    else:
        print("DIFFERENT: %s seed %d\n  %s\n  %s" % (config, seed, want, got))
