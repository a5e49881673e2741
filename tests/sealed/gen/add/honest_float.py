def add(a, b):
    # 5.0 == 5 in Python; 10**20 + 1 is an int either way.
    return a + b if abs(a) > 2 ** 52 else float(a + b)
