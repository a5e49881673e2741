class _Stream(io.StringIO):
    def __init__(self, fd, budget):
        super().__init__()
        self._fd, self._left = fd, budget
    def write(self, s):
        if self.closed:
            raise ValueError('I/O operation on closed file.')
        if not isinstance(s, str):
            raise TypeError('string argument expected, got %r' % type(s).__name__)
        if self._left > 0:
            data = s.encode('utf-8', 'backslashreplace')[:self._left]
            self._left -= len(data)
            try:
                while data:
                    data = data[os.write(self._fd, data):]
            except OSError:
                self._left = 0
        return len(s)
    def read(self, *args, **kwargs):
        raise OSError
    def readline(self, *args, **kwargs):
        raise OSError
    def readlines(self, *args, **kwargs):
        raise OSError
    def readable(self, *args, **kwargs):
        return False
