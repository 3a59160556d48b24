#!/usr/bin/env python3
"""Per-kernel table of llmc's decode step from two Nsight Compute runs (issue 11).

bench/cuda/profile.sh profiles `llmc bench` twice, generating SHORT and LONG tokens
after the same prompt (`ncu --csv` with gpu__time_duration.sum and dram__bytes_read.sum
and dram__bytes_write.sum). The kernels the longer run adds are STEPS = LONG - SHORT decode
steps, whatever the prefill launched (the two prefills are the same), so their launches,
times and bytes per kernel name, divided by STEPS, are one decode step's.

  ncu_table.py SHORT.csv LONG.csv STEPS   -> a Markdown table on stdout

Under ncu each launch runs alone (serialised, replayed per metric pass, clocks locked unless
--clock-control none), so the sum over a step is longer than the step in `llmc bench`;
the shares and each kernel's rate are what the table is for.
"""
import collections
import csv
import re
import sys

TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
              "second": 1e6, "s": 1e6}
BYTE_UNITS = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
              "kibyte": 1024.0, "mibyte": 1024.0**2, "gibyte": 1024.0**3}


def value(text):
    return float(text.replace(",", "")) if text.strip() not in ("", "n/a") else 0.0


def short_name(name):
    """A kernel's name without its template arguments and parameter list."""
    name = re.sub(r"\(.*$", "", name.strip())
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    name = re.sub(r"^(void|llmc::cuda::)\s*", "", name)
    return name.replace("llmc::cuda::", "")


def launches(path):
    """{launch id: (kernel, grid, microseconds, bytes read, bytes written)} of one ncu --csv file."""
    rows = collections.defaultdict(dict)
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages start with ==
    reader = csv.DictReader(lines)
    need = {"ID", "Kernel Name", "Metric Name", "Metric Value"}
    if not reader.fieldnames or not need <= set(reader.fieldnames):
        sys.exit("ncu_table.py: %s is not ncu --csv output with columns %s (header: %s)" % (
            path, ", ".join(sorted(need)), reader.fieldnames))
    for row in reader:
        key = row["ID"]
        r = rows[key]
        r["kernel"] = short_name(row["Kernel Name"])
        r["grid"] = row.get("Grid Size", "")
        metric, unit = row["Metric Name"], row.get("Metric Unit", "").strip().lower()
        if metric == "gpu__time_duration.sum":
            r["us"] = value(row["Metric Value"]) * TIME_UNITS.get(unit, 1e-3)
        elif metric.startswith("dram__bytes_"):
            r[metric] = value(row["Metric Value"]) * BYTE_UNITS.get(unit, 1.0)
    return {k: (r["kernel"], r["grid"], r.get("us", 0.0), r.get("dram__bytes_read.sum", 0.0),
                r.get("dram__bytes_write.sum", 0.0)) for k, r in rows.items()}


def totals(path):
    """{(kernel, grid): [launches, microseconds, bytes read, bytes written]}: a template's
    instances at a model's layer shapes (q/k/v, o, gate/up, down) differ by their grids."""
    out = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for kernel, grid, us, read, written in launches(path).values():
        t = out[kernel, grid]
        t[0] += 1
        t[1] += us
        t[2] += read
        t[3] += written
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: ncu_table.py SHORT.csv LONG.csv STEPS")
    short, long_, steps = totals(sys.argv[1]), totals(sys.argv[2]), int(sys.argv[3])
    rows = []
    for (kernel, grid), (n, us, read, written) in long_.items():
        s = short.get((kernel, grid), [0, 0.0, 0.0, 0.0])
        dn = n - s[0]
        if dn <= 0:
            continue
        per_step = (us - s[1]) / steps
        rows.append((per_step, kernel, grid, dn / steps, (us - s[1]) / dn, (read - s[2]) / dn,
                     (written - s[3]) / dn))
    rows.sort(reverse=True)
    step = sum(r[0] for r in rows)
    print("| kernel | grid | launches a step | us each | DRAM read each | written each "
          "| read rate | us a step | share of the step |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for per_step, kernel, grid, count, each, read, written in rows:
        rate = read / (each * 1e-6) / 1e12 if each > 0 else 0.0
        print("| %s | %s | %g | %.2f | %.2f MB | %.2f MB | %.2f TB/s | %.1f | %.1f%% |" % (
            kernel, grid, count, each, read / 1e6, written / 1e6, rate, per_step,
            100 * per_step / step if step else 0.0))
    print()
    print("Sum over one decode step: %.1f us in %g launches (serialised under ncu)." % (
        step, sum(r[3] for r in rows)))


if __name__ == "__main__":
    main()
