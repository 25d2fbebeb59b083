"""Type stubs for fr_analyze._core, the compiled bindings (use the fr_analyze package instead)."""

from typing import Iterator, Callable, Dict, List, Optional, Tuple, Union

# Paths and the source are the file system's bytes (str is UTF-8 encoded); paths come back as
# os.fsdecode gives them.
Bytes = Union[str, bytes]

class Entry:
    record_id: int
    pg_id: int
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    time_created_ns: int
    time_discovered_started_ns: int
    time_discovered_completed_ns: int
    timeout_ms: int
    duration_ms: float
    peer_rank: int
    group: int
    profiling_name_id: int
    backend_id: int
    op_name_id: int
    thread_name_id: int
    thread_id_id: int
    input_sizes_id: int
    output_sizes_id: int
    input_dtypes_id: int
    output_dtypes_id: int
    stack_id: int
    op_kind: str
    state: str
    retired: bool
    is_p2p: bool

class Entries:
    """A dump's entries, oldest first, as a read-only view (no copy)."""
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Entry: ...
    def __iter__(self) -> Iterator[Entry]: ...

class PgStatus:
    last_enqueued_collective: int
    last_started_collective: int
    last_completed_collective: int

class ProcessGroup:
    name_id: int
    desc_id: int
    ranks: List[int]
    ranks_known: bool
    pg_id: int
    entry_count: int  # this dump's entries in the group
    status: Optional[PgStatus]

class RankDump:
    rank: int
    path: str
    version: str
    comm_lib_version: str
    has_entries_key: bool
    has_stacks: bool
    entries: Entries  # a read-only view: nothing is copied
    groups: List[ProcessGroup]
    oddities: List[Tuple[str, int]]
    comm_state: List[Tuple[str, str]]
    def string(self, id: int) -> str: ...
    def shapes(self, id: int) -> List[List[int]]: ...
    def dtypes(self, id: int) -> List[str]: ...
    def stack(self, id: int) -> List[Tuple[str, str, int]]: ...
    # Added by fr_analyze._trace:
    def entry_dicts(self) -> List[dict]: ...
    def group_dicts(self) -> List[dict]: ...

class RejectedFile:
    path: str
    rank: int
    error: str

class SkippedFile:
    path: str
    reason: str

class RankConflict:
    rank: int
    paths: List[str]

class LoadedTrace:
    ranks: List[RankDump]
    rejected: List[RejectedFile]
    skipped: List[SkippedFile]
    conflicts: List[RankConflict]
    missing_ranks: List[int]
    evidence_paths: List[str]
    versions: List[str]
    bytes_on_disk: int
    bytes_decoded: int
    def summary_text(self, source: Bytes) -> str: ...
    def summary_json(self, source: Bytes) -> str: ...

class Report:
    def text(self) -> str: ...
    def json(self) -> str: ...
    def proto_bytes(self) -> bytes: ...
    def is_failure(self) -> bool: ...

class CollectiveRow:
    group: int
    seq: int
    op: str
    issued: List[int]
    started: List[int]
    completed: List[int]
    not_issued: List[int]
    dump_missing: List[int]

def analyze(trace: LoadedTrace, source: Bytes = ..., pg_filter: List[str] = ...,
            dump_time_ns: int = ...) -> Report: ...
def analyze_with_logs(trace: LoadedTrace, source: Bytes = ..., pg_filter: List[str] = ...,
                      dump_time_ns: int = ..., pasted: Optional[Bytes] = ...
                      ) -> Tuple[Report, Dict[str, list]]: ...
def is_own_report(head: bytes) -> bool: ...
def timeline(trace: LoadedTrace, source: Bytes = ..., format: str = ...) -> bytes: ...
def html_report(trace: Optional[LoadedTrace], report: Report, fragment: bool = ...) -> str: ...
def collective_table(
    trace: LoadedTrace,
) -> Tuple[List[Tuple[str, str, List[int]]], List[CollectiveRow]]: ...
def load(path: Bytes, prefix: Bytes = ..., rank_pattern: str = ..., jobs: int = ...,
         progress: Optional[Callable[[int, int], None]] = ..., files: List[Bytes] = ...,
         follow_links: bool = ..., early: Optional[EarlyReads] = ...) -> LoadedTrace: ...
class EarlyReads:
    def __init__(self, jobs: int = ..., background: bool = ...) -> None: ...
    def file_complete(self, path: Bytes) -> None: ...
    def read_held(self, fd: int) -> None: ...
    @property
    def files_read(self) -> int: ...
    @property
    def files_used(self) -> int: ...
def load_bytes(dumps: Dict[int, bytes], jobs: int = ...) -> LoadedTrace: ...
def is_dump_by_name(relative_path: str) -> bool: ...

class Discovery:
    # (path, open_path, rank, hash_content) per discovered file, in the order assemble expects.
    @property
    def tasks(self) -> List[Tuple[str, str, int, bool]]: ...

def discover(path: Bytes, prefix: Bytes = ..., rank_pattern: str = ..., files: List[Bytes] = ...,
             follow_links: bool = ...) -> Discovery: ...
def summarize_file(path: Bytes, open_path: Bytes, rank: int, hash_content: bool) -> bytes: ...
def assemble(root: Bytes, discovery: Discovery, summaries: List[bytes]) -> LoadedTrace: ...
