"""A float64 NumPy GPTQ, the oracle of llmc-quantize-weights' `calibration`
option (llmc-quantize-weights-gptq.test).

  make OUT.mlir OUT.bin [--drop-layer I] [--bad-magic]
      a function of three linear layers (two share an input, one input
      feature is always 0) and the calibration file of their inputs'
      Gram matrices, in the format passes/Calibration.h documents
  check IN.mlir OUT.mlir BITS GROUP ASYM
      the quantized layers of OUT.mlir (what llmc-opt made of IN.mlir) equal
      this file's GPTQ bit for bit, and GPTQ's output error on the
      calibration inputs, tr((W - Wq) H (W - Wq)^T), is no larger than round
      to nearest's for any layer and at least 10% smaller over all three
"""
import hashlib
import re
import struct
import sys

import numpy as np

SHAPES = [("a", 6, 16, 0), ("b", 4, 16, 0), ("c", 3, 8, 1)]  # name, N, K, input
DAMP = 0.01


def data():
    rng = np.random.default_rng(7)
    weights = {n: rng.standard_normal((N, K)).astype(np.float32) for n, N, K, _ in SHAPES}
    # Correlated input features (GPTQ has something to exploit), one dead.
    x1 = rng.standard_normal((64, 16)) @ rng.standard_normal((16, 16))
    x1[:, 3] = 0
    x2 = (rng.standard_normal((64, 8)) @ rng.standard_normal((8, 8))) * np.linspace(0.1, 3, 8)
    grams = [(x.T @ x).astype(np.float32) for x in (x1, x2)]
    return weights, grams, [len(x1), len(x2)]


def fingerprint(w):
    return struct.unpack("<Q", hashlib.sha256(w.tobytes()).digest()[:8])[0]


def make(out_mlir, out_bin, drop=None, bad_magic=False):
    weights, grams, rows = data()

    def literal(w):
        return "[" + ", ".join("[" + ", ".join("%.9e" % v for v in r) + "]" for r in w) + "]"

    lines = ["func.func @layers(%x1: tensor<1x5x16xf32>, %x2: tensor<1x5x8xf32>) -> "
             "(tensor<1x5x6xf32> {llm.name = \"cache.k.0\"}, tensor<1x5x4xf32> {llm.name = "
             "\"cache.v.0\"}, tensor<1x5x3xf32> {llm.name = \"cache.k.1\"}) {",
             "  %none = llm.none"]
    for n, N, K, i in SHAPES:
        lines.append("  %%w%s = llm.constant dense<%s> : tensor<%dx%dxf32>" % (
            n, literal(weights[n]), N, K))
        lines.append("  %%y%s = llm.linear %%x%d, %%w%s, %%none : (tensor<1x5x%dxf32>, "
                     "tensor<%dx%dxf32>, none) -> tensor<1x5x%dxf32>" % (n, i + 1, n, K, N, K, N))
    lines.append("  return %ya, %yb, %yc : tensor<1x5x6xf32>, tensor<1x5x4xf32>, "
                 "tensor<1x5x3xf32>")
    lines.append("}")
    open(out_mlir, "w").write("\n".join(lines) + "\n")
    out = bytearray(b"LLMCCAL0" if bad_magic else b"LLMCCAL1")
    out += struct.pack("<Q", len(grams))
    for g, r in zip(grams, rows):
        out += struct.pack("<QQ", g.shape[0], r) + g.astype("<f4").tobytes()
    layers = [s for j, s in enumerate(SHAPES) if j != drop]
    out += struct.pack("<Q", len(layers))
    for n, N, K, i in layers:
        out += struct.pack("<QQQQ", fingerprint(weights[n]), N, K, i)
    open(out_bin, "wb").write(bytes(out))


def stored_scale(scale, bits):
    """f32; 4-bit scales the nearest f16 where that is a normal number."""
    if bits != 4:
        return scale
    with np.errstate(over="ignore"):
        h = np.float32(np.float16(scale))
    return h if np.isfinite(h) and abs(h) >= 2.0 ** -14 else scale


def params(v, bits, asym):
    """The group rule of Passes.td over float64 values; the scale in f32
    (4-bit: then f16)."""
    levels, half = 1 << bits, 1 << (bits - 1)
    if asym:
        lo, hi = min(v.min(), 0.0), max(v.max(), 0.0)
        scale = stored_scale(np.float32((hi - lo) / (levels - 1)), bits)
        zero = int(np.clip(np.rint(-lo / np.float64(scale)), 0, levels - 1)) if scale > 0 else 0
    else:
        peak = v[np.argmax(np.abs(v))]
        scale = stored_scale(np.float32(peak / -half), bits)
        zero = half
    return scale, zero


def quantize(w, h, bits, gs, asym, gptq):
    """(q [N, K], scales [N, G], zeros [N, G], dequantized [N, K])."""
    w = w.astype(np.float64).copy()
    N, K = w.shape
    levels = 1 << bits
    if gptq:
        h = h.astype(np.float64).copy()
        dead = np.diag(h) == 0
        h[dead, dead] = 1
        w[:, dead] = 0
        h += DAMP * np.mean(np.diag(h)) * np.eye(K)
        u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper, H^-1 = U^T U
    q = np.zeros((N, K), np.int64)
    scales = np.zeros((N, K // gs), np.float32)
    zeros = np.zeros((N, K // gs), np.int64)
    deq = np.zeros((N, K))
    for n in range(N):
        row = w[n]
        for i in range(K):
            if i % gs == 0:
                scales[n, i // gs], zeros[n, i // gs] = params(row[i:i + gs], bits, asym)
            s, z = np.float64(scales[n, i // gs]), zeros[n, i // gs]
            inv = 1.0 / s if s != 0 else 0.0
            q[n, i] = np.clip(np.rint(row[i] * inv) + z, 0, levels - 1)
            deq[n, i] = (q[n, i] - z) * s
            if gptq:
                err = (row[i] - deq[n, i]) / u[i, i]
                row[i + 1:] -= err * u[i, i + 1:]
    return q, scales, zeros, deq


def resources(text):
    return {m.group(1): bytes.fromhex(m.group(2))[4:]  # after the alignment word
            for m in re.finditer(r"^\s*(\w+): \"0x([0-9A-F]+)\"", text, re.M)}


def check(in_mlir, out_mlir, bits, gs, asym):
    weights, grams, _ = data()
    text = open(out_mlir).read()
    blobs = resources(text)
    consts = dict(re.findall(r"(%\w+) = llm.constant dense_resource<(\w+)>", text))
    layers = re.findall(r"llm.quantized_linear %\w+, (%\w+), (%\w+), (%\w+),", text)
    assert len(layers) == len(SHAPES), layers
    total_gptq = total_rtn = 0.0
    for (name, N, K, i), (qv, sv, zv) in zip(SHAPES, layers):
        g = K if gs == 0 else gs
        q, scales, zeros, deq = quantize(weights[name], grams[i], bits, g, asym, True)
        raw = np.frombuffer(blobs[consts[qv]], np.uint8)
        got = raw.reshape(N, K) if bits == 8 else np.stack([raw & 15, raw >> 4], -1).reshape(N, K)
        got_scales = np.frombuffer(blobs[consts[sv]], "<f4").reshape(N, K // g)
        bad = np.argwhere(got != q)
        assert len(bad) == 0, "layer %s: %d values differ, first at %s: %d, oracle %d" % (
            name, len(bad), bad[0], got[tuple(bad[0])], q[tuple(bad[0])])
        assert np.array_equal(got_scales, scales), (name, got_scales, scales)
        if asym:
            got_zeros = np.frombuffer(blobs[consts[zv]], np.uint8).reshape(N, K // g)
            assert np.array_equal(got_zeros, zeros), (name, got_zeros, zeros)
        else:
            assert zv not in consts, "symmetric layers have no zero points"
        # What GPTQ is for: a smaller error on inputs like the calibration's.
        h = grams[i].astype(np.float64)
        w = weights[name].astype(np.float64)
        *_, nearest = quantize(weights[name], grams[i], bits, g, asym, False)
        e_gptq = np.trace((w - deq) @ h @ (w - deq).T)
        e_rtn = np.trace((w - nearest) @ h @ (w - nearest).T)
        assert e_gptq <= e_rtn * (1 + 1e-12), (name, e_gptq, e_rtn)
        total_gptq, total_rtn = total_gptq + e_gptq, total_rtn + e_rtn
        print("layer %s: equal to the oracle; output error %.4g (GPTQ) <= %.4g (nearest)" % (
            name, e_gptq, e_rtn))
    assert total_gptq < 0.9 * total_rtn, (total_gptq, total_rtn)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        drop = int(sys.argv[sys.argv.index("--drop-layer") + 1]) if "--drop-layer" in sys.argv \
            else None
        make(sys.argv[2], sys.argv[3], drop, "--bad-magic" in sys.argv)
    else:
        check(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1")
