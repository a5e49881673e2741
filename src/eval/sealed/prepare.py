

def _sbx_prepare():
    """Reads function tests (a JSON list on stdin) and writes, for each, the
    sealed plan of its checks or why it runs in-process. Trusted code only:
    the tests' own, never a candidate's."""
    import ast, builtins, io, json, marshal, math, os, sys
    # The harness (sys.argv[1]) compiled here, before any test's code runs,
    # by this image's own Python: each candidate's run then loads the code
    # instead of compiling the harness again.
    harness = None
    if len(sys.argv) > 1:
        harness = marshal.dumps(compile(sys.argv[1], '<string>', 'exec')).hex()
    Refused, encode, decode, emit, hexed, name_of = _sbx_codec()

    class Unsealed(Exception):
        pass

    def names(node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    def evaluate(node, env):
        try:
            return eval(compile(ast.Expression(node), '<test>', 'eval'), env)
        except Exception as e:
            raise Unsealed('evaluating %s raised %s' % (ast.unparse(node)[:60], type(e).__name__))

    def value(node, env):
        try:
            return encode(evaluate(node, env))
        except Refused as e:
            raise Unsealed('%s is %s' % (ast.unparse(node)[:60], e.args[0]))

    def number(node, env):
        v = evaluate(node, env)
        if type(v) not in (int, float):
            raise Unsealed('a tolerance that is not a number')
        return encode(float(v))

    class Checks:
        def __init__(self, callee, env, target=None):
            # callee: whether a name is the candidate's in the test;
            # target: the name the candidate's code gives it.
            self.callee, self.env, self.calls, self.checks = callee, env, [], []
            self.target = target

        def call(self, node):
            """The candidate's call in a check, or None."""
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and self.callee(node.func.id)):
                return None
            if any(isinstance(a, ast.Starred) for a in node.args) or any(
                    k.arg is None for k in node.keywords):
                raise Unsealed('a call with * or ** arguments')
            for part in node.args + [k.value for k in node.keywords]:
                if any(self.callee(n) for n in names(part)):
                    raise Unsealed('a call whose arguments call the candidate')
            args = {'l': [value(a, self.env) for a in node.args]}
            kwargs = {'d': [[encode(k.arg), value(k.value, self.env)] for k in node.keywords]}
            return [self.target or node.func.id, args, kwargs]

        def trusted(self, node):
            if any(self.callee(n) for n in names(node)):
                raise Unsealed('an expected value that names the candidate')
            return node

        def add(self, call, check):
            self.calls.append(call)
            self.checks.append(check)

        def assertion(self, test):
            env = self.env
            call = self.call(test)
            if call:
                return self.add(call, {'op': 'truthy'})
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                call = self.call(test.operand)
                if call:
                    return self.add(call, {'op': 'falsy'})
            if isinstance(test, ast.Compare) and len(test.ops) == 1:
                left, op, right = test.left, test.ops[0], test.comparators[0]
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    call, other = self.call(left), right
                    if call is None:
                        call, other = self.call(right), left
                    if call:
                        kind = 'eq' if isinstance(op, ast.Eq) else 'ne'
                        return self.add(call, {'op': kind, 'expected': value(self.trusted(other), env)})
                if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) \
                        and right.value in (True, False, None) and type(right.value) in (bool, type(None)):
                    call = self.call(left)
                    if call:
                        kind = 'is' if isinstance(op, ast.Is) else 'is_not'
                        return self.add(call, {'op': kind, 'value': repr(right.value)})
                if isinstance(op, (ast.Gt, ast.GtE)):
                    left, right = right, left
                    op = ast.Lt() if isinstance(op, ast.Gt) else ast.LtE()
                if isinstance(op, (ast.Lt, ast.LtE)) and isinstance(left, ast.Call) \
                        and isinstance(left.func, ast.Name) and len(left.args) == 1 \
                        and not left.keywords and isinstance(left.args[0], ast.BinOp) \
                        and isinstance(left.args[0].op, ast.Sub) \
                        and evaluate(left.func, env) is builtins.abs:
                    a, b = left.args[0].left, left.args[0].right
                    call, other = self.call(a), b
                    if call is None:
                        call, other = self.call(b), a
                    if call:
                        return self.add(call, {
                            'op': 'tol', 'expected': value(self.trusted(other), env),
                            'tol': number(self.trusted(right), env),
                            'strict': isinstance(op, ast.Lt)})
            if isinstance(test, ast.Call) and len(test.args) == 2 and not any(
                    isinstance(a, ast.Starred) for a in test.args) and not any(
                    k.arg is None for k in test.keywords) and not any(
                    self.callee(n) for n in names(test.func)) \
                    and evaluate(test.func, env) is math.isclose:
                a, b = test.args
                call, other = self.call(a), b
                if call is None:
                    call, other = self.call(b), a
                if call:
                    tols = {'rel_tol': encode(1e-09), 'abs_tol': encode(0.0)}
                    for k in test.keywords:
                        if k.arg not in tols:
                            raise Unsealed('math.isclose with %s' % k.arg)
                        tols[k.arg] = number(self.trusted(k.value), env)
                    return self.add(call, dict(op='isclose', expected=value(self.trusted(other), env), **tols))
            raise Unsealed('an assertion that is not a sealed check: %s' % ast.unparse(test)[:60])

        def statements(self, body, where):
            for stmt in body:
                if isinstance(stmt, ast.Pass):
                    continue
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    continue
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    exec(compile(ast.Module([stmt], []), '<test>', 'exec'), self.env)
                    continue
                if isinstance(stmt, ast.Assert):
                    if isinstance(stmt.test, ast.Constant) and stmt.test.value:
                        continue
                    self.assertion(stmt.test)
                    continue
                raise Unsealed('%s %s' % (type(stmt).__name__, where))

    def free(env):
        return lambda name: name not in env and not hasattr(builtins, name)

    def imports_of(tree, text):
        return '\n'.join(ast.get_source_segment(text, s) for s in tree.body
                         if isinstance(s, (ast.Import, ast.ImportFrom)))

    def plan(prelude, postlude, checks):
        if not checks.checks:
            raise Unsealed('no check')
        return {'sealed': {
            'input': {'prelude': prelude, 'postlude': postlude, 'calls': checks.calls},
            'checks': checks.checks}}

    def check_test(test, entry_point):
        tree = ast.parse(test)
        check = None
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == 'check':
                check = stmt
            elif not isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef,
                                       ast.Pass)) and not (isinstance(stmt, ast.Expr) and isinstance(
                                           stmt.value, ast.Constant)):
                raise Unsealed('a top-level %s in the test' % type(stmt).__name__)
        if check is None:
            raise Unsealed('no check function')
        a = check.args
        if check.decorator_list or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg \
                or len(a.args) != 1:
            raise Unsealed('check does not take the candidate alone')
        param = a.args[0].arg
        env = {'__name__': '__sbx_test__'}
        exec(compile(tree, '<test>', 'exec'), env)
        local = dict(env)
        local.pop(param, None)
        checks = Checks(lambda name: name == param, local, entry_point)
        checks.statements(check.body, 'in check')
        return plan('', imports_of(tree, test), checks)

    def module_test(imports, setup, test, before):
        if setup.strip():
            raise Unsealed('setup code')
        env = {'__name__': '__sbx_test__'}
        exec(compile(imports, '<test imports>', 'exec'), env)
        tree = ast.parse(test)
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([stmt], []), '<test>', 'exec'), env)
        checks = Checks(free(env), env)
        checks.statements(tree.body, 'in the test')
        if before:
            return plan(imports, '', checks)
        return plan('', imports_of(tree, test), checks)

    def prepare(item):
        kind = item['kind']
        if kind == 'check':
            return check_test(item['test'], item['entry_point'])
        if kind == 'asserts':
            return module_test('\n'.join(item['imports']), item['setup'],
                               '\n'.join(item['asserts']), True)
        return module_test('', '', item['test'], False)

    items = json.loads(sys.stdin.buffer.read())
    real_stdout = sys.stdout
    out = []
    for item in items:
        sys.stdout = io.StringIO()
        try:
            out.append(prepare(item))
        except Unsealed as e:
            out.append({'in_process': str(e)})
        except BaseException as e:
            out.append({'in_process': 'preparing raised %s' % type(e).__name__})
        finally:
            sys.stdout = real_stdout
    sys.stdout.write(json.dumps({'answers': out, 'harness': harness}))
    sys.stdout.flush()


_sbx_prepare()
