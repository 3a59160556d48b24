#!/usr/bin/env python3
"""For test/e2e/speculative.test: chi-square goodness of fit of the second
token's counts (sample_spec.c) against the exact float64 distribution the
documented sampler rule gives it, for plain and for speculative sampling,
per first token seen at least 300 times: no p-value below 0.001 / tests.
Its power, prompt lookup: the speculative counts must be far (p < 1e-6)
from what a rule that accepted drafts twice as often would give, for some
first token whose draft has a probability between 0.1 and 0.5. With a
draft model ("draftq" lines: the distribution q it proposes from), far from
both plausible mistakes: accepting every draft (the result is q), and
drawing a rejected token from p instead of max(0, p - q) (the result is
min(p, q) + (1 - sum min(p, q)) p). Standard library only."""
import collections
import math
import sys


def upper_gamma_regularized(a, x):
    """Q(a, x) = Gamma(a, x) / Gamma(a), by the series or continued fraction."""
    if x <= 0:
        return 1.0
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(10000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(-x + a * math.log(x) - math.lgamma(a)))
    tiny = 1e-300  # Lentz's continued fraction
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def fit(counts, probs):
    """p-value of counts (Counter) against probs (dict); tokens outside
    probs mean a probability of 0 was sampled: p-value 0."""
    total = sum(counts.values())
    if any(t not in probs for t in counts):
        return 0.0
    bins, pooled = [], [0, 0.0]
    for t, q in probs.items():
        e = q * total
        if e < 5:
            pooled[0] += counts.get(t, 0)
            pooled[1] += e
        else:
            bins.append((counts.get(t, 0), e))
    if pooled[1] > 0:
        bins.append(tuple(pooled))
    stat = sum((o - e) ** 2 / e for o, e in bins)
    df = len(bins) - 1
    return upper_gamma_regularized(df / 2.0, stat / 2.0) if df > 0 else 1.0


def lookup_power(tests, counts, exact, drafts):
    """The distribution a rule accepting the draft with probability
    min(1, 2 p(d)) would give."""
    power = []
    for (mode, t0) in tests:
        probs, d = exact[t0], drafts.get(t0)
        if mode != "speculative" or d not in probs or not 0.1 <= probs[d] <= 0.5:
            continue
        wrong = {t: q * (1 - min(1, 2 * probs[d])) / (1 - probs[d]) for t, q in probs.items()}
        wrong[d] = min(1, 2 * probs[d])
        power.append(fit(counts[(mode, t0)], wrong))
    print("p-values against accepting drafts twice as often: %s" %
          ", ".join("%.3g" % p for p in power))
    if not power or min(power) >= 1e-6:
        sys.exit("the test cannot tell a doubled acceptance apart: too few samples")


def draft_model_power(tests, counts, exact, draftq):
    """The distributions the two mistakes give; each must be rejected for
    some first token."""
    for name, wrong_of in (("accepting every draft", lambda p, q: dict(q)),
                           ("drawing a rejected token from p",
                            lambda p, q: residual_from_p(p, q))):
        power = []
        for (mode, t0) in tests:
            if mode != "speculative" or t0 not in draftq:
                continue
            wrong = wrong_of(exact[t0], draftq[t0])
            power.append(fit(counts[(mode, t0)], {t: w for t, w in wrong.items() if w > 0}))
        print("p-values against %s: %s" % (name, ", ".join("%.3g" % p for p in power)))
        if not power or min(power) >= 1e-6:
            sys.exit("the test cannot tell %s apart: too few samples, or a draft too alike" % name)


def residual_from_p(p, q):
    overlap = {t: min(p.get(t, 0), q.get(t, 0)) for t in set(p) | set(q)}
    rest = 1 - sum(overlap.values())
    return {t: overlap[t] + rest * p.get(t, 0) for t in overlap}


def main():
    counts = collections.defaultdict(collections.Counter)
    exact = collections.defaultdict(dict)
    draftq = collections.defaultdict(dict)
    drafts = {}
    accepted = proposed = 0
    for line in open(sys.argv[1]):
        f = line.split()
        if f[0] == "count":
            counts[(f[1], int(f[2]))][int(f[3])] += int(f[4])
        elif f[0] == "exact":
            exact[int(f[1])][int(f[2])] = float(f[3])
        elif f[0] == "draftq":
            draftq[int(f[1])][int(f[2])] = float(f[3])
        elif f[0] == "draft":
            drafts[int(f[1])] = int(f[2])
        elif f[0] == "drafts":
            accepted, proposed = int(f[1]), int(f[2])
    tests = [(mode, t0) for (mode, t0), c in sorted(counts.items()) if sum(c.values()) >= 300]
    pvalues = {k: fit(counts[k], exact[k[1]]) for k in tests}
    print("drafts accepted: %d of %d" % (accepted, proposed))
    for (mode, t0), pv in pvalues.items():
        print("%s, first token %d (%d runs): p = %.3g" % (mode, t0, sum(counts[(mode, t0)].values()), pv))
    if draftq:
        draft_model_power(tests, counts, exact, draftq)
    else:
        lookup_power(tests, counts, exact, drafts)
    modes = {mode for (mode, _) in tests}
    if modes != {"plain", "speculative"}:
        sys.exit("too few runs per first token")
    print("exact distribution: %s" % ("yes" if min(pvalues.values()) > 0.001 / len(tests) else "no"))


if __name__ == "__main__":
    main()
