# A plausible model mistake: trial division by every number, far too slow.
n = 10**12 + 1
while True:
    if all(n % d for d in range(2, n)):
        print(n)
        break
    n += 1
