from collections import defaultdict


def count(s):
    out = defaultdict(int)
    for c in s:
        out[c] += 1
    return out
