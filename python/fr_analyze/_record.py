"""fr_analyze.record(): make this rank leave a flight-recorder dump however the job ends.

    import fr_analyze
    fr_analyze.record("/checkpoints/job42/fr")   # first thing in the training script

PyTorch writes a dump by itself only when ProcessGroupNCCL's watchdog sees a timeout, and only
when the environment asked for it before the job started; a Gloo job, a rank that raises, and a
job stopped by its scheduler (SIGTERM) leave nothing. record() closes those gaps from inside the
script:

- it sets the variables PyTorch reads, where they are unset and not yet read, under the names
  the installed release reads (TORCH_FR_* from 2.8, the older TORCH_NCCL_* before): the ring
  buffer's size (TORCH_FR_BUFFER_SIZE / TORCH_NCCL_TRACE_BUFFER_SIZE), NCCL's dump on timeout
  (TORCH_NCCL_DUMP_ON_TIMEOUT) and where the watchdog writes (TORCH_FR_DUMP_TEMP_FILE /
  TORCH_NCCL_DEBUG_INFO_TEMP_FILE = FOLDER/nccl_trace_rank_, to which PyTorch appends the rank);
- it writes FOLDER/nccl_trace_rank_<rank> itself, through PyTorch's own dump call, on an uncaught
  exception (sys.excepthook, threading.excepthook), on SIGTERM, and with at_exit=True when the
  interpreter exits.

docs/dumps.md says which PyTorch release reads which variable. torch is imported by record(),
never by `import fr_analyze`.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional

from fr_analyze import _args
from fr_analyze.errors import require

# The file name every PyTorch release gives a rank's dump, and the one fr-analyze looks for first.
DUMP_PREFIX = "nccl_trace_rank_"
FOLDER_VARIABLE = "FR_ANALYZE_DUMPS"
DEFAULT_FOLDER = "fr-dumps"
DEFAULT_BUFFER_SIZE = 2000
# Each setting under its names across releases, newest first (docs/dumps.md has the sources).
BUFFER_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FILE_VARIABLES = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
TIMEOUT_VARIABLES = ("TORCH_NCCL_DUMP_ON_TIMEOUT",)
# 2.8 is the first release whose recorder reads the TORCH_FR_ names (first) and the old ones
# (after, with a deprecation warning when only an old one is set).
FIRST_FR_NAMES = (2, 8)
# The first release whose recorder keeps entries with no buffer size set (2000 of them):
# FlightRecorder.hpp's default was 0 before it. ProcessGroupNCCL reads the old name alone for the
# size it believes the recorder has (it dumps only when that is above 0), so 2.8-2.10 are given
# both names; from 2.11 both defaults are 2000 and the new name alone is enough.
FIRST_RECORDING_BY_DEFAULT = (2, 11)
# How long a SIGTERM waits for a dump already being written before the process ends anyway: the
# first dump with stacks costs seconds (PyTorch loads its symbolizer), and torchrun SIGKILLs a
# worker 30 s after its SIGTERM.
SIGTERM_DUMP_WAIT_S = 25.0

_lock = threading.Lock()
_current: Optional["Recording"] = None


def _say(line: str) -> None:
    """One line on stderr, whatever state the interpreter is in."""
    try:
        print(f"fr_analyze.record: {line}", file=sys.stderr, flush=True)
    except Exception:  # stderr closed or gone at shutdown: nothing else to tell
        pass


def _default_folder() -> str:
    return os.environ.get(FOLDER_VARIABLE) or DEFAULT_FOLDER


def _torch_version(torch: Any) -> tuple:
    try:
        return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    except (AttributeError, ValueError):
        return (0, 0)


class Recording:
    """What record() installed. `folder` is where dumps go, `path` this rank's dump (the rank as
    known now: torch.distributed's once initialized, else RANK), `variables` what record() set in
    the environment, `handlers` what it installed. dump(why) writes the dump now; uninstall()
    takes the handlers away (the variables stay: PyTorch may have read them)."""

    def __init__(self, folder: str, at_exit: bool, torch: Any):
        self.folder = folder
        self.at_exit = at_exit
        self.variables: Dict[str, str] = {}
        self.handlers: List[str] = []
        self._torch = torch
        self._backend: Optional[str] = None
        self._dump_lock = threading.Lock()
        # Set once a dump was written on the way out (an uncaught exception, SIGTERM, exit): the
        # next of those paths only ends the process.
        self._final_done = False
        self._active = True
        # Which thread is writing a dump: a SIGTERM handler that runs in that same thread (Python
        # runs it between any two bytecodes, the dump's own included) must not wait for itself.
        self._dumping_thread: Optional[int] = None
        self._sigterm_pending = False
        # Set by the excepthook: the interpreter is ending with this exception, and the dump is
        # written at exit, after the hooks have printed the traceback.
        self._exit_why: Optional[str] = None
        self._previous_excepthook: Optional[Callable] = None
        self._previous_thread_hook: Optional[Callable] = None
        self._previous_sigterm: Any = None
        self._previous_wakeup_fd = -1
        self._wakeup_fds: Optional[tuple] = None
        self._watcher: Optional[threading.Thread] = None

    def __repr__(self) -> str:
        return f"<Recording {self.path!r} handlers={self.handlers}>"

    @property
    def rank(self) -> int:
        dist = self._torch.distributed
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # a group being torn down: fall back to the launcher's word
            pass
        try:
            return int(os.environ.get("RANK", "0"))
        except ValueError:
            return 0

    @property
    def path(self) -> str:
        return os.path.join(self.folder, f"{DUMP_PREFIX}{self.rank}")

    # ------------------------------------------------------------------------------------------
    # Dumping.

    def _dump_calls(self) -> List[Callable]:
        """PyTorch's dump calls, the one for this job's recorder first. _dump_fr_trace (2.8 on)
        reads the recorder Gloo and other CPU backends write; ProcessGroupNCCL keeps its own,
        which only _dump_nccl_trace reads, in every release that has both."""
        c10d = getattr(self._torch._C, "_distributed_c10d", None)
        generic = getattr(c10d, "_dump_fr_trace", None)
        nccl = getattr(c10d, "_dump_nccl_trace", None)
        dist = self._torch.distributed
        try:
            if dist.is_available() and dist.is_initialized():
                # Kept: a dump at exit may come after destroy_process_group.
                self._backend = str(dist.get_backend()).lower()
        except Exception:
            pass
        if self._backend is not None:
            uses_nccl = "nccl" in self._backend
        else:
            # No group seen yet (or ever): a process that started CUDA is an NCCL job's.
            cuda = getattr(self._torch, "cuda", None)
            try:
                uses_nccl = bool(cuda is not None and cuda.is_initialized())
            except Exception:
                uses_nccl = False
        order = [nccl, generic] if uses_nccl else [generic, nccl]
        return [call for call in order if call is not None]

    def _trace(self) -> bytes:
        calls = self._dump_calls()
        if not calls:
            raise RuntimeError(f"torch {self._torch.__version__} has no flight-recorder dump call "
                               f"(_dump_fr_trace or _dump_nccl_trace)")
        call = calls[0]
        try:
            return call(includeCollectives=True, includeStackTraces=True, onlyActive=False)
        except TypeError:
            return call()  # 2.2 and 2.3 take no arguments: they dump everything, with stacks

    def _write(self, why: str) -> Optional[str]:
        """Writes the dump (temporary hidden name, then renamed: a reader never sees half a file,
        and fr-analyze skips hidden files). Never raises: a failure is one line on stderr."""
        path = None
        tmp = None
        try:
            path = self.path
            data = self._trace()
            os.makedirs(self.folder, exist_ok=True)
            tmp = os.path.join(self.folder, f".{DUMP_PREFIX}{self.rank}.{os.getpid()}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            _say(f"flight recorder dumped to {path} ({why})")
            return path
        except BaseException as error:  # noqa: B902 - a handler must never raise, not even ^C
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            detail = str(error).strip().splitlines()
            _say(f"could not dump the flight recorder to {path or self.folder} ({why}): "
                 f"{type(error).__name__}: {detail[0] if detail else ''}")
            return None

    def _locked_write(self, why: str) -> Optional[str]:
        self._dumping_thread = threading.get_ident()
        try:
            return self._write(why)
        finally:
            self._dumping_thread = None

    def dump(self, why: str = "on demand") -> Optional[str]:
        """Writes this rank's dump now; returns its path, or None when it failed (which stderr
        says in one line; the job goes on)."""
        why = _args.text(why, "why")
        with self._dump_lock:
            path = self._locked_write(why)
        self._after_dump()
        return path

    def _final_dump(self, why: str, wait: Optional[float] = None) -> None:
        """The dump on the way out, once: a second way out (SIGTERM during the exception's dump)
        waits for the first dump, at most `wait` seconds, and writes nothing."""
        if not self._dump_lock.acquire(timeout=-1 if wait is None else wait):
            return
        try:
            if self._active and not self._final_done:
                self._locked_write(why)
                self._final_done = True
        finally:
            self._dump_lock.release()
        self._after_dump()

    def _after_dump(self) -> None:
        """A SIGTERM that interrupted this thread's own dump is acted on once the dump is
        written."""
        if self._sigterm_pending and threading.current_thread() is threading.main_thread():
            self._sigterm_pending = False
            self._end_as_sigterm_would(signal.SIGTERM, None)

    # ------------------------------------------------------------------------------------------
    # Handlers.

    def _excepthook(self, exc_type, exc, tb):
        # Only noted here; the dump is written at exit (_at_exit), after this hook returns. The
        # job's own error must show first and whole: PyTorch's excepthook (installed by
        # init_process_group around whatever hook was there, ours included) holds everything the
        # inner hooks print in a buffer until they return, and a dump costs seconds, in which a
        # launcher's SIGTERM would end the process with the traceback still unprinted.
        if self._active:
            self._exit_why = f"uncaught {exc_type.__name__}"
        (self._previous_excepthook or sys.__excepthook__)(exc_type, exc, tb)

    def _thread_excepthook(self, args):
        try:
            (self._previous_thread_hook or threading.__excepthook__)(args)
        finally:
            # SystemExit ends a thread quietly (threading's own rule); anything else is a failure
            # the process may live on after, so this dump does not count as the last one.
            if self._active and args.exc_type is not SystemExit:
                name = args.thread.name if args.thread is not None else "?"
                self.dump(f"uncaught {args.exc_type.__name__} in thread {name}")

    def _at_exit(self):
        why = self._exit_why or ("exit" if self.at_exit else None)
        if why is not None:
            self._final_dump(why)

    def _on_sigterm(self, signum, frame):
        """SIGTERM's Python handler (main thread, between bytecodes): dump (or wait for the
        watcher's dump), then what would have happened without record()."""
        if self._dumping_thread == threading.get_ident():
            # It interrupted this very thread's dump: let the dump finish (_after_dump acts).
            self._sigterm_pending = True
            return None
        self._final_dump("SIGTERM", wait=SIGTERM_DUMP_WAIT_S)
        return self._end_as_sigterm_would(signum, frame)

    def _end_as_sigterm_would(self, signum, frame):
        previous = self._previous_sigterm
        if callable(previous):
            return previous(signum, frame)
        self._die_of_sigterm()
        return None

    def _watch_signals(self, read_fd: int):
        """Wakes on every signal Python catches (signal.set_wakeup_fd). Python runs handlers only
        in the main thread between bytecodes, which never comes while that thread waits inside a
        collective (the ranks of a hung job): this thread writes the dump then."""
        while True:
            try:
                data = os.read(read_fd, 512)
            except OSError:
                break
            if not data:  # uninstall() closed the pipe
                break
            if self._previous_wakeup_fd >= 0:
                try:  # whoever set the wakeup fd before us still hears every signal
                    os.write(self._previous_wakeup_fd, data)
                except OSError:
                    pass
            if int(signal.SIGTERM) in data and self._active:
                self._final_dump("SIGTERM", wait=SIGTERM_DUMP_WAIT_S)
                # With no handler before ours, SIGTERM ends the process: do that now, since the
                # main thread may never get to our handler. A handler installed before ours (or
                # after: then ours is no longer installed) is the script's own and runs in the
                # main thread, as it would have.
                if (self._previous_sigterm in (signal.SIG_DFL, None) and
                        signal.getsignal(signal.SIGTERM) == self._on_sigterm):
                    self._die_of_sigterm()
        try:
            os.close(read_fd)
        except OSError:
            pass

    @staticmethod
    def _die_of_sigterm():
        """Ends the process the way SIGTERM's default does (status -15, which launchers read as
        a worker stopped from outside), from any thread."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            else:
                # Only the main thread may call signal.signal; libc's signal() sets the
                # process's disposition from any thread.
                libc = ctypes.CDLL(None, use_errno=True)
                libc.signal.restype = ctypes.c_void_p
                libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
                libc.signal(int(signal.SIGTERM), None)  # SIG_DFL
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            os._exit(128 + signal.SIGTERM)

    def _install_sigterm(self) -> Optional[str]:
        """Installs the SIGTERM handler and its watcher; returns why not, when it cannot."""
        if threading.current_thread() is not threading.main_thread():
            return "record() was called outside the main thread, where no signal can be handled"
        previous = signal.getsignal(signal.SIGTERM)
        if previous == signal.SIG_IGN:
            return "SIGTERM is ignored in this process, so it ends nothing"
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            self._previous_wakeup_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
            self._previous_sigterm = previous
            signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError) as error:
            os.close(read_fd)
            os.close(write_fd)
            return f"the handler could not be installed: {error}"
        self._wakeup_fds = (read_fd, write_fd)
        self._watcher = threading.Thread(target=self._watch_signals, args=(read_fd,),
                                         name="fr_analyze.record SIGTERM", daemon=True)
        self._watcher.start()
        return None

    def install(self, sigterm: bool) -> None:
        self._previous_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        self._previous_thread_hook = threading.excepthook
        threading.excepthook = self._thread_excepthook
        self.handlers += ["excepthook", "threading.excepthook"]
        if sigterm:
            why_not = self._install_sigterm()
            if why_not is None:
                self.handlers.append("SIGTERM")
            else:
                warnings.warn(f"fr_analyze.record: no dump on SIGTERM: {why_not}",
                              RuntimeWarning, stacklevel=3)
        # Always registered: it writes the dump of an uncaught exception (see _excepthook), and
        # with at_exit=True the dump of a normal exit.
        atexit.register(self._at_exit)
        if self.at_exit:
            self.handlers.append("atexit")

    def uninstall(self) -> None:
        """Takes record()'s handlers away. A hook that something else has chained since stays in
        its chain, but passes through without dumping."""
        global _current
        self._active = False
        if sys.excepthook == self._excepthook:
            sys.excepthook = self._previous_excepthook or sys.__excepthook__
        if threading.excepthook == self._thread_excepthook:
            threading.excepthook = self._previous_thread_hook or threading.__excepthook__
        if self._wakeup_fds is not None:
            read_fd, write_fd = self._wakeup_fds
            self._wakeup_fds = None
            if threading.current_thread() is threading.main_thread():
                if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                    signal.signal(signal.SIGTERM, self._previous_sigterm
                                  if self._previous_sigterm is not None else signal.SIG_DFL)
                try:
                    signal.set_wakeup_fd(self._previous_wakeup_fd)
                except ValueError:
                    pass
            os.close(write_fd)  # the watcher reads end-of-file and closes its end
            if self._watcher is not None:
                self._watcher.join(timeout=5)
        atexit.unregister(self._at_exit)
        self.handlers = []
        with _lock:
            if _current is self:
                _current = None


def _names_read(version: tuple) -> Dict[tuple, tuple]:
    """{every name of a setting: the names of it that this release must see}: only those, so
    that a release that reads both spellings does not warn about the old one needlessly."""
    if version >= FIRST_RECORDING_BY_DEFAULT:
        buffer_names: tuple = BUFFER_VARIABLES[:1]
    elif version >= FIRST_FR_NAMES:
        buffer_names = BUFFER_VARIABLES
    else:
        buffer_names = BUFFER_VARIABLES[1:]
    file_names = FILE_VARIABLES[:1] if version >= FIRST_FR_NAMES else FILE_VARIABLES[1:]
    return {BUFFER_VARIABLES: buffer_names, FILE_VARIABLES: file_names,
            TIMEOUT_VARIABLES: TIMEOUT_VARIABLES}


def _set_variables(folder: str, buffer_size: int, torch: Any) -> Dict[str, str]:
    """Sets the unset FR variables; returns what was set. A setting the user gave under another
    of its names keeps the user's value."""
    set_now: Dict[str, str] = {}
    dist = torch.distributed
    started = dist.is_available() and dist.is_initialized()
    version = _torch_version(torch)
    names = _names_read(version)

    def fill(setting, value):
        chosen = next((os.environ[n] for n in setting if os.environ.get(n)), value)
        for name in names[setting]:
            if not os.environ.get(name):
                os.environ[name] = chosen
                set_now[name] = chosen

    if not started:
        # Read once, when the first process group creates the recorder: later is too late.
        fill(BUFFER_VARIABLES, str(buffer_size))
    elif not any(os.environ.get(n) for n in BUFFER_VARIABLES):
        if version < FIRST_RECORDING_BY_DEFAULT:
            wanted = " and ".join(f"{n}={buffer_size}" for n in names[BUFFER_VARIABLES])
            warnings.warn(
                f"fr_analyze.record: called after init_process_group with no buffer size set: "
                f"torch {torch.__version__}'s flight recorder records nothing then. Call "
                f"record() before init_process_group, or set {wanted} in the job's environment",
                RuntimeWarning, stacklevel=3)
    # NCCL reads this for every process group it creates, and the watchdog reads the file prefix
    # at its first dump: both still count after init_process_group.
    fill(TIMEOUT_VARIABLES, "1")
    fill(FILE_VARIABLES, os.path.join(folder, DUMP_PREFIX))
    return set_now


def record(folder: Any = None, *, buffer_size: int = DEFAULT_BUFFER_SIZE, at_exit: bool = False,
           sigterm: bool = True) -> Recording:
    """Makes this rank leave FOLDER/nccl_trace_rank_<rank> however the job ends. Call it at the
    top of the training script, before init_process_group if possible (the ring buffer's size is
    read when the first process group is created).

    folder: where the dumps go; default $FR_ANALYZE_DUMPS, else ./fr-dumps. Created now.
    buffer_size: ring-buffer entries, set where TORCH_FR_BUFFER_SIZE (and its older name) is
        unset; 1 to 10**7.
    at_exit: also dump when the interpreter exits normally (sys.exit included).
    sigterm: dump on SIGTERM, then end as the process would have (its previous handler, or
        death by the signal).

    Returns a Recording: .path, .dump(why), .uninstall(). Calling record() again replaces the
    previous recording. Raises MissingDependencyError when torch is not installed."""
    folder = _default_folder() if folder is None else folder
    folder = os.fsdecode(_args.file_name(folder, "folder"))
    if not folder:
        raise ValueError("folder is empty: name a directory (or None for $FR_ANALYZE_DUMPS "
                         "or ./fr-dumps)")
    buffer_size = _args.integer(buffer_size, "buffer_size", 1, 10**7)
    at_exit = _args.flag(at_exit, "at_exit")
    sigterm = _args.flag(sigterm, "sigterm")
    folder = os.path.abspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"folder {folder!r} is a file, not a directory")

    torch = require("torch", "fr_analyze.record()", "python3-torch")
    import torch.distributed  # noqa: F401  (torch imports it too; said here, not assumed)
    # Created now: the watchdog's writer of older releases opens its file without making
    # folders.
    os.makedirs(folder, exist_ok=True)

    global _current
    with _lock:
        previous = _current
    if previous is not None:
        previous.uninstall()
        # What the previous call set points at its folder: this call's values replace them (a
        # value changed since then is someone else's, and stays).
        for name, value in previous.variables.items():
            if os.environ.get(name) == value:
                del os.environ[name]
    recording = Recording(folder, at_exit, torch)
    if not recording._dump_calls():
        warnings.warn(f"fr_analyze.record: torch {torch.__version__} has no flight-recorder dump "
                      f"call (it has one from 2.2 on, for Gloo from 2.8): nothing will be dumped",
                      RuntimeWarning, stacklevel=2)
    recording.variables = _set_variables(folder, buffer_size, torch)
    recording.install(sigterm)
    with _lock:
        _current = recording
    return recording
