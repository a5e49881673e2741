def _guard():
    import builtins
    builtins.exit = builtins.quit = builtins.help = None
    os.environ['OMP_NUM_THREADS'] = '1'
    for name in ('kill', 'system', 'putenv', 'remove', 'removedirs', 'rmdir', 'fchdir', 'setuid', 'fork', 'forkpty', 'killpg', 'rename', 'renames', 'truncate', 'replace', 'unlink', 'fchmod', 'fchown', 'chmod', 'chown', 'chroot', 'lchflags', 'lchmod', 'lchown', 'getcwd', 'chdir'):
        setattr(os, name, None)
    for name in ('ipdb', 'joblib', 'resource', 'psutil', 'tkinter'):
        sys.modules[name] = None
