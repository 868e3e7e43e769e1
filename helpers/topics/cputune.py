"""CPU tuning (notebook 10, and notebook 08's data-format check): run workloads in fresh
processes with chosen threads, oneDNN, OpenMP and allocator settings, and read what the CPU and
the TensorFlow wheel support.

Thread pools, oneDNN and ``LD_PRELOAD`` are fixed when TensorFlow starts, so every setting runs
in its own child (``helpers.procs``): ``python -m helpers.topics.cputune child ...`` times the named
workloads and emits one row each, or the error a workload raised.
"""

from __future__ import annotations

import argparse
import ctypes.util
import glob
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import procs, timing
from helpers.checks import whole_number
from helpers.comparison import Comparison
from helpers.exercises import Feedback, correct, not_yet
from helpers.timing import ProgressFn, Timing

#: Allocators that can replace glibc malloc through LD_PRELOAD: file names to look for.
ALLOCATORS: dict[str, tuple[str, ...]] = {
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4", "libtcmalloc_minimal.so", "libtcmalloc.so"),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc.so"),
}
INSTALL_HINTS = {
    "tcmalloc": "Debian/Ubuntu: sudo apt-get install libtcmalloc-minimal4 | conda: conda install -c conda-forge gperftools",
    "jemalloc": "Debian/Ubuntu: sudo apt-get install libjemalloc2 | conda: conda install -c conda-forge jemalloc",
}
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


@dataclass(frozen=True)
class Setting:
    """How one child process starts: TensorFlow's thread pools (0 = TF's default, all cores),
    oneDNN (None = the build's default), ``OMP_NUM_THREADS`` and an allocator to preload."""

    intra: int = 0
    inter: int = 0
    onednn: bool | None = None
    omp_threads: int | None = None
    allocator: str | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("intra", "inter"):
            value = getattr(self, name)
            whole_number(name, value, minimum=0, hint="0 = TensorFlow's default")
        if self.omp_threads is not None:
            whole_number("omp_threads", self.omp_threads)
        if self.allocator is not None and not Path(self.allocator).is_file():
            raise ValueError(f"allocator must be the path of a shared library, {self.allocator!r} is not a file")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.extra_env.items()):
            raise ValueError(f"extra_env must map names to strings, got {dict(self.extra_env)!r}")

    def env(self) -> dict[str, str]:
        """The environment variables this setting adds to the child's."""
        env = {"TF_CPP_MIN_LOG_LEVEL": "2"}
        if self.onednn is not None:
            env["TF_ENABLE_ONEDNN_OPTS"] = "1" if self.onednn else "0"
        if self.omp_threads is not None:
            env["OMP_NUM_THREADS"] = str(self.omp_threads)
        if self.allocator is not None:
            env["LD_PRELOAD"] = self.allocator
        env.update(self.extra_env)
        return env

    def describe(self) -> str:
        """A short label, e.g. ``intra 1, inter 1, oneDNN off``."""
        parts = [f"intra {self.intra or 'default'}", f"inter {self.inter or 'default'}"]
        if self.onednn is not None:
            parts.append(f"oneDNN {'on' if self.onednn else 'off'}")
        if self.omp_threads is not None:
            parts.append(f"OMP {self.omp_threads}")
        if self.allocator is not None:
            parts.append(Path(self.allocator).name.split(".so")[0].removeprefix("lib"))
        parts.extend(f"{k}={v}" for k, v in self.extra_env.items())
        return ", ".join(parts)


# --- workloads (built inside the child) ---------------------------------------------------

def _matmul(small: bool) -> Callable[[], Any]:
    import tensorflow as tf

    n = 512 if small else 1024
    a = tf.random.stateless_normal([n, n], seed=(1, 2))
    b = tf.random.stateless_normal([n, n], seed=(3, 4))
    fn = tf.function(lambda: tf.linalg.matmul(a, b))
    return fn


def _conv_step(small: bool) -> Callable[[], Any]:
    """One SGD step of a small conv net (two 3x3 convs, pooling, a dense layer) on 32x32 images."""
    import tensorflow as tf

    batch = 16 if small else 32
    x = tf.random.stateless_normal([batch, 32, 32, 3], seed=(1, 2))
    y = tf.random.stateless_uniform([batch], seed=(3, 4), maxval=10, dtype=tf.int32)
    init = tf.keras.initializers.GlorotUniform(seed=0)
    w = [tf.Variable(init(s)) for s in ([3, 3, 3, 32], [3, 3, 32, 64], [64, 10])]

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.nn.conv2d(x, w[0], 1, "SAME"))
            h = tf.nn.max_pool2d(h, 2, 2, "VALID")
            h = tf.nn.relu(tf.nn.conv2d(h, w[1], 1, "SAME"))
            logits = tf.reduce_mean(h, axis=[1, 2]) @ w[2]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        for v, g in zip(w, tape.gradient(loss, w), strict=True):
            v.assign_sub(0.01 * g)
        return loss

    return step


def _jpeg_pipeline(small: bool) -> Callable[[], Any]:
    """One pass of a tf.data pipeline over in-memory JPEGs: decode, random crop, flip, batch.
    Allocation-heavy, like a real input pipeline: where a malloc replacement can show."""
    import tensorflow as tf

    n = 128 if small else 512
    pixels = tf.cast(tf.random.stateless_uniform([n, 64, 64, 3], seed=(5, 6), maxval=256, dtype=tf.int32), tf.uint8)
    jpegs = tf.stack([tf.io.encode_jpeg(p) for p in pixels])

    def augment(jpeg: Any) -> Any:
        image = tf.io.decode_jpeg(jpeg, channels=3)
        image = tf.image.random_crop(image, [56, 56, 3])
        return tf.image.random_flip_left_right(image)

    dataset = (tf.data.Dataset.from_tensor_slices(jpegs).map(augment, num_parallel_calls=tf.data.AUTOTUNE)
               .batch(64).prefetch(tf.data.AUTOTUNE))

    def one_pass() -> Any:
        last = None
        for batch in dataset:
            last = batch
        return last

    return one_pass


def _conv2d(data_format: str) -> Callable[[bool], Callable[[], Any]]:
    def build(small: bool) -> Callable[[], Any]:
        import tensorflow as tf

        n, hw, c = (8, 28, 32) if small else (16, 56, 64)
        x = tf.random.stateless_normal([n, hw, hw, c], seed=(1, 2))
        if data_format == "NCHW":
            x = tf.transpose(x, [0, 3, 1, 2])
        kernel = tf.random.stateless_normal([3, 3, c, c], seed=(3, 4))
        return tf.function(lambda: tf.nn.conv2d(x, kernel, 1, "SAME", data_format=data_format))

    return build


#: Workload name -> builder(small) -> a callable that runs one step.
WORKLOADS: dict[str, Callable[[bool], Callable[[], Any]]] = {
    "matmul": _matmul,
    "conv_step": _conv_step,
    "jpeg_pipeline": _jpeg_pipeline,
    "conv2d_NHWC": _conv2d("NHWC"),
    "conv2d_NCHW": _conv2d("NCHW"),
}


def _error_text(exc: BaseException) -> str:
    """The first line of an error, without TensorFlow's ``{{function_node ...}}`` prefix."""
    text = getattr(exc, "message", None) or str(exc)
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _mapped_libraries() -> str:
    try:
        return Path("/proc/self/maps").read_text()
    except OSError:
        return ""


def _loaded_allocator(maps: str) -> str:
    """Which malloc replacement a process has mapped, from its /proc/<pid>/maps text."""
    if not maps:
        return "unknown"
    for name in ALLOCATORS:
        if name in maps:
            return name
    return "default"


def _openmp_runtime(maps: str) -> str:
    """Which OpenMP runtime a process has mapped (GNU libgomp, Intel libiomp), or "none"."""
    if not maps:
        return "unknown"
    found = [name for name, marker in (("libgomp", "libgomp"), ("libiomp", "libiomp")) if marker in maps]
    return ", ".join(found) or "none"


def child_main(argv: Sequence[str]) -> None:
    """The child's side: set the thread pools, then time each workload and emit its row."""
    parser = argparse.ArgumentParser(prog="python -m helpers.topics.cputune child")
    parser.add_argument("--workloads", required=True)
    parser.add_argument("--intra", type=int, default=0)
    parser.add_argument("--inter", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args(argv)
    import tensorflow as tf

    from helpers import env

    tf.config.threading.set_intra_op_parallelism_threads(args.intra)  # before any op runs
    tf.config.threading.set_inter_op_parallelism_threads(args.inter)
    context = {"onednn": env.onednn_enabled(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "")}
    for name in args.workloads.split(","):
        try:
            run = WORKLOADS[name](args.small)
            t = timing.measure(run, warmup=2, repeats=args.repeats, label=name)
        except Exception as exc:  # a workload this build cannot run is a result, not a crash
            procs.emit({"workload": name, "error": _error_text(exc), **context, **_libraries()})
            continue
        procs.emit({"workload": name, "seconds": list(t.seconds), **context, **_libraries()})


def _libraries() -> dict[str, str]:
    maps = _mapped_libraries()  # read after the workload ran: everything it loaded is mapped
    return {"allocator": _loaded_allocator(maps), "openmp": _openmp_runtime(maps)}


# --- the parent's side --------------------------------------------------------------------

def _check_workloads(workloads: Sequence[str]) -> list[str]:
    if isinstance(workloads, str):
        workloads = [workloads]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown or not workloads:
        raise ValueError(f"workloads must be among {list(WORKLOADS)}, got {list(workloads)!r}")
    return list(workloads)


def run_setting(setting: Setting, workloads: Sequence[str], repeats: int = 5, small: bool = False,
                timeout: float = 300.0) -> list[dict[str, Any]]:
    """Time ``workloads`` in one fresh process started with ``setting``: one row per workload,
    with ``seconds`` (one per repeat) or the ``error`` it raised."""
    workloads = _check_workloads(workloads)
    whole_number("repeats", repeats)
    args = procs.python_module("helpers.topics.cputune", "child", "--workloads", ",".join(workloads),
                               "--intra", str(setting.intra), "--inter", str(setting.inter),
                               "--repeats", str(repeats), *(["--small"] if small else []))
    return procs.run_rows(args, env=setting.env(), timeout=timeout, cwd=str(Path(__file__).resolve().parents[2]))


def sweep(settings: Mapping[str, Setting], workloads: Sequence[str], repeats: int = 5, rounds: int = 1,
          small: bool = False, timeout: float = 300.0, on_progress: ProgressFn | None = None) -> Any:
    """Every setting on every workload, each setting in its own process, ``rounds`` times in
    rotation (so slow drift hits all settings alike). A table: one row per setting and workload,
    with median and quartiles in ms, or the error."""
    import pandas as pd

    if not settings:
        raise ValueError("settings must name at least one Setting")
    whole_number("rounds", rounds)
    workloads = _check_workloads(workloads)
    labels = list(settings)
    samples: dict[tuple[str, str], list[float]] = {}
    info: dict[tuple[str, str], dict[str, Any]] = {}
    total, done = rounds * len(labels), 0
    for r in range(rounds):
        for label in timing.rotated(labels, r):
            for row in run_setting(settings[label], workloads, repeats, small, timeout):
                key = (label, row["workload"])
                samples.setdefault(key, []).extend(row.get("seconds", []))
                info[key] = row
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    rows = []
    for (label, workload), row in info.items():
        seconds = samples[(label, workload)]
        t = Timing(label, tuple(seconds)) if seconds else None
        rows.append({
            "setting": label, "workload": workload,
            "median_ms": t.median * 1e3 if t else float("nan"),
            "q1_ms": t.q1 * 1e3 if t else float("nan"), "q3_ms": t.q3 * 1e3 if t else float("nan"),
            "repeats": len(seconds), "onednn": row.get("onednn"), "allocator": row.get("allocator"),
            "openmp": row.get("openmp"),
            "error": row.get("error", ""),
        })
    table = pd.DataFrame(rows)
    table.attrs["samples"] = samples
    return table


def comparison(settings: Mapping[str, Setting], workload: str, repeats: int = 5, rounds: int = 2,
               small: bool = False, timeout: float = 300.0, on_progress: ProgressFn | None = None) -> Any:
    """One workload under several settings as ``timing.compare``'s table (first setting is the
    baseline), so ``widgets.show`` and ``timing.verdict`` work on it."""
    table = sweep(settings, [workload], repeats, rounds, small, timeout, on_progress)
    failed = table[table["error"] != ""]
    if len(failed):
        raise RuntimeError("; ".join(f"{r.setting}: {r.error}" for r in failed.itertuples()))
    samples = table.attrs["samples"]
    timings = {label: Timing(label, tuple(samples[(label, workload)])) for label in settings}
    return timing.comparison_table(timings, next(iter(settings)))


def thread_settings(max_threads: int | None = None, inter: int = 1) -> dict[str, Setting]:
    """``intra`` = 1, 2, ... up to ``max_threads`` (default: this machine's cores), each with
    ``inter`` inter-op threads."""
    cores = whole_number("max_threads", (os.cpu_count() or 1) if max_threads is None else max_threads)
    return {f"intra {n}, inter {inter}": Setting(intra=n, inter=inter) for n in range(1, cores + 1)}


SWEEPS = ("threads", "inter-op threads", "oneDNN", "OpenMP and KMP variables", "allocators")


def sweep_settings(kind: str) -> dict[str, Setting]:
    """The settings one named sweep compares (``SWEEPS``); allocators only where installed."""
    cores = os.cpu_count() or 1
    if kind == "threads":
        return thread_settings(cores)
    if kind == "inter-op threads":
        return {f"intra {cores}, inter {n}": Setting(intra=cores, inter=n) for n in sorted({1, 2, cores})}
    if kind == "oneDNN":
        return {"oneDNN on": Setting(onednn=True), "oneDNN off": Setting(onednn=False)}
    if kind == "OpenMP and KMP variables":
        return {"no OMP/KMP variables": Setting(),
                "OMP_NUM_THREADS=1": Setting(omp_threads=1),
                f"OMP_NUM_THREADS={cores}, KMP_BLOCKTIME=0, KMP_AFFINITY=granularity=fine,compact,1,0":
                    Setting(omp_threads=cores, extra_env={"KMP_BLOCKTIME": "0",
                                                         "KMP_AFFINITY": "granularity=fine,compact,1,0"})}
    if kind == "allocators":
        return {"glibc malloc": Setting(), **{name: Setting(allocator=path) for name, path in find_allocators().items()}}
    raise ValueError(f"kind must be one of {SWEEPS}, got {kind!r}")


def run_sweep(kind: str = "threads", workload: str = "matmul", repeats: int = 5, rounds: int = 1,
              small: bool = False, on_progress: ProgressFn | None = None) -> Any:
    """A named sweep (``SWEEPS``) on one workload, or on all when ``workload`` is ``"all"``: the
    experiment behind notebook 10's widget."""
    workloads = list(WORKLOADS)[:3] if workload == "all" else [workload]
    return sweep(sweep_settings(kind), workloads, repeats=repeats, rounds=rounds, small=small, on_progress=on_progress)


def check_fastest(table: Any, workload: str, choice: str) -> Feedback:
    """Exercise check: is ``choice`` the fastest setting for ``workload`` in a sweep ``table``, or
    within the run-to-run spread of it?"""
    if not hasattr(table, "columns") or not {"setting", "workload", "median_ms"} <= set(table.columns):
        return not_yet("pass the table a sweep returned")
    part = table[(table["workload"] == workload) & (table["error"] == "")]
    if part.empty:
        return not_yet(f"the table has no result for workload {workload!r}; it has {sorted(set(table['workload']))}")
    if choice not in set(part["setting"]):
        return not_yet(f"{choice!r} is not one of the settings: {list(part['setting'])}")
    best = part.loc[part["median_ms"].idxmin()]
    mine = part[part["setting"] == choice].iloc[0]
    if mine.setting == best.setting:
        return correct(f"{choice} was the fastest on {workload} ({best.median_ms:.1f} ms)")
    if mine.q1_ms <= best.q3_ms:
        return correct(f"{choice} overlaps the fastest ({best.setting}) within their spread: a tie on this machine")
    return not_yet(f"{best.setting} ran faster ({best.median_ms:.1f} ms against {mine.median_ms:.1f} ms)")


def sweep_figure(table: Any, title: str = "") -> Any:
    """Median ms with quartile bars for each setting, one panel per workload; errors marked."""
    from matplotlib.figure import Figure

    workloads = list(dict.fromkeys(table["workload"]))
    fig = Figure(figsize=(4.6 * len(workloads), 0.45 * table["setting"].nunique() + 1.8), layout="constrained")
    for ax, workload in zip(fig.subplots(1, len(workloads), squeeze=False, sharex=True)[0], workloads, strict=True):
        part = table[table["workload"] == workload]
        ok = part["error"] == ""
        y = range(len(part))
        medians = part["median_ms"].where(ok, 0)
        xerr = [(medians - part["q1_ms"]).where(ok, 0), (part["q3_ms"] - medians).where(ok, 0)]
        ax.barh(list(y), medians, xerr=xerr, color=["tab:blue" if o else "lightgray" for o in ok], capsize=3)
        for i, o in enumerate(ok):
            if not o:
                ax.text(0, i, "  fails (see its error)", va="center", fontsize=9, color="tab:red")
        ax.set_yticks(list(y), part["setting"])
        ax.invert_yaxis()
        ax.set_xlabel("ms per step (median, IQR)")
        ax.set_title(workload)
    if title:
        fig.suptitle(title)
    return fig


def sweep_summary(table: Any) -> str:
    """Per workload: the fastest setting and its lead over the slowest."""
    parts = []
    for workload, part in table.groupby("workload", sort=False):
        ok = part[part["error"] == ""]
        failed = len(part) - len(ok)
        if ok.empty:
            parts.append(f"{workload}: every setting failed")
            continue
        best, worst = ok.loc[ok["median_ms"].idxmin()], ok.loc[ok["median_ms"].idxmax()]
        text = f"{workload}: fastest {best.setting} ({best.median_ms:.1f} ms)"
        if len(ok) > 1:
            text += f", {worst.median_ms / best.median_ms:.2f}x ahead of {worst.setting}"
        if failed:
            text += f"; {failed} setting(s) failed"
        parts.append(text)
    return " | ".join(parts)


# --- CPU features, the wheel, allocators --------------------------------------------------

def find_allocators(dirs: Sequence[str] = LIB_DIRS) -> dict[str, str]:
    """Installed malloc replacements: name -> library path, for those found."""
    found = {}
    prefix = os.environ.get("CONDA_PREFIX")
    search = [*dirs, *([os.path.join(prefix, "lib")] if prefix else [])]
    for name, files in ALLOCATORS.items():
        for directory in search:
            hits = [p for f in files for p in sorted(glob.glob(os.path.join(directory, f)))]
            if hits:
                found[name] = hits[0]
                break
        else:
            lib = ctypes.util.find_library(name.replace("tcmalloc", "tcmalloc_minimal"))
            if lib and os.path.isabs(lib):
                found[name] = lib
    return found


def wheel_missing_instructions(stderr: str) -> list[str]:
    """Parse TensorFlow's start-up line "To enable the following instructions: AVX2 FMA, in
    other operations, rebuild TensorFlow ..." into the instruction sets the wheel leaves unused."""
    match = re.search(r"To enable the following instructions: (.*?), in other operations", stderr)
    return match.group(1).split() if match else []


def wheel_report(timeout: float = 120.0) -> list[str]:
    """Start TensorFlow in a fresh process with its info log on and return the instruction sets
    it says it was not built to use outside its performance-critical (oneDNN) kernels."""
    result = procs.run([sys.executable, "-c", "import tensorflow"], env={"TF_CPP_MIN_LOG_LEVEL": "0"}, timeout=timeout)
    return wheel_missing_instructions(result.stderr)


def features_table(cpu_flags: Mapping[str, bool], missing: Sequence[str]) -> Any:
    """One row per instruction set: does this CPU have it (``cpu_flags``, as in
    ``env.cpu_info()["features"]``), and does the wheel use it everywhere or only in the kernels
    that pick their code at run time (oneDNN)."""
    import pandas as pd

    from helpers.env import CPU_FEATURES

    unused = {m.lower() for m in missing}
    rows = []
    for feature in CPU_FEATURES:
        has = bool(cpu_flags.get(feature, False))
        if not has:
            used = "-"
        elif feature in unused:
            used = "only in oneDNN kernels"
        else:
            used = "everywhere"
        rows.append({"instruction set": feature.upper(), "this CPU": "yes" if has else "no", "the wheel uses it": used})
    return pd.DataFrame(rows).set_index("instruction set")


def _threads_variants(workload: str = "matmul", small: bool = False, repeats: int = 5, rounds: int = 2) -> Any:
    cores = os.cpu_count() or 1
    return comparison({"1 thread": Setting(intra=1, inter=1), "all cores": Setting(intra=cores, inter=cores)},
                      workload, repeats, rounds, small)


def _onednn_variants(workload: str = "conv_step", small: bool = False, repeats: int = 5, rounds: int = 2) -> Any:
    return comparison({"oneDNN off": Setting(onednn=False), "oneDNN on": Setting(onednn=True)},
                      workload, repeats, rounds, small)


BENCHMARKS = [
    Comparison(id="cpu.threads_1_vs_all", title="1024x1024 matmul, fresh processes: 1 thread vs every core",
               measure=_threads_variants, baseline="1 thread", variant="all cores",
               quick={"small": True, "repeats": 5, "rounds": 1}, full={"repeats": 10, "rounds": 3},
               bound=lambda: float(os.cpu_count() or 1)),
    Comparison(id="cpu.onednn_off_vs_on", title="small conv-net training step, fresh processes: oneDNN off vs on",
               measure=_onednn_variants, baseline="oneDNN off", variant="oneDNN on",
               quick={"small": True, "repeats": 5, "rounds": 1}, full={"repeats": 10, "rounds": 3}),
]


if __name__ == "__main__":
    if sys.argv[1:2] != ["child"]:
        sys.exit("usage: python -m helpers.topics.cputune child --workloads matmul,conv_step [--intra N] [--inter N]")
    child_main(sys.argv[2:])
