def _sbx_lcb_call():
    # `python3 -c THIS LIMIT_MS PROGRAM`, stdin: a token line, the function's
    # name line, then a JSON list of the tests' inputs (each one JSON value
    # per line, LiveCodeBench's form). The program runs once in
    # LiveCodeBench's scope; then one instance of its `Solution` (when the
    # code says `class Solution`, else the module's function) is called
    # with each test's arguments in turn. Each return value is written as
    # plain data (the codec) after the token on a copy of fd 1 taken before
    # any candidate code runs; sbx compares them with the expected values,
    # which never enter this process. A call that takes more than LIMIT_MS
    # of CPU time is stopped there (LiveCodeBench's per-test timeout).
    import os, signal, time
    Refused, encode, decode, emit, hexed, name_of = _sbx_codec()
    write, _exit, cpu, setitimer = os.write, os._exit, time.process_time, signal.setitimer
    _type, _issub, _tuple, _list, _repr = type, issubclass, tuple, list, repr
    tuple_iter = tuple.__iter__
    limit, path = int(sys.argv[1]) / 1000.0, sys.argv[2]
    parts = []
    while True:
        part = os.read(0, 1 << 20)
        if not part:
            break
        parts.append(part)
    token, name, inputs = b''.join(parts).split(b'\n', 2)
    del parts
    token, name = token.decode(), name.decode()
    import json
    inputs = json.loads(inputs)
    os.close(0)
    os.open(os.devnull, os.O_RDONLY)
    out = os.dup(1)
    sys.argv = [path]
    results = []

    def finish():
        frame = ('\n' + token + ' ' + emit(results) + '\n').encode()
        while frame:
            frame = frame[write(out, frame):]
        _exit(0)

    class Stop(BaseException):
        pass

    def alarm(signum, frame):
        raise Stop()

    signal.signal(signal.SIGPROF, alarm)

    def said(e):
        try:
            return _repr(e)
        except BaseException:
            return name_of(_type(e))

    with open(path, 'rb') as f:
        source = f.read()
    scope = _sbx_lcb_scope('tmp_sol')
    start = cpu()
    try:
        setitimer(signal.ITIMER_PROF, limit)
        exec(compile(source, path, 'exec'), scope)
        if b'class Solution' in source:
            target = scope['Solution']()
            method = getattr(target, name)
        else:
            method = scope[name]
        setitimer(signal.ITIMER_PROF, 0)
        args_of = [[json.loads(line) for line in i.split('\n')] for i in inputs]
    except BaseException as e:
        setitimer(signal.ITIMER_PROF, 0)
        results.append({'setup': hexed(said(e))})
        finish()
    for args in args_of:
        start = cpu()
        try:
            setitimer(signal.ITIMER_PROF, limit)
            value = method(*args)
            setitimer(signal.ITIMER_PROF, 0)
        except BaseException as e:
            setitimer(signal.ITIMER_PROF, 0)
            if _type(e) is Stop or cpu() - start > limit:
                results.append({'timeout': hexed('TimeoutException()')})
            else:
                results.append({'raised': hexed(said(e))})
            break
        if cpu() - start > limit:
            results.append({'timeout': hexed('TimeoutException()')})
            break
        # LiveCodeBench's one conversion: a tuple returned is a list.
        if _issub(_type(value), _tuple):
            value = _list(tuple_iter(value))
        try:
            results.append({'ok': encode(value)})
        except Refused as e:
            results.append({'refused': hexed(e.args[0])})
            break
        except BaseException:
            results.append({'refused': hexed('a value that could not be read')})
            break
    finish()


_sbx_lcb_call()
