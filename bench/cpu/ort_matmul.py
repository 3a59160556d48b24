#!/usr/bin/env python3
"""onnxruntime's MatMul (MLAS, CPU provider, all cores) on the shapes
llmc-bench-gemm times; prints GFLOP/s per shape. Used by bench/cpu/run.sh."""
import sys
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper


def seconds(sess, feed, reps):
    sess.run(None, feed)
    t = []
    for _ in range(reps):
        start = time.perf_counter()
        sess.run(None, feed)
        t.append(time.perf_counter() - start)
    return sorted(t)[len(t) // 2]


def main():
    rng = np.random.default_rng(7)
    for arg in sys.argv[1:]:
        m, n, k = (int(x) for x in arg.split(","))
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        # B as an initializer, as a weight is in a model.
        g = helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["c"])], "mm",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n])],
            [helper.make_tensor("b", TensorProto.FLOAT, [k, n], b.tobytes(), raw=True)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        flops = 2.0 * m * n * k
        t = seconds(sess, {"a": a}, max(3, min(50, int(2e9 / flops))))
        print("%s %.3f %.2f" % (arg, t * 1e3, flops / t * 1e-9))


if __name__ == "__main__":
    main()
