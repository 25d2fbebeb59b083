"""fr_analyze.record() without a job: what it refuses, and what importing the package costs.

Every call here runs in a fresh interpreter: a record() that got past its checks would install
its hooks and signal handler in the process that ran it, and whether torch was imported is a
fact about a whole interpreter. The real jobs that record() makes dump are in
tests/torch/test_record.py.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest


def run_python(code, tmp_path):
    """Runs `code` in a new interpreter with this one's path to the package; returns its stdout
    parsed as JSON (the last line)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_package_and_naming_record_does_not_import_torch(tmp_path):
    found = run_python("""
        import json, sys
        import fr_analyze
        record = fr_analyze.record
        print(json.dumps({
            "torch": sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")),
            "callable": callable(record),
            "exported": "record" in fr_analyze.__all__ and "record" in dir(fr_analyze),
        }))
    """, tmp_path)
    assert found == {"torch": [], "callable": True, "exported": True}


# (arguments, the exception, words its message must hold)
BAD_CALLS = [
    ("folder=3", "TypeError", "folder"),
    ("folder=['dumps']", "TypeError", "folder"),
    ("folder=''", "ValueError", "folder"),
    ("folder='a_file'", "ValueError", "folder"),
    ("'dumps', buffer_size=0", "ValueError", "buffer_size"),
    ("'dumps', buffer_size=10**8", "ValueError", "buffer_size"),
    ("'dumps', buffer_size='2000'", "TypeError", "buffer_size"),
    ("'dumps', buffer_size=True", "TypeError", "buffer_size"),
    ("'dumps', at_exit=1", "TypeError", "at_exit"),
    ("'dumps', sigterm=None", "TypeError", "sigterm"),
]


@pytest.mark.parametrize("arguments,kind,words", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_record_refuses_bad_arguments_before_touching_anything(tmp_path, arguments, kind, words):
    (tmp_path / "a_file").write_text("not a folder")
    found = run_python(f"""
        import json, os, sys
        import fr_analyze
        try:
            fr_analyze.record({arguments})
            error = None
        except Exception as e:
            error = [type(e).__name__, str(e)]
        print(json.dumps({{
            "error": error,
            "torch": "torch" in sys.modules,
            "hook_untouched": sys.excepthook is sys.__excepthook__,
            "variables": sorted(k for k in os.environ if k.startswith("TORCH_")),
            "made_dumps": os.path.exists("dumps"),
        }}))
    """, tmp_path)
    assert found["error"] is not None, f"record({arguments}) was accepted"
    assert found["error"][0] == kind and words in found["error"][1], found["error"]
    # Refused before torch was imported, and nothing of the process was changed.
    assert not found["torch"] and found["hook_untouched"] and not found["made_dumps"]
    assert found["variables"] == sorted(k for k in os.environ if k.startswith("TORCH_"))


def test_record_without_torch_names_what_to_install(tmp_path):
    # sys.modules[name] = None is how Python itself spells "cannot be imported": the interpreter
    # behaves as one without torch installed.
    found = run_python("""
        import json, sys
        sys.modules["torch"] = None
        import fr_analyze
        try:
            fr_analyze.record("dumps")
            error = None
        except fr_analyze.MissingDependencyError as e:
            error = str(e)
        print(json.dumps({"error": error, "is_import_error": isinstance(
            fr_analyze.MissingDependencyError("x"), ImportError)}))
    """, tmp_path)
    assert found["error"] is not None and "torch" in found["error"], found
    assert "pip install torch" in found["error"], found
    assert found["is_import_error"]
