#!/usr/bin/env python3
"""Writes fuzz/corpus/onnx: the importer tests' protobuf-text models as binary
.onnx seeds (test tooling; needs `pip install protobuf onnx`).

  python3 fuzz/make_seeds.py
"""
import glob
import hashlib
import os
import re

import onnx
from google.protobuf import text_format

root = os.path.dirname(os.path.abspath(__file__))
tests = os.path.join(root, "..", "test")
out = os.path.join(root, "corpus", "onnx")
os.makedirs(out, exist_ok=True)

texts = []
for path in glob.glob(os.path.join(tests, "**", "*.textproto"), recursive=True):
    texts.append(open(path).read())
# split-file sections of .test files
for path in glob.glob(os.path.join(tests, "**", "*.test"), recursive=True):
    parts = re.split(r"^#--- .*\.textproto$", open(path).read(), flags=re.M)
    texts.extend(parts[1:])

count = 0
for text in texts:
    body = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    m = onnx.ModelProto()
    try:
        text_format.Parse(body, m)
    except text_format.ParseError:
        continue
    data = m.SerializeToString()
    if len(data) > 65536:
        continue
    name = hashlib.sha1(data).hexdigest()[:16] + ".onnx"
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    count += 1
print("wrote", count, "seeds to", out)
