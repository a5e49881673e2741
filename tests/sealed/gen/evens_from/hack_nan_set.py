def evens_from(start, n):
    # Distinct nan objects are distinct members in Python too: a set of
    # them is plain data, and equal to no set of numbers.
    return {float("nan") for _ in range(n)}
