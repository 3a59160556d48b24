"""Helpers for weights-integrity.test, independent of llmc's checker: a
reference XXH64 (the xxHash specification), the manifest's weights.table
read with json, and damaged copies of an artifact.

  weights_table.py check ARTIFACT                  the table covers the file; digests match
  weights_table.py flip ARTIFACT COPY WHERE        copy with one byte flipped; prints the
                                                   tensor name and range expected in the error
  weights_table.py expect WANT ERRFILE...          each error names that tensor and range
  weights_table.py edit ARTIFACT drop|gap|short    damage the table itself
"""
import json
import os
import shutil
import struct
import sys

M = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, lane):
    return (rotl((acc + lane * P2) & M, 31) * P1) & M


def xxh64(data, seed=0):
    n, p = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while p + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, p)
            v = [rnd(v[i], lanes[i]) for i in range(4)]
            p += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = ((h ^ rnd(0, x)) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while p + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", data, p)[0]), 27) * P1 + P4) & M
        p += 8
    if p + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, p)[0] * P1 & M), 23) * P2 + P3) & M
        p += 4
    while p < n:
        h = (rotl(h ^ (data[p] * P5 & M), 11) * P1) & M
        p += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    h ^= h >> 32
    return h


def load(artifact):
    manifest = json.load(open(os.path.join(artifact, "manifest.json")))
    data = open(os.path.join(artifact, "weights.bin"), "rb").read()
    return manifest, data


def main():
    cmd = sys.argv[1]
    if cmd == "check":
        manifest, data = load(sys.argv[2])
        table, at = manifest["weights"]["table"], 0
        assert xxh64(b"") == 0xEF46DB3751D8E999  # the specification's empty-input digest
        for row in table:
            assert row["offset"] == at, row
            got = xxh64(data[at:at + row["bytes"]])
            assert "%016x" % got == row["xxh64"], (row, "%016x" % got)
            at += row["bytes"]
        assert at == len(data), (at, len(data))
        assert len(table) >= manifest["weights"]["tensors"] / 2, len(table)
        print("table ok")
    elif cmd == "flip":
        src, dst, where = sys.argv[2], sys.argv[3], sys.argv[4]
        shutil.copytree(src, dst)
        manifest, data = load(dst)
        table = manifest["weights"]["table"]
        if where == "inside":    # a byte in the middle of the middle tensor
            row = table[len(table) // 2]
            pos = row["offset"] + row["bytes"] // 2
        elif where == "padding":  # the last byte of a range that is zero: alignment padding
            row = next(r for r in table[:-1] if data[r["offset"] + r["bytes"] - 1] == 0)
            pos = row["offset"] + row["bytes"] - 1
        else:                     # the file's last byte
            row = table[-1]
            pos = len(data) - 1
        buf = bytearray(data)
        buf[pos] ^= 0x01
        open(os.path.join(dst, "weights.bin"), "wb").write(bytes(buf))
        print(json.dumps({"name": row["name"], "begin": row["offset"],
                          "end": row["offset"] + row["bytes"]}))
    elif cmd == "expect":
        want = json.load(open(sys.argv[2]))
        text = "tensor '%s' (bytes %d..%d) does not match its checksum" % (
            want["name"], want["begin"], want["end"])
        for path in sys.argv[3:]:
            got = open(path).read()
            assert text in got, (text, got)
        print("named ok")
    elif cmd == "edit":
        path = os.path.join(sys.argv[2], "manifest.json")
        manifest = json.load(open(path))
        table = manifest["weights"]["table"]
        if sys.argv[3] == "drop":
            del manifest["weights"]["table"]
        elif sys.argv[3] == "gap":
            table[1]["offset"] += 64
        else:
            table.pop()
        json.dump(manifest, open(path, "w"), indent=2)


main()
