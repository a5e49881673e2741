def evens_from(start, n):
    return set(range(start, start + 2 * n, 2))
