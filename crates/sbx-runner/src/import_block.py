# LiveCodeBench's import block: the modules its evaluator star-imports, then
# imports by name, in its order, into a candidate's scope. The zygote runs
# it once, before it serves (zygote.py); sbx's LiveCodeBench harnesses take
# that scope, or run the block themselves where no zygote forked them.
_SBX_LCB_MODULES = ('string', 're', 'datetime', 'collections', 'heapq',
                    'bisect', 'copy', 'math', 'random', 'statistics',
                    'itertools', 'functools', 'operator', 'io', 'sys', 'json')


def _sbx_lcb_block(scope):
    for module in _SBX_LCB_MODULES + ('builtins', 'typing'):
        exec('from %s import *' % module, scope)
    for module in _SBX_LCB_MODULES:
        exec('import %s' % module, scope)
    return scope


