def _sbx_lcb_scope(name):
    # LiveCodeBench runs every candidate after a block of imports (several
    # with *, in this order), with the recursion limit at 50000, int-to-text
    # conversion allowed up to 50000 digits, and quit() disabled.
    import builtins
    if hasattr(sys, 'set_int_max_str_digits'):
        sys.set_int_max_str_digits(50000)
    builtins.quit = None
    scope = {'__name__': name, '__builtins__': builtins}
    modules = ('string', 're', 'datetime', 'collections', 'heapq', 'bisect',
               'copy', 'math', 'random', 'statistics', 'itertools', 'functools',
               'operator', 'io', 'sys', 'json')
    for module in modules + ('builtins', 'typing'):
        exec('from %s import *' % module, scope)
    for module in modules:
        exec('import %s' % module, scope)
    sys.setrecursionlimit(50000)
    return scope
