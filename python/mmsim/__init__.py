"""mmsim: the simulator in process, through ctypes over libmmsim.so.

    import mmsim
    r = mmsim.run(sets={"parallel.llm": {"tp": 4, "pp": 2, "dp": 6}})
    r["iteration_time_s"], r["mfu"]

run(), plan(), model(), collective() and workload_stats() return the dicts
that `mmsim run --no-db --json`, `mmsim plan --no-db --json`, `mmsim model
MODEL --json`, `mmsim collective --json` and `mmsim workload stats --json`
print: the library writes that JSON with the same function the command
line uses.  A `sets` value is a Python scalar, list or dict and means what
the same YAML means after `--set KEY=`; bad input raises mmsim.Error (a
ValueError) with the file, line and key.  docs/python.md is the manual.
No third-party dependency.
"""
from __future__ import annotations

import ctypes
import json
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _lib

__all__ = ["Error", "Scenario", "run", "plan", "model", "collective", "workload_stats", "version",
           "yaml_value", "Sets", "Json"]

#: Overrides: {dotted key: value} or ["key=yaml", ...].
Sets = Union[Mapping[str, Any], Sequence[str], None]
#: A JSON object as json.loads gives it.
Json = Dict[str, Any]

_LIB: Optional[ctypes.CDLL] = None


def _lib_handle() -> ctypes.CDLL:
    global _LIB
    if _LIB is None:
        _LIB = _lib.load()
    return _LIB


class Error(ValueError):
    """Input the library refused: a scenario, an override, a model, a
    workload or a collective's arguments.

    Attributes: message (the CLI's whole message, "file:line: key 'k':
    ..."), status (2 bad input, 1 internal error: the CLI's exit statuses),
    file ("--set" for an override, "<text>" for a text scenario, "<api>" or
    "" for a call's own argument), line (1-based; 0 when it has none) and key
    (the dotted scenario key or the argument's name; "" when unknown)."""

    def __init__(self, message: str, status: int = 2, file: str = "", line: int = 0, key: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.file = file
        self.line = line
        self.key = key


def version() -> str:
    """The library's version string (mm_version(); `mmsim --version`)."""
    v: bytes = _lib_handle().mm_version()
    return v.decode()


def yaml_value(v: Any) -> str:
    """The YAML text for a Python value, as `--set KEY=` would read it.

    JSON is YAML's flow style, so json.dumps writes lists, dicts and
    strings; booleans, None and non-finite floats get their YAML
    spellings.  Raises TypeError for anything else."""
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


def _set_strings(sets: Sets) -> List[str]:
    """dict {key: value} -> ["key=yaml", ...]; a list of "key=value" strings passes as is."""
    if sets is None:
        return []
    if isinstance(sets, Mapping):
        return ["%s=%s" % (k, yaml_value(v)) for k, v in sets.items()]
    out = []
    for s in sets:
        if not isinstance(s, str) or "=" not in s:
            raise TypeError("mmsim: sets is a dict or a list of 'key=value' strings, got %r" % (s,))
        out.append(s)
    return out


def _bytes(s: Optional[str]) -> Optional[bytes]:
    return s.encode() if s is not None else None


class Scenario:
    """One scenario held open in the library: run it several times, read
    metrics through getters, plan it, report a model under it, time a
    collective on its cluster, summarise a workload.

    scenario is a YAML file (None: the built-in default); text, instead, is
    the YAML itself; sets are overrides applied after it.  Raises Error
    when the scenario is refused.  A context manager (close() frees it)."""

    def __init__(self, scenario: Optional[str] = None, sets: Sets = None, text: Optional[str] = None) -> None:
        lib = _lib_handle()
        self._lib = lib
        self._h: Optional[int] = None
        strs = [s.encode() for s in _set_strings(sets)]
        arr = (ctypes.c_char_p * (len(strs) + 1))(*strs)
        if text is not None:
            self._h = lib.mmsim_open_text(text.encode(), b"<text>", arr, len(strs))
        else:
            self._h = lib.mmsim_open(_bytes(scenario), arr, len(strs))
        if not self._h:
            raise MemoryError("mmsim: out of memory")
        self._check(lib.mmsim_status(self._h))

    def _check(self, status: int) -> None:
        if status == 0:
            return
        lib, h = self._lib, self._h
        raise Error(lib.mmsim_error_message(h).decode(), abs(status) or 1,
                    lib.mmsim_error_file(h).decode(), lib.mmsim_error_line(h), lib.mmsim_error_key(h).decode())

    def _json(self, s: Optional[bytes]) -> Json:
        if s is None:
            self._check(self._lib.mmsim_status(self._h) or 1)
            raise Error("mmsim: no result and no error", 1)  # not reached: _check raised
        d: Json = json.loads(s.decode())
        return d

    def close(self) -> None:
        """Frees the handle (also done by the context manager and on collection)."""
        if getattr(self, "_h", None):
            self._lib.mmsim_close(self._h)
            self._h = None

    __del__ = close

    def __enter__(self) -> "Scenario":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self) -> Json:
        """Simulates the scenario; returns the `mmsim run --no-db --json` dict."""
        self._check(self._lib.mmsim_run(self._h))
        return self._json(self._lib.mmsim_run_json(self._h))

    def metric(self, name: str) -> float:
        """One number of the last run by its JSON name (nan if unknown, or before a run)."""
        return float(self._lib.mmsim_metric(self._h, name.encode()))

    def stage_metric(self, stage: int, name: str) -> float:
        """Pipeline stage `stage`'s busy_s, idle_s, bubble_s, comm_s or memory_gib of the last run (nan if unknown)."""
        return float(self._lib.mmsim_stage_metric(self._h, stage, name.encode()))

    def plan(self, gpus: int = 0, top: int = 8, iterations: int = 0, all: bool = False) -> Json:
        """The `mmsim plan --gpus G --top K --no-db --json` dict (gpus 0:
        the scenario's cluster; top: candidates simulated; iterations 0: the
        scenario's; all: every candidate, as --all)."""
        return self._json(self._lib.mmsim_plan_json(self._h, gpus, top, iterations, 1 if all else 0))

    def model(self, model: str, seq: int = 0, images: int = 1) -> Json:
        """The `mmsim model MODEL --seq SEQ --images K --json` dict under this scenario's layout (seq 0: its seq_len)."""
        return self._json(self._lib.mmsim_model_json(self._h, model.encode(), seq, images))

    def collective(self, op: str, cluster: Optional[str] = None, nodes: int = 0, gpus: int = 0,
                   algo: Optional[str] = None, min_bytes: float = 0, max_bytes: float = 0, factor: float = 0,
                   network: Optional[str] = None, comm_ranks: int = 0, dtype: Optional[str] = None,
                   redop: Optional[str] = None, iters: int = 0) -> Json:
        """The `mmsim collective OP ... --json` dict: nccl-tests' JSON (file
        version 3): "config", "results" (per size: "size", "count", "type",
        "redop", "out_of_place" {"time" (us), "alg_bw", "bus_bw" (GB/s)},
        "algo"), "average_bus_bandwidth", and mmsim's "mmsim" object;
        "args" is the command line that gives the same rows.

        op: allreduce, allgather, reducescatter, alltoall, broadcast or
        sendrecv.  cluster: a topology file (None: this scenario's
        cluster.topology, with its cluster.nodes unless nodes is given);
        gpus 0: all (sendrecv: 2); algo None: auto (ring, tree, hier,
        nvls, collnet); sizes min_bytes to max_bytes by factor (0: 8 B, 8 GiB, 2);
        network None: flow (or analytic); comm_ranks: sendrecv's
        communicator size (0: 2); dtype None: float (nccl-tests' type
        names, or "all"); redop None: sum (or "all"); iters: -n (0: 1)."""
        return self._json(self._lib.mmsim_collective_json(
            self._h, op.encode(), _bytes(cluster), nodes, gpus, _bytes(algo), float(min_bytes),
            float(max_bytes), float(factor), _bytes(network), comm_ranks, _bytes(dtype), _bytes(redop), iters))

    def workload_stats(self, file: str, model: Optional[str] = None, samples: int = 0, seed: int = 1,
                       tokens_per_tile: int = -1, tokens_per_frame: int = -1, max_tokens: int = 0) -> Json:
        """The `mmsim workload stats FILE ... --json` dict of a mixture or
        trace file: counts by modality, summaries (mean, sd, min, p50, p90,
        p99, max) of tokens, images, tiles, frames and audio seconds, and
        histograms.  model: a model file for its token counts (None:
        InternVL's 256 per tile and frame); samples 0: a trace's rows or
        10000 draws; tokens_per_tile / tokens_per_frame < 0: the model's;
        max_tokens 0: no cap."""
        return self._json(self._lib.mmsim_workload_stats_json(
            self._h, file.encode(), _bytes(model), samples, seed, tokens_per_tile, tokens_per_frame, max_tokens))


def run(scenario: Optional[str] = None, sets: Sets = None, text: Optional[str] = None) -> Json:
    """Runs a scenario (a YAML file, None for the built-in default, or
    text=the YAML) with overrides; returns what `mmsim run --no-db --json`
    prints, as a dict.  A layout that does not fit is an answer (oom True),
    not an error."""
    with Scenario(scenario, sets, text) as s:
        return s.run()


def plan(scenario: Optional[str] = None, sets: Sets = None, gpus: int = 0, top: int = 8, iterations: int = 0,
         all: bool = False) -> Json:
    """Plans layouts as `mmsim plan [SCENARIO] --gpus G --top K --no-db --json` (see Scenario.plan)."""
    with Scenario(scenario, sets) as s:
        return s.plan(gpus, top, iterations, all)


def model(model: str, sets: Sets = None, seq: int = 0, images: int = 1) -> Json:
    """Reports a model file as `mmsim model MODEL [--seq N] [--images K] [--set ...] --json`."""
    with Scenario(None, sets) as s:
        return s.model(model, seq, images)


def collective(op: str, cluster: Optional[str] = None, nodes: int = 0, gpus: int = 0, algo: Optional[str] = None,
               min_bytes: float = 0, max_bytes: float = 0, factor: float = 0, network: Optional[str] = None,
               comm_ranks: int = 0, dtype: Optional[str] = None, redop: Optional[str] = None, iters: int = 0,
               sets: Sets = None) -> Json:
    """Times one collective over a size sweep as `mmsim collective OP
    --json` (see Scenario.collective); without cluster, on the built-in
    default scenario's cluster after sets."""
    with Scenario(None, sets) as s:
        return s.collective(op, cluster, nodes, gpus, algo, min_bytes, max_bytes, factor, network, comm_ranks,
                            dtype, redop, iters)


def workload_stats(file: str, model: Optional[str] = None, samples: int = 0, seed: int = 1,
                   tokens_per_tile: int = -1, tokens_per_frame: int = -1, max_tokens: int = 0) -> Json:
    """Summarises a workload file as `mmsim workload stats FILE --json` (see Scenario.workload_stats)."""
    with Scenario() as s:
        return s.workload_stats(file, model, samples, seed, tokens_per_tile, tokens_per_frame, max_tokens)
