"""mmsim: the simulator in process, through ctypes over libmmsim.so.

    import mmsim
    r = mmsim.run(sets={"parallel.llm": {"tp": 4, "pp": 2, "dp": 6}})
    r["iteration_time_s"], r["mfu"]

run(), plan() and model() return the dicts that `mmsim run --no-db --json`,
`mmsim plan --no-db --json` and `mmsim model MODEL --json` print: the
library writes that JSON with the same function the command line uses.
A `sets` value is a Python scalar, list or dict and means what the same
YAML means after `--set KEY=`; errors raise mmsim.Error with the file, line
and key.  docs/python.md is the manual.  No third-party dependency.
"""
import ctypes
import json
import math

from . import _lib

__all__ = ["Error", "Scenario", "run", "plan", "model", "version", "yaml_value"]

_LIB = None


def _lib_handle():
    global _LIB
    if _LIB is None:
        _LIB = _lib.load()
    return _LIB


class Error(Exception):
    """A scenario, override or model the library refused.

    status is 2 for bad input and 1 for an internal error (the CLI's exit
    statuses); file, line and key say where ("--set" and 0 for an override,
    "" and 0 when unknown)."""

    def __init__(self, message, status=2, file="", line=0, key=""):
        super().__init__(message)
        self.message, self.status, self.file, self.line, self.key = message, status, file, line, key


def version():
    """The library's version string (mm_version())."""
    return _lib_handle().mm_version().decode()


def yaml_value(v):
    """The YAML text for a Python value, as `--set KEY=` would read it.

    JSON is YAML's flow style, so json.dumps writes lists, dicts and
    strings; booleans, None and non-finite floats get their YAML
    spellings."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, float) and not math.isfinite(v):
        return ".nan" if math.isnan(v) else (".inf" if v > 0 else "-.inf")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(yaml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (json.dumps(str(k)), yaml_value(x)) for k, x in v.items()) + "}"
    if isinstance(v, str):
        return json.dumps(v)
    raise TypeError("mmsim: a sets value is a scalar, list or dict, not %s" % type(v).__name__)


def _set_strings(sets):
    """dict {key: value} -> ["key=yaml", ...]; a list of "key=value" strings passes as is."""
    if sets is None:
        return []
    if isinstance(sets, dict):
        return ["%s=%s" % (k, yaml_value(v)) for k, v in sets.items()]
    out = []
    for s in sets:
        if not isinstance(s, str) or "=" not in s:
            raise TypeError("mmsim: sets is a dict or a list of 'key=value' strings, got %r" % (s,))
        out.append(s)
    return out


class Scenario:
    """One scenario held open in the library: run it several times, read
    metrics through getters, plan it or report a model under it.

    scenario is a YAML file (None: the built-in default); text, instead, is
    the YAML itself."""

    def __init__(self, scenario=None, sets=None, text=None):
        lib = _lib_handle()
        self._lib = lib
        strs = [s.encode() for s in _set_strings(sets)]
        arr = (ctypes.c_char_p * (len(strs) + 1))(*strs)
        if text is not None:
            self._h = lib.mmsim_open_text(text.encode(), b"<text>", arr, len(strs))
        else:
            self._h = lib.mmsim_open(scenario.encode() if scenario else None, arr, len(strs))
        if not self._h:
            raise MemoryError("mmsim: out of memory")
        self._check(lib.mmsim_status(self._h))

    def _check(self, status):
        if status == 0:
            return
        lib, h = self._lib, self._h
        raise Error(lib.mmsim_error_message(h).decode(), abs(status) or 1,
                    lib.mmsim_error_file(h).decode(), lib.mmsim_error_line(h), lib.mmsim_error_key(h).decode())

    def close(self):
        if getattr(self, "_h", None):
            self._lib.mmsim_close(self._h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self):
        """Simulates the scenario; returns the `mmsim run --json` dict."""
        self._check(self._lib.mmsim_run(self._h))
        return json.loads(self._lib.mmsim_run_json(self._h).decode())

    def metric(self, name):
        """One number of the last run by its JSON name (nan if unknown)."""
        return self._lib.mmsim_metric(self._h, name.encode())

    def stage_metric(self, stage, name):
        return self._lib.mmsim_stage_metric(self._h, stage, name.encode())

    def plan(self, gpus=0, top=8, iterations=0, all=False):
        """The `mmsim plan --no-db --json` dict (top: candidates simulated)."""
        s = self._lib.mmsim_plan_json(self._h, gpus, top, iterations, 1 if all else 0)
        if s is None:
            self._check(self._lib.mmsim_status(self._h) or 1)
        return json.loads(s.decode())

    def model(self, model, seq=0, images=1):
        """The `mmsim model MODEL --json` dict under this scenario's layout."""
        s = self._lib.mmsim_model_json(self._h, model.encode(), seq, images)
        if s is None:
            self._check(self._lib.mmsim_status(self._h) or 1)
        return json.loads(s.decode())


def run(scenario=None, sets=None, text=None):
    """Runs a scenario (file, None for the default, or text=YAML) with
    overrides; returns what `mmsim run --no-db --json` prints, as a dict."""
    with Scenario(scenario, sets, text) as s:
        return s.run()


def plan(scenario=None, sets=None, gpus=0, top=8, iterations=0, all=False):
    """Plans layouts as `mmsim plan [SCENARIO] --gpus G --top K --no-db --json`."""
    with Scenario(scenario, sets) as s:
        return s.plan(gpus, top, iterations, all)


def model(model, sets=None, seq=0, images=1):
    """Reports a model file as `mmsim model MODEL [--seq N] [--images K] --json`."""
    with Scenario(None, sets) as s:
        return s.model(model, seq, images)
