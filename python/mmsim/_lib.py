"""Finding and binding libmmsim.so (ctypes), and the data folder a run reads.
Internal to the mmsim package.

The library is looked up, in order, at $MMSIM_LIB (a file); beside this
package; in the wheel's bundled-library folder (site-packages/
.mmsim.mesonpy.libs, where meson-python puts what meson installs to the
library folder); under the prefix meson installed the package with
(_installed.py, written at install time); and in the repository's build/
folder (the package run from a checkout).

The data files a scenario names by relative path (models/, topologies/,
workloads/, frameworks/) are found, unless $MMSIM_DATADIR is set, in
sys.prefix/mmsim (where pip puts a wheel's data files: meson-python maps
meson's datadir to the wheel's data scheme, which is the prefix itself),
sys.prefix/share/mmsim, the meson install's share/mmsim, or the checkout:
that folder goes into $MMSIM_DATADIR, which the library reads after the
current folder.
Not for: anything users call directly.
"""
from __future__ import annotations

import ctypes
import glob
import importlib
import os
import sys
from typing import Iterator, List, Optional

SONAME = "libmmsim.so.1"  # the soname major = MMSIM_API_VERSION of mmsim.h

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))  # python/mmsim -> the checkout


def _installed(name: str) -> Optional[str]:
    try:
        inst = importlib.import_module(__name__.rsplit(".", 1)[0] + "._installed")  # written by meson install
    except ImportError:
        return None
    v = getattr(inst, name, None)
    return v if isinstance(v, str) else None


def _in_folder(folder: str) -> List[str]:
    """libmmsim.so.1, libmmsim.so, then any libmmsim.so.1.* in folder."""
    names = [os.path.join(folder, n) for n in (SONAME, "libmmsim.so")]
    return names + sorted(glob.glob(os.path.join(folder, SONAME + ".*")))


def _candidates() -> Iterator[str]:
    env = os.environ.get("MMSIM_LIB")
    if env:
        yield env
        return
    yield from _in_folder(_HERE)
    # meson-python's folder for libraries installed to libdir (a wheel)
    yield from _in_folder(os.path.join(os.path.dirname(_HERE), ".mmsim.mesonpy.libs"))
    libdir = _installed("LIBDIR")
    if libdir:
        yield from _in_folder(libdir)
    yield from _in_folder(os.path.join(_REPO, "build"))


def find() -> str:
    """The path of the library to load, or raise OSError naming where it looked."""
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return path
        tried.append(path)
    raise OSError("mmsim: libmmsim.so not found; set MMSIM_LIB (looked at: %s)" % ", ".join(tried))


def _is_data_dir(d: Optional[str]) -> bool:
    if not d:
        return False
    return os.path.isdir(os.path.join(d, "models")) and os.path.isdir(os.path.join(d, "topologies"))


def data_dir(lib_path: str) -> Optional[str]:
    """The folder holding models/, topologies/, workloads/ and frameworks/
    for the library at lib_path, or None (then the library's compiled-in
    folder is the last resort)."""
    if os.path.abspath(lib_path).startswith(os.path.join(_REPO, "build") + os.sep) and _is_data_dir(_REPO):
        return _REPO  # the repository's own build: its data files
    for d in (os.path.join(sys.prefix, "mmsim"), os.path.join(sys.prefix, "share", "mmsim"), _installed("DATADIR"),
              _REPO):
        if _is_data_dir(d):
            return d
    return None


def load(path: Optional[str] = None) -> ctypes.CDLL:
    path = path or find()
    if not os.environ.get("MMSIM_DATADIR"):
        d = data_dir(path)
        if d:
            os.environ["MMSIM_DATADIR"] = d
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
        "mmsim_collective_json": (S, [P, S, S, I, I, S, D, D, D, S, I, S, S, I]),
        "mmsim_workload_stats_json": (S, [P, S, S, LL, LL, LL, LL, LL]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib
