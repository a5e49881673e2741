def _sbx_codec():
    """Plain data to and from sbx's sealed form. Every builtin is bound
    here, before any candidate code runs, and a value is read through the
    builtin types' own methods (dict.items(v), never v.items()): a subclass
    of a builtin is read as the builtin value it holds, whatever it
    overrides, and anything else is refused with its type's name."""
    _type, _issub, _id, _len = type, issubclass, id, len
    _bool, _int, _float, _str, _bytes = bool, int, float, str, bytes
    _list, _tuple, _dict, _set, _frozenset = list, tuple, dict, set, frozenset
    int_format, float_repr, str_str = int.__format__, float.__repr__, str.__str__
    str_encode, bytes_decode, bytes_hex, from_hex = str.encode, bytes.decode, bytes.hex, bytes.fromhex
    list_iter, tuple_iter, set_iter, frozenset_iter = (
        list.__iter__, tuple.__iter__, set.__iter__, frozenset.__iter__)
    dict_items, list_append, str_join = dict.items, list.append, str.join
    type_name = type.__dict__['__qualname__'].__get__
    type_module = type.__dict__['__module__'].__get__
    MAX_DEPTH = 100

    class Refused(Exception):
        pass

    def name_of(t):
        try:
            module = type_module(t)
            name = type_name(t)
            if _type(module) is _str and _type(name) is _str:
                return name if module == 'builtins' else module + '.' + name
        except BaseException:
            pass
        return 'unnamed type'

    def hexed(s):
        return bytes_hex(str_encode(str_str(s), 'utf-8', 'surrogatepass'))

    def encode(v, depth=0, path=None):
        if path is None:
            path = _set()
        if depth > MAX_DEPTH:
            raise Refused('a value nested deeper than %d' % MAX_DEPTH)
        t = _type(v)
        if v is None:
            return None
        if t is _bool:
            return v is True
        if _issub(t, _int):
            return {'i': int_format(v, 'x')}
        if _issub(t, _float):
            return {'f': float_repr(v)}
        if _issub(t, _str):
            return {'u': hexed(v)}
        if _issub(t, _bytes):
            return {'y': bytes_hex(v)}
        for base, tag, items in (
            (_list, 'l', list_iter), (_tuple, 't', tuple_iter),
            (_set, 's', set_iter), (_frozenset, 'z', frozenset_iter),
            (_dict, 'd', None),
        ):
            if _issub(t, base):
                key = _id(v)
                if key in path:
                    raise Refused('a %s that holds itself' % name_of(t))
                path.add(key)
                out = []
                if items is None:
                    for k, x in dict_items(v):
                        list_append(out, [encode(k, depth + 1, path), encode(x, depth + 1, path)])
                else:
                    for x in items(v):
                        list_append(out, encode(x, depth + 1, path))
                path.discard(key)
                return {tag: out}
        raise Refused('an object of type %s, not plain data' % name_of(t))

    def decode(v):
        if v is None or v is True or v is False:
            return v
        (tag, x), = dict_items(v)
        if tag == 'i':
            return _int(x, 16)
        if tag == 'f':
            return _float(x)
        if tag == 'u':
            return bytes_decode(from_hex(x), 'utf-8', 'surrogatepass')
        if tag == 'y':
            return from_hex(x)
        if tag == 'l':
            return [decode(i) for i in x]
        if tag == 't':
            return _tuple([decode(i) for i in x])
        if tag == 's':
            return _set([decode(i) for i in x])
        if tag == 'z':
            return _frozenset([decode(i) for i in x])
        if tag == 'd':
            return _dict([(decode(k), decode(i)) for k, i in x])
        raise ValueError('unknown tag %r' % (tag,))

    def emit(v):
        # JSON of what encode makes (hex strings and fixed keys only), made
        # here rather than by the json module, which a candidate can patch.
        t = _type(v)
        if v is None:
            return 'null'
        if v is True:
            return 'true'
        if v is False:
            return 'false'
        if t is _str:
            return '"' + v + '"'
        if t is _int:
            return int_format(v, 'd')
        if t is _list:
            return '[' + str_join(',', [emit(x) for x in list_iter(v)]) + ']'
        return '{' + str_join(',', ['"' + k + '":' + emit(x) for k, x in dict_items(v)]) + '}'

    return Refused, encode, decode, emit, hexed, name_of
