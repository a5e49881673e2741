def is_even(n):
    # 1 == True, but 1 is not True.
    return 1 - n % 2
