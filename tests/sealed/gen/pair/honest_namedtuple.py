from collections import namedtuple

Pair = namedtuple("Pair", "x square")


def pair(x):
    return Pair(x, x * x)
