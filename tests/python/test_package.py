"""fr_analyze from Python, against real files the CLI wrote."""

import ast
import pickle
from pathlib import Path

import pytest

import fr_analyze


def test_load_returns_per_rank_dumps_with_resolved_entries(example_job):
    trace = fr_analyze.load(example_job)
    assert [d.rank for d in trace.ranks] == list(range(8))
    assert trace.missing_ranks == [] and trace.rejected == []
    dump = trace.rank(3)
    with open(example_job / "nccl_trace_rank_3", "rb") as f:
        raw = pickle.load(f)
    entries = dump.entry_dicts()
    assert len(entries) == len(raw["entries"])
    for got, want in zip(entries, raw["entries"]):
        assert got["collective_seq_id"] == want["collective_seq_id"]
        assert got["profiling_name"] == want["profiling_name"]
        assert got["input_sizes"] == want["input_sizes"]
        assert got["state"] == want["state"]
        assert [f[0] for f in got["frames"]] == [f["name"] for f in want["frames"]]
    assert "loaded 8 of 8 ranks" in str(trace)


def test_loads_reads_bytes_and_reports_bad_ones(example_job):
    good = (example_job / "nccl_trace_rank_0").read_bytes()
    trace = fr_analyze.loads({0: good, 1: b"\x80\x02}q\x00"})
    assert [d.rank for d in trace.ranks] == [0]
    assert [r.rank for r in trace.rejected] == [1]
    assert "byte" in trace.rejected[0].error


def test_missing_path_raises_a_typed_error(tmp_path):
    with pytest.raises(fr_analyze.DumpNotFoundError):
        fr_analyze.load(tmp_path / "nope")
    with pytest.raises(fr_analyze.Error):
        fr_analyze.load(tmp_path, rank_pattern="(unclosed")


def test_progress_callback_sees_every_file(example_job):
    seen = []
    fr_analyze.load(example_job, progress=lambda done, total: seen.append((done, total)))
    assert sorted(seen)[-1] == (8, 8) and len(seen) == 8


def _package_imports(package_dir):
    """Module name -> the fr_analyze modules it imports: at the top, inside functions and under
    TYPE_CHECKING alike, since each is a reference from one module to another."""
    modules = {path.stem: path for path in package_dir.glob("*.py")}
    # `from fr_analyze import x` names a submodule (_core and _report_pb2 are built, not here)
    # unless x is one of the package's own names.
    package_names = set()
    for node in ast.parse(modules["__init__"].read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            package_names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            package_names.add(node.name)
        elif isinstance(node, ast.Assign):
            package_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "fr_analyze":
                        targets.add(parts[1] if len(parts) > 1 else "__init__")
            elif isinstance(node, ast.ImportFrom):
                parts = node.module.split(".") if node.module else []
                if node.level == 0 and parts[:1] != ["fr_analyze"]:
                    continue
                if node.level:  # relative: `from . import x`, `from ._trace import y`
                    parts = ["fr_analyze"] + parts
                if len(parts) > 1:
                    targets.add(parts[1])
                else:  # `from fr_analyze import x`: a submodule, or a name of the package
                    for alias in node.names:
                        is_module = alias.name in modules or alias.name not in package_names
                        targets.add(alias.name if is_module else "__init__")
        targets.discard(name)
        graph[name] = sorted(targets)
    return graph


def _find_cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}  # module -> "open" while on the path, "done" once all it reaches is explored

    def visit(module, path):
        state[module] = "open"
        for target in graph.get(module, []):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target, path + [target])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle:
                return cycle
    return None


def test_package_modules_import_each_other_in_one_direction():
    package_dir = Path(__file__).resolve().parents[2] / "python" / "fr_analyze"
    graph = _package_imports(package_dir)
    assert "_trace" in graph and "__init__" in graph
    assert _find_cycle({"a": ["b"], "b": ["a"]}) == ["a", "b", "a"]  # the check can fail
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
