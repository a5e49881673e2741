import os
import sys

# A set of just under the bound of distinct three-byte strings (all read
# and hashed), then a wrong answer.
# sbx judges these with --max-output 32MiB: the frame stays under it, and
# is written in pieces (the container's memory is the candidate's).
SIZE = 30 << 20


def token():
    # The run's token, from the harness's own frame (token, forge, add, then
    # the harness), as the hostile read took it.
    return sys._getframe(3).f_locals["token"].encode()


def write(data):
    data = memoryview(data)
    while data:
        data = data[os.write(1, data):]


def joined(item, n):
    # item(i) for i in range(n), comma-separated, 65536 at a time.
    for start in range(0, n, 1 << 16):
        block = b",".join(item(i) for i in range(start, min(n, start + (1 << 16))))
        write(block if start == 0 else b"," + block)


def forge(body):
    write(b"\n" + token() + b" ")
    body()
    write(b"\n")
    os._exit(0)


def add(a, b):
    forge(body)


def body():
    write(b'[{"ok":{"s":[')
    joined(lambda i: b'{"u":"%06x"}' % i, (1 << 20) - 2)
    write(b"]}}]")
