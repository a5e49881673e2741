import sys

line = sys.stdin.readline().rstrip("\n")
# A plausible model mistake: reverses the words, not the characters.
print(" ".join(reversed(line.split())))
