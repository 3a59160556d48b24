"""Seeds for artifact_fuzzer from a freshly compiled artifact (ctest runs this
before the fuzz smoke test, so the seeds always match the manifest format):
its manifest.json with the library's sha256 as @LIBSHA@, with and without
damage to weights.bin (see artifact_fuzzer.cpp for the input format).

  python3 fuzz/artifact_seeds.py ARTIFACT OUT_DIR
"""
import json
import os
import struct
import sys

artifact, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
text = open(os.path.join(artifact, "manifest.json"), encoding="utf-8").read()
manifest = json.loads(text)
text = text.replace(manifest["library"]["sha256"], "@LIBSHA@")
size = manifest["weights"]["bytes"]
table = manifest["weights"]["table"]


def edits(*records):
    return b"".join(struct.pack("<IB", pos, value) for pos, value in records)


seeds = {
    "intact": b"",
    "flip-first": edits((0, 1)),
    "flip-last": edits((size - 1, 0x80)),
    "flip-padding": edits((table[0]["offset"] + table[0]["bytes"] - 1, 4)),
    "truncate": edits((size - 64, 0)),
    "flip-middle": edits((table[len(table) // 2]["offset"] + 3, 0x10)),
}
for name, tail in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(text.encode("utf-8"))
        if tail:
            f.write(b"\0" + tail)
print(f"{len(seeds)} artifact seeds in {out}")
