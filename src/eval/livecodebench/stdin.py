def _sbx_lcb_stdin():
    # `python3 -c THIS PROGRAM`: the program runs as a script (`__main__`),
    # in LiveCodeBench's scope; SystemExit (exit(), sys.exit(1)) ends it as
    # a normal end, since LiveCodeBench ignores the exit status. Any other
    # exception ends it with a traceback and status 1: a runtime error.
    path = sys.argv[1]
    sys.argv = [path]
    with open(path, 'rb') as f:
        code = compile(f.read(), path, 'exec')
    scope = _sbx_lcb_scope('__main__')
    scope['__file__'] = path
    try:
        exec(code, scope)
    except SystemExit:
        pass


_sbx_lcb_stdin()
