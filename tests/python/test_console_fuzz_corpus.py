"""The console-uploads fuzz target (fuzz/console_uploads_fuzzer.py) replayed over its seed corpus
(tests/data/fuzz/console: well-formed and hostile multipart bodies, archives and names, and every
input the fuzzer once failed on), as the C++ fuzz targets are replayed by ctest: each seed must be
accepted or refused with the console's UploadError, and leave nothing outside its folder."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_seed_is_accepted_or_refused_cleanly():
    corpus = ROOT / "tests" / "data" / "fuzz" / "console"
    assert len(list(corpus.iterdir())) >= 9
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "console_uploads_fuzzer.py"),
                           "--replay", str(corpus)], capture_output=True, text=True, timeout=120,
                          env={**os.environ})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"replayed {len(list(corpus.iterdir()))} seeds" in proc.stdout
