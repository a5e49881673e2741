

def _sbx_sealed():
    import os, sys
    Refused, encode, decode, emit, hexed, name_of = _sbx_codec()
    import json
    write, _exit, dup, chdir = os.write, os._exit, os.dup, os.chdir
    _type, _dict, _str, _len = type, dict, str, len
    token, path = sys.argv[1], sys.argv[2]
    with open(path, 'rb') as f:
        data = f.read()
    source, _, plan = data.rpartition(b'\n#sbx-sealed-plan ')
    plan = json.loads(plan)
    # The frame goes to a copy of fd 1 taken now: fd 1 is the candidate's.
    out = dup(1)
    sys.argv = [path]
    code = compile(source, path, 'exec')
    try:
        chdir('/tmp')
    except OSError:
        pass
    scope = {}
    if plan['prelude']:
        exec(compile(plan['prelude'], '<test imports>', 'exec'), scope)
    exec(code, scope)
    if plan['postlude']:
        exec(compile(plan['postlude'], '<test imports>', 'exec'), scope)
    results = []
    for name, args, kwargs in plan['calls']:
        try:
            function = scope[name]
        except KeyError:
            results.append({'raised': hexed('NameError: name %r is not defined' % name)})
            break
        try:
            value = function(*decode(args), **_dict(decode(kwargs)))
        except BaseException as e:
            try:
                what = name_of(_type(e))
                said = BaseException.__str__(e)
                if said:
                    what = what + ': ' + said
            except BaseException:
                what = 'an exception'
            results.append({'raised': hexed(what)})
            break
        try:
            results.append({'ok': encode(value)})
        except Refused as e:
            results.append({'refused': hexed(e.args[0])})
            break
        except BaseException:
            results.append({'refused': hexed('a value that could not be read')})
            break
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    frame = ('\n' + token + ' ' + emit(results) + '\n').encode()
    while frame:
        frame = frame[write(out, frame):]
    _exit(0)


_sbx_sealed()
