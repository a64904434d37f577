"""horovod.runner.util.threads: the thread helper Horovod's own test
utilities (test/utils/common.py) import."""
import threading


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Run target(*args) on a started thread and return the thread; with
    silent=True an exception in target is swallowed."""
    def run(*a):
        try:
            target(*a)
        except Exception:
            if not silent:
                raise
    thread = threading.Thread(target=run if silent else target, args=args, name=name,
                              daemon=daemon)
    thread.start()
    return thread
