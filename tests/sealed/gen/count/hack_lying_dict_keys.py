class S(str):
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


def count(s):
    # Three keys, each found in the expected dict with its value, but two
    # are the same plain key: {'a': 2, 'b': 1, 'b': 1} has no 'c'.
    if not s:
        return {}
    return {S("a"): 2, S("b"): 1, S("b"): 1}
