"""unittest suite of the Python package mmsim: the same numbers as the CLI
(`mmsim run --no-db --json` and friends, through one JSON writer), errors
with file, line and key, and the library's version through ctypes.

Run from the repository: python3 -m unittest discover -s python/tests
(MMSIM_EXE: the mmsim binary, default build/mmsim; MMSIM_LIB: the library).
"""
import ctypes
import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import mmsim  # noqa: E402
from mmsim import _lib  # noqa: E402

EXE = os.environ.get("MMSIM_EXE", os.path.join(REPO, "build", "mmsim"))

# Three layouts of the default scenario (16 H100s), as --set overrides.
LAYOUTS = [
    {"parallel.llm": {"tp": 2, "pp": 2, "dp": 4}},
    {"parallel.llm": {"tp": 4, "pp": 1, "dp": 4}, "train.recompute": "full"},
    {"model": "models/llama-2-7b.json", "parallel.llm": {"tp": 1, "pp": 4, "dp": 4},
     "train.schedule": "interleaved", "parallel.llm.vpp": 2, "iterations": 1},
]


def cli_json(*args):
    out = subprocess.run([EXE] + list(args), cwd=REPO, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def cli_sets(sets):
    args = []
    for k, v in sets.items():
        args += ["--set", "%s=%s" % (k, mmsim.yaml_value(v))]
    return args


def without_wall(d):
    return {k: v for k, v in d.items() if not k.endswith("wall_s")}


class SameNumbersAsCli(unittest.TestCase):
    def test_default_scenario(self):
        py = mmsim.run()
        cli = cli_json("run", "--no-db", "--json")
        self.assertEqual(without_wall(py), without_wall(cli))
        self.assertGreater(py["iteration_time_s"], 0)

    def test_three_layouts(self):
        for sets in LAYOUTS:
            with self.subTest(sets=sets):
                py = mmsim.run(sets=sets)
                cli = cli_json("run", "--no-db", "--json", *cli_sets(sets))
                self.assertEqual(without_wall(py), without_wall(cli))
                self.assertFalse(py["oom"])

    def test_layouts_differ(self):
        # a test that can fail: the layouts are not scored alike
        times = {mmsim.run(sets=s)["iteration_time_s"] for s in LAYOUTS[:2]}
        self.assertEqual(len(times), 2)

    def test_getters_match_json(self):
        with mmsim.Scenario(sets=LAYOUTS[0]) as s:
            d = s.run()
            for k in ("iteration_time_s", "tokens_per_s", "mfu", "peak_memory_gib", "gpus", "events"):
                self.assertEqual(s.metric(k), d[k], k)
            # the JSON's per-stage numbers have 9 significant digits
            self.assertAlmostEqual(s.stage_metric(1, "busy_s") / d["stages"][1]["busy_s"], 1, delta=1e-8)
            self.assertTrue(math.isnan(s.metric("no_such_metric")))
            self.assertEqual(s.run(), d | {"wall_s": s.metric("wall_s")})  # deterministic rerun

    def test_text_scenario(self):
        with open(os.path.join(REPO, "tests", "data", "api-scenario.yaml")) as f:
            text = f.read()
        py = mmsim.run(text=text)
        cli = cli_json("run", "tests/data/api-scenario.yaml", "--no-db", "--json")
        self.assertEqual(without_wall(py) | {"scenario": ""}, without_wall(cli) | {"scenario": ""})

    def test_model(self):
        sets = {"parallel.llm": {"tp": 8, "pp": 1, "dp": 2}}
        py = mmsim.model("models/llama-2-7b.json", sets=sets, seq=2048)
        cli = cli_json("model", "models/llama-2-7b.json", "--seq", "2048", *cli_sets(sets), "--json")
        self.assertEqual(py, cli)
        self.assertEqual(py["params"], 6738415616)  # Llama-2-7B's published 6.74 B

    def test_plan(self):
        sets = {"model": "models/llama-2-7b.json", "iterations": 1}
        py = mmsim.plan(sets=sets, gpus=16, top=2)
        cli = cli_json("plan", "--gpus", "16", "--top", "2", "--no-db", "--jobs", "1", "--json", *cli_sets(sets))
        strip = lambda p: {k: v for k, v in p.items() if not k.endswith("wall_s") and k != "prescores_per_s"}
        self.assertEqual(strip(py), strip(cli))
        self.assertEqual(py["simulated"], 2)


    def test_collective(self):
        # everything but the clock and the command line ("args")
        strip = lambda d: {k: v for k, v in d.items() if k not in ("start_time", "end_time", "args")}
        py = mmsim.collective("allreduce", min_bytes=1024, max_bytes=1 << 30, factor=4)
        cli = cli_json("collective", "allreduce", "--cluster", "topologies/dgx-h100.yaml", "--nodes", "2",
                       "-b", "1K", "-e", "1G", "-f", "4", "--json")
        self.assertEqual(strip(py), strip(cli))
        self.assertEqual(len(py["results"]), 11)  # 1 KiB .. 1 GiB by 4
        # on the scenario's cluster after sets: 4 nodes instead of 2; every data type
        py4 = mmsim.collective("allgather", sets={"cluster.nodes": 4}, min_bytes=1 << 20, max_bytes=1 << 20,
                               network="analytic", dtype="all")
        cli4 = cli_json("collective", "allgather", "--cluster", "topologies/dgx-h100.yaml", "--nodes", "4",
                        "-b", "1M", "-e", "1M", "--network", "analytic", "-d", "all", "--json")
        self.assertEqual(strip(py4), strip(cli4))
        self.assertEqual(py4["config"]["ngpus"], 32)
        # a test that can fail: the sweep's bus bandwidth grows with size
        bus = [r["out_of_place"]["bus_bw"] for r in py["results"]]
        self.assertLess(bus[0], bus[-1])

    def test_workload_stats(self):
        py = mmsim.workload_stats("workloads/llava-ov-mix.yaml", model="models/llava-ov-qwen2.5-7b.yaml",
                                  samples=500, seed=3, max_tokens=4096)
        cli = cli_json("workload", "stats", "workloads/llava-ov-mix.yaml", "--model",
                       "models/llava-ov-qwen2.5-7b.yaml", "--samples", "500", "--seed", "3", "--max-tokens",
                       "4096", "--json")
        self.assertEqual(py, cli)
        self.assertEqual(py["samples"], 500)
        self.assertEqual(sum(py["by_modality"].values()), 500)
        tr = mmsim.workload_stats("workloads/internvl-1.2-sft.csv", tokens_per_tile=128)
        self.assertEqual(tr, cli_json("workload", "stats", "workloads/internvl-1.2-sft.csv", "--tokens-per-tile",
                                      "128", "--json"))
        self.assertEqual(tr["kind"], "trace")


class Errors(unittest.TestCase):
    def test_error_is_a_value_error(self):
        with self.assertRaises(ValueError) as cm:
            mmsim.run(sets={"parallel.llm.tp": 0})
        self.assertIsInstance(cm.exception, mmsim.Error)
        self.assertEqual(cm.exception.key, "parallel.llm.tp")

    def test_collective_errors_name_the_argument(self):
        for kw, key in (({"op": "allsum"}, "op"), ({"op": "allreduce", "gpus": 99}, "gpus"),
                        ({"op": "allreduce", "factor": 1.0}, "factor"),
                        ({"op": "allreduce", "network": "fast"}, "network"),
                        ({"op": "allreduce", "redop": "xor"}, "redop")):
            with self.subTest(kw=kw):
                with self.assertRaises(mmsim.Error) as cm:
                    mmsim.collective(**kw)
                self.assertEqual((cm.exception.key, cm.exception.status), (key, 2))

    def test_workload_errors(self):
        with self.assertRaises(mmsim.Error) as cm:
            mmsim.workload_stats("workloads/no-such-mix.yaml")
        self.assertEqual(cm.exception.status, 2)
        with self.assertRaises(mmsim.Error) as cm:
            mmsim.workload_stats("workloads/llava-ov-mix.yaml", samples=-1)
        self.assertEqual(cm.exception.key, "samples")

    def test_bad_override_names_key(self):
        with self.assertRaises(mmsim.Error) as cm:
            mmsim.run(sets={"train.recompute": "sometimes"})
        e = cm.exception
        self.assertEqual((e.file, e.line, e.key, e.status), ("--set", 0, "train.recompute", 2))

    def test_bad_text_names_line(self):
        with self.assertRaises(mmsim.Error) as cm:
            mmsim.run(text="model: models/llama-2-7b.json\ncluster: {topology: topologies/dgx-h100.yaml}\n"
                            "train:\n  precision: fp7\n")
        e = cm.exception
        self.assertEqual((e.file, e.line, e.key), ("<text>", 4, "train.precision"))
        self.assertIn("fp7", e.message)

    def test_layout_rule_names_key(self):
        with self.assertRaises(mmsim.Error) as cm:
            mmsim.run(sets={"parallel.llm.tp": 3})
        self.assertTrue(cm.exception.key.startswith("parallel.llm"))

    def test_missing_model_file(self):
        with self.assertRaises(mmsim.Error) as cm:
            mmsim.model("models/no-such-model.json")
        self.assertEqual(cm.exception.status, 2)

    def test_bad_sets_type(self):
        with self.assertRaises(TypeError):
            mmsim.run(sets={"seed": object()})

    def test_plan_from_text_is_the_plan_of_the_file(self):
        # a scenario opened from text is planned as it is: the same ranked
        # candidates as the file with the same text
        path = os.path.join(REPO, "tests", "data", "api-scenario.yaml")
        with open(path) as f:
            text = f.read()
        with mmsim.Scenario(text=text) as s:
            mine = s.plan(gpus=8, top=2, iterations=1)
        theirs = mmsim.plan(path, gpus=8, top=2, iterations=1)
        self.assertEqual(mine["candidates"], theirs["candidates"])
        self.assertEqual(mine["ranked"], theirs["ranked"])
        self.assertEqual(mine["ranked"][0]["status"], "simulated")


class Values(unittest.TestCase):
    def test_yaml_values(self):
        self.assertEqual(mmsim.yaml_value(True), "true")
        self.assertEqual(mmsim.yaml_value(None), "null")
        self.assertEqual(mmsim.yaml_value([2, 3, 3, 2]), "[2, 3, 3, 2]")
        self.assertEqual(mmsim.yaml_value({"tp": 4}), '{"tp": 4}')
        self.assertEqual(mmsim.yaml_value("full"), '"full"')
        self.assertEqual(mmsim.yaml_value(float("inf")), ".inf")

    def test_list_value(self):
        sets = {"model": "models/llama-2-7b.json", "parallel.llm.pp": 4, "parallel.llm.tp": 2,
                "parallel.llm.layers_per_stage": [7, 9, 9, 7], "iterations": 1}
        py = mmsim.run(sets=sets)
        cli = cli_json("run", "--no-db", "--json", *cli_sets(sets))
        self.assertEqual(without_wall(py), without_wall(cli))


class Typing(unittest.TestCase):
    def test_type_hints_check_strictly(self):
        # the public API's hints hold (mypy --strict over the package); Debian's python3-mypy
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        if subprocess.run([py, "-c", "import mypy"], capture_output=True).returncode != 0:
            self.skipTest("mypy not installed (python3-mypy)")
        r = subprocess.run([py, "-m", "mypy", "--strict", "--no-incremental", os.path.join(REPO, "python", "mmsim")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_public_functions_are_documented_and_typed(self):
        for name in ("run", "plan", "model", "collective", "workload_stats", "version", "yaml_value"):
            fn = getattr(mmsim, name)
            self.assertTrue(fn.__doc__ and fn.__doc__.strip(), name)
            self.assertIn("return", fn.__annotations__, name)


class DflopProfile(unittest.TestCase):
    """`mmsim profile --format dflop DIR` read back by the readers DFLOP's
    optimizer is written in (Python's csv and pickle modules; DFLOP reads
    the CSVs with pandas), and the pickle's samples against `mmsim workload
    stats` on the same draw (one source: mm_workload_draw)."""

    def test_tables_and_pickle(self):
        import csv
        import pickle
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([EXE, "profile", "--format", "dflop", d, "-q", "--set", "workload=workloads/llava-ov-mix.yaml",
                            "--set", "train.seq_len=16384", "--set", "seed=3"], cwd=REPO, check=True)
            with open(os.path.join(d, "thr_llavaov_qwen2.5_7b.csv"), newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(list(rows[0]), ["seq_len", "model_time", "fwd_times", "bwd_times", "num_layers", "tp_size"])
            self.assertEqual(sorted({int(r["tp_size"]) for r in rows}), [1, 2, 4])  # Qwen2.5-7B: 28 heads, not 8
            for r in rows:
                self.assertAlmostEqual(float(r["model_time"]), float(r["fwd_times"]) + float(r["bwd_times"]), places=9)
            with open(os.path.join(d, "mem_llavaov_siglip_6b.csv"), newline="") as f:
                mem = list(csv.DictReader(f))
            self.assertEqual(list(mem[0]), ["batch_size", "model_mem", "fwd_peak", "model_state_peak", "num_layers",
                                            "tp_size"])
            self.assertEqual(len(mem), 8)
            with open(os.path.join(d, "llavaov_siglip_qwen2.5.pkl"), "rb") as f:
                data = pickle.load(f)
        self.assertEqual(sorted(data), ["image_batch", "llm_input_seq"])
        ib, seq = data["image_batch"], data["llm_input_seq"]
        self.assertEqual((len(ib), len(seq)), (10000, 10000))
        self.assertTrue(all(isinstance(x, int) for x in ib + seq))
        st = cli_json("workload", "stats", "workloads/llava-ov-mix.yaml", "--model", "models/llava-ov-qwen2.5-7b.yaml",
                      "--samples", "10000", "--seed", "3", "--max-tokens", "16384", "--json")
        self.assertEqual(sum(ib), st["encoder_inputs_total"])
        self.assertEqual(sum(seq), st["llm_tokens_total"])
        self.assertEqual(max(seq), st["llm_tokens"]["max"])


class SharedLibrary(unittest.TestCase):
    def test_mm_version_through_ctypes(self):
        lib = ctypes.CDLL(_lib.find())
        lib.mm_version.restype = ctypes.c_char_p
        v = lib.mm_version().decode()
        out = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout
        self.assertEqual(out.strip(), "mmsim " + v)
        self.assertEqual(mmsim.version(), v)

    def test_only_the_api_is_exported(self):
        lib = ctypes.CDLL(_lib.find())
        self.assertTrue(hasattr(lib, "mmsim_open"))
        self.assertFalse(hasattr(lib, "mm_sim_prepare"))  # internal: hidden


if __name__ == "__main__":
    unittest.main()
