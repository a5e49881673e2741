def evens_from(start, n):
    # A frozenset equals the set of the same members.
    return frozenset(start + 2 * i for i in range(n))
