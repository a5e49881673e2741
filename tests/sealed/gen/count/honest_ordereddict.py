from collections import OrderedDict


def count(s):
    out = OrderedDict()
    for c in reversed(s):
        out[c] = out.get(c, 0) + 1
    return out
