def _sbx_lcb_scope(name):
    # LiveCodeBench runs every candidate after a block of imports (several
    # with *, in this order: `_sbx_lcb_block`), with the recursion limit at
    # 50000, int-to-text conversion allowed up to 50000 digits, and quit()
    # disabled.
    import builtins
    if hasattr(sys, 'set_int_max_str_digits'):
        sys.set_int_max_str_digits(50000)
    builtins.quit = None
    # The block as the zygote ran it once before it forked this process;
    # else run here.
    scope = sys.__dict__.pop('_sbx_lcb_prepared', None)
    if scope is None:
        scope = _sbx_lcb_block({'__name__': name, '__builtins__': builtins})
    else:
        # What the block binds that is different now: `from sys import *`
        # bound the argv of its moment, `from builtins import *` the quit.
        scope['__name__'] = name
        scope['argv'] = sys.argv
        scope['quit'] = None
    sys.setrecursionlimit(50000)
    return scope
