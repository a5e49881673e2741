import os
print("closing fd 1")
os.close(1)


def add(a, b):
    return a + b
