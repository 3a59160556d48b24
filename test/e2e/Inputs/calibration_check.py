"""Compares the calibration statistics llmc wrote (`llmc compile
--calibration-save`) with onnxruntime's (test/models/calibration, made by
tools/fixtures/make_calibration_reference.py): the same layers (weight
fingerprint and shape), the same rows, layers sharing an input exactly where
the reference's do, and every Gram matrix equal within 1e-5 of its largest
entry (f32 sums in a different order).

  calibration_check.py LLMC.cal REFERENCE.cal
"""
import struct
import sys

import numpy as np


def read(path):
    data = open(path, "rb").read()
    assert data[:8] == b"LLMCCAL1", path
    at = 8

    def u64():
        nonlocal at
        at += 8
        return struct.unpack_from("<Q", data, at - 8)[0]

    inputs = []
    for _ in range(u64()):
        k, rows = u64(), u64()
        g = np.frombuffer(data, "<f4", k * k, at).reshape(k, k).astype(np.float64)
        at += 4 * k * k
        inputs.append((rows, g))
    layers = {}
    for _ in range(u64()):
        fp, n, k, i = u64(), u64(), u64(), u64()
        layers[(fp, n, k)] = i
    assert at == len(data), path
    return inputs, layers


got_inputs, got_layers = read(sys.argv[1])
ref_inputs, ref_layers = read(sys.argv[2])
assert set(got_layers) == set(ref_layers), (
    "layers only llmc has: %s; only the reference: %s" % (
        sorted(set(got_layers) - set(ref_layers)), sorted(set(ref_layers) - set(got_layers))))
pairs = {}
for key, ri in ref_layers.items():
    gi = got_layers[key]
    assert pairs.setdefault(ri, gi) == gi, "reference input %d is two of llmc's" % ri
assert len(set(pairs.values())) == len(pairs) == len(got_inputs), "sharing differs"
worst = 0.0
for ri, gi in pairs.items():
    (rr, rg), (gr, gg) = ref_inputs[ri], got_inputs[gi]
    assert rr == gr, ("rows", rr, gr)
    err = np.abs(gg - rg).max() / np.abs(rg).max()
    assert err <= 1e-5, ("input", ri, err)
    worst = max(worst, err)
print("%d layers, %d inputs: equal to the reference (worst %.1e)" % (
    len(ref_layers), len(ref_inputs), worst))
