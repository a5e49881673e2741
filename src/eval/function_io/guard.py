def _guard():
    import builtins
    builtins.exit = builtins.quit = builtins.help = None
    os.environ['OMP_NUM_THREADS'] = '1'
    for name in ('kill', 'system', 'putenv', 'remove', 'removedirs', 'rmdir', 'fchdir', 'setuid', 'fork', 'forkpty', 'killpg', 'rename', 'renames', 'truncate', 'replace', 'unlink', 'fchmod', 'fchown', 'chmod', 'chown', 'chroot', 'lchflags', 'lchmod', 'lchown', 'getcwd', 'chdir'):
        setattr(os, name, None)
    for name in ('ipdb', 'joblib', 'resource', 'psutil', 'tkinter'):
        sys.modules[name] = None


def _nofork():
    # No new process from here on, refused by the kernel: a seccomp filter
    # (no code can remove one) on this thread, which every thread made
    # later inherits. fork, vfork, execve, execveat and clone without
    # CLONE_THREAD fail with EPERM; clone3 with ENOSYS, so that a new
    # thread falls back to clone. Threads keep working. x86-64 and aarch64;
    # elsewhere (or where seccomp is missing) only the audit hook refuses.
    import _ctypes
    machine = os.uname().machine
    if machine == 'x86_64':
        arch, refused, clone = 0xC000003E, (57, 58, 59, 322), 56
    elif machine == 'aarch64':
        arch, refused, clone = 0xC00000B7, (221, 281), 220
    else:
        return
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x50001, 0x50026
    prog = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD, 0, 0, 0)]
    jumps = []
    if machine == 'x86_64':
        # The x32 numbers of any call.
        jumps.append((JGE, 0x40000000, 'EPERM'))
    jumps += [(JEQ, nr, 'EPERM') for nr in refused] + [(JEQ, 435, 'ENOSYS')]
    # clone: allowed only with CLONE_THREAD in its flags (args[0]).
    size = len(prog) + len(jumps) + 3
    at = {'ALLOW': size, 'EPERM': size + 1, 'ENOSYS': size + 2}
    for code, k, target in jumps:
        prog.append((code, at[target] - len(prog) - 1, 0, k))
    prog.append((JEQ, 0, at['ALLOW'] - len(prog) - 1, clone))
    prog.append((LD, 0, 0, 16))
    prog.append((JSET, at['ALLOW'] - len(prog) - 1, at['EPERM'] - len(prog) - 1, 0x10000))
    prog += [(RET, 0, 0, ALLOW), (RET, 0, 0, EPERM), (RET, 0, 0, ENOSYS)]
    order = sys.byteorder
    code = b''.join(c.to_bytes(2, order) + bytes((jt, jf)) + k.to_bytes(4, order)
                    for c, jt, jf, k in prog)

    class C(_ctypes._SimpleCData):
        _type_ = 'c'

    class UL(_ctypes._SimpleCData):
        _type_ = 'L'

    class I(_ctypes._SimpleCData):
        _type_ = 'i'

    class F(_ctypes.CFuncPtr):
        _flags_, _restype_ = _ctypes.FUNCFLAG_CDECL, I

    class L:
        _handle = _ctypes.dlopen(None)

    class Code(_ctypes.Array):
        _type_, _length_ = C, len(code)

    class Prog(_ctypes.Array):
        _type_, _length_ = C, 16

    filt = Code.from_buffer_copy(code)
    fprog = Prog.from_buffer_copy(len(prog).to_bytes(2, order) + bytes(6)
                                  + _ctypes.addressof(filt).to_bytes(8, order))
    prctl = F(('prctl', L()))
    # PR_SET_NO_NEW_PRIVS (already set by the engine), PR_SET_SECCOMP.
    prctl(UL(38), UL(1), UL(0), UL(0), UL(0))
    if prctl(UL(22), UL(2), UL(_ctypes.addressof(fprog)), UL(0), UL(0)) != 0:
        raise OSError('prctl(PR_SET_SECCOMP) failed')
