def evens(xs):
    # [2, 4] != (2, 4) in Python.
    return tuple(x for x in xs if x % 2 == 0)
