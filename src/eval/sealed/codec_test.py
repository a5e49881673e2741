# Run by the unit tests with the host's python3, after codec.py: the
# serializer reads builtin subclasses as the builtin values they hold and
# refuses everything else. Prints the encoding of a few values for the
# Rust side to read.
import collections, json, sys

Refused, encode, decode, emit, hexed, name_of = _sbx_codec()


class I(int):
    def __eq__(self, other): return True
    __hash__ = int.__hash__
    def __repr__(self): return '5'
    def __str__(self): return '5'
    def __format__(self, spec): return '5'
    def __int__(self): return 5
    def __index__(self): return 5


class L(list):
    def __eq__(self, other): return True
    def __iter__(self): return iter([1, 2, 3])
    def __len__(self): return 3


class D(dict):
    def __eq__(self, other): return True
    def items(self): return [('a', 1)]
    def __iter__(self): return iter(['a'])
    def keys(self): return ['a']


class S(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__
    def __str__(self): return 'forged'
    def encode(self, *a): return b'forged'


class F(float):
    def __sub__(self, other): return 0.0
    def __rsub__(self, other): return 0.0
    def __abs__(self): return 0.0
    def __repr__(self): return '2.0'


class AlwaysEq:
    def __eq__(self, other): return True
    def __sub__(self, other): return 0
    __rsub__ = __sub__
    def __abs__(self): return 0
    def __hash__(self): return 0


class FakeInt:
    @property
    def __class__(self): return int


def same(value, want):
    got = encode(value)
    assert got == want, (value, got, want)

same(I(0), {'i': '0'})
same(L([7]), {'l': [{'i': '7'}]})
same(D(b=2), {'d': [[{'u': '62'}, {'i': '2'}]]})
same(S('x'), {'u': '78'})
same(F(0.5), {'f': '0.5'})
same(True, True)
same(None, None)
same(-255, {'i': '-ff'})
same(float('-0.0'), {'f': '-0.0'})
same(float('inf'), {'f': 'inf'})
same(float('nan'), {'f': 'nan'})
same('\ud83d', {'u': 'eda0bd'})
same(b'\x00', {'y': '00'})
same(collections.Counter('aab'), {'d': [[{'u': '61'}, {'i': '2'}], [{'u': '62'}, {'i': '1'}]]})
same(collections.OrderedDict(a=1), {'d': [[{'u': '61'}, {'i': '1'}]]})
same(collections.defaultdict(int, a=1), {'d': [[{'u': '61'}, {'i': '1'}]]})
same(collections.namedtuple('P', 'x y')(1, 2), {'t': [{'i': '1'}, {'i': '2'}]})
same(frozenset([1]), {'z': [{'i': '1'}]})
assert encode(10 ** 5000)['i'] == format(10 ** 5000, 'x')

for bad, word in [(AlwaysEq(), 'AlwaysEq'), (FakeInt(), 'FakeInt'), (1j, 'complex'),
                  ([AlwaysEq()], 'AlwaysEq'), (collections.deque(), 'collections.deque')]:
    try:
        encode(bad)
    except Refused as e:
        assert word in e.args[0], e.args
    else:
        raise AssertionError(bad)
cyclic = []
cyclic.append(cyclic)
try:
    encode(cyclic)
except Refused as e:
    assert 'holds itself' in e.args[0]
else:
    raise AssertionError('cyclic')
# A value seen twice, not inside itself, is fine.
shared = [1]
same([shared, shared], {'l': [{'l': [{'i': '1'}]}] * 2})

for v in [[1, (2.5, '\ud83d', b'x'), {'k': {3, 4}}, frozenset(['a']), None, True, -10 ** 30]]:
    back = decode(json.loads(emit(encode(v))))
    assert back == v and type(back[1]) is tuple, back

sys.stdout.write(emit(encode([1, 1.0, True, float('nan'), {'a': (1, 2)}, {1, 2}])))
