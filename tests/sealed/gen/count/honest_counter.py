from collections import Counter


def count(s):
    return Counter(s)
