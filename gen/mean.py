import sys

numbers = [float(x) for x in sys.stdin.read().split()]
print(sum(numbers) / len(numbers))
