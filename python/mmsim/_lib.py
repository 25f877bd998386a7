"""Finding and binding libmmsim.so (ctypes).  Internal to the mmsim package.

The library is looked up, in order, at $MMSIM_LIB (a file), beside this
package, under the prefix meson installed the package with (_installed.py,
written at install time), and in the repository's build/ folder (the
package run from a checkout).  Not for: anything users call directly.
"""
import ctypes
import os

SONAME = "libmmsim.so.1"  # the soname major = MMSIM_API_VERSION of mmsim.h


def _candidates():
    env = os.environ.get("MMSIM_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in (SONAME, "libmmsim.so"):
        yield os.path.join(here, name)
    try:
        from . import _installed  # written by meson install
        yield os.path.join(_installed.LIBDIR, SONAME)
    except ImportError:
        pass
    repo = os.path.dirname(os.path.dirname(here))  # python/mmsim -> the checkout
    for name in (SONAME, "libmmsim.so"):
        yield os.path.join(repo, "build", name)


def find():
    """The path of the library to load, or raise OSError naming where it looked."""
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return path
        tried.append(path)
    raise OSError("mmsim: libmmsim.so not found; set MMSIM_LIB (looked at: %s)" % ", ".join(tried))


def load(path=None):
    path = path or find()
    # The repository's own build: its data files (models/, topologies/,
    # workloads/) are the repository's, whatever the current folder.
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.abspath(path).startswith(os.path.join(repo, "build") + os.sep):
        os.environ.setdefault("MMSIM_DATADIR", repo)
    lib = ctypes.CDLL(path)
    P, S, I, D, LL = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_double, ctypes.c_longlong
    SS = ctypes.POINTER(ctypes.c_char_p)
    sig = {
        "mm_version": (S, []),
        "mmsim_open": (P, [S, SS, I]),
        "mmsim_open_text": (P, [S, S, SS, I]),
        "mmsim_close": (None, [P]),
        "mmsim_status": (I, [P]),
        "mmsim_error_message": (S, [P]),
        "mmsim_error_file": (S, [P]),
        "mmsim_error_line": (I, [P]),
        "mmsim_error_key": (S, [P]),
        "mmsim_run": (I, [P]),
        "mmsim_run_json": (S, [P]),
        "mmsim_metric": (D, [P, S]),
        "mmsim_stage_count": (I, [P]),
        "mmsim_stage_metric": (D, [P, I, S]),
        "mmsim_plan_json": (S, [P, I, I, I, I]),
        "mmsim_model_json": (S, [P, S, LL, LL]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib
