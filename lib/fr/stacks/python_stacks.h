// Every rank's Python stacks, as PyTorch's debug server serves and snapshots them, and what they
// show while a job hangs: which rank's main thread is outside communication while the others wait
// inside a torch.distributed call.
//
// The source (torch >= 2.13, `torch.distributed.debug.start_debug_server(dump_dir=...)`): rank 0's
// frontend writes `stacks_<YYYYmmdd_HHMMSS>.txt` every `dump_interval` seconds, one block per rank:
//
//   PARTIAL DATA: 3/4 workers responded          (only when some did not answer)
//     Rank 2: ConnectionError: ... Connection refused
//
//   === Rank 0: http://node0:33821/handler/dump_traceback? ===
//   Current thread 0x00007f1bfe7fc6c0 (most recent call first):
//     <no Python frame>
//
//   Thread 0x00007f1c25a8fb80 (most recent call first):
//     File ".../torch/distributed/distributed_c10d.py", line 3252 in all_reduce
//     File "train.py", line 214 in train
//     File "train.py", line 240 in <module>
//   === Rank 2: http://node0:60641/handler/dump_traceback? ===
//   Error: 503
//
// Each rank's block is faulthandler's format. `fr-analyze live` writes what it fetched in the same
// format, so a live run saved with `--save` and the frontend's own snapshots read alike.
//
//   StackSnapshots stacks;
//   ParseStackSnapshot("dbg/stacks_20261203_095248.txt", text, &stacks);  // oldest first
//   StackJudgement judged = JudgeStacks(stacks);
//   judged.held_by;  // {2}: in user code while ranks 0, 1, 3 wait in all_reduce
#ifndef FR_STACKS_PYTHON_STACKS_H_
#define FR_STACKS_PYTHON_STACKS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fr/base/rank.h"

namespace fr {

struct PythonFrame {
  std::string file;  // as printed: often an absolute path on the rank's host
  int64_t line = 0;
  std::string function;

  bool operator==(const PythonFrame&) const = default;
};

struct PythonThread {
  std::string id;        // "0x00007f1c25a8fb80", as printed
  bool current = false;  // "Current thread": the one that printed (the debug server's own)
  std::vector<PythonFrame> frames;  // innermost first
};

// How a rank's worker answered the request for its stacks.
enum class RankAnswer {
  kAnswered,
  kRefused,   // connection refused: nothing listens, the process is gone
  kTimedOut,  // no answer in time: the process may hold the GIL, be stopped or swapping
  kFailed,    // any other error (a 404 from a build without the handler, a reset)
};

struct RankStacks {
  int64_t rank = -1;
  std::string address;  // "http://node0:33821/handler/dump_traceback?", as printed
  RankAnswer answer = RankAnswer::kAnswered;
  std::string error;  // what the fetch said, when it got no stacks
  std::vector<PythonThread> threads;
};

struct StackSnapshot {
  std::string path;
  // From the file name (`stacks_20261203_095248.txt`: the frontend's local time, read as UTC,
  // so only differences between snapshots mean anything); -1 when the name has none.
  int64_t time_ns = -1;
  std::vector<RankStacks> ranks;  // ascending rank, one per rank
};

struct StackSnapshots {
  std::vector<StackSnapshot> snapshots;  // oldest first (by time, then by path)
  std::vector<std::string> files;
  int64_t unparsed_lines = 0;  // lines that fit nothing (counted, never fatal)
};

// A debug server's stacks snapshot, from its first bytes and its file name: a `=== Rank N: ...
// dump_traceback` block or faulthandler's "(most recent call first):" after a PARTIAL DATA header.
bool LooksLikeStackSnapshot(std::string_view head, std::string_view path = "");

// Any of the debug server frontend's periodic files (`fr_trace_<time>.txt` tables,
// `torchcomms_health_check_<time>.txt`, stacks), by name and first line: not logs. Only the stacks
// are read (their tables repeat what the flight recorders hold; on Gloo they fail in torch 2.13).
bool LooksLikeDebugServerSnapshot(std::string_view head, std::string_view path);

// Adds one snapshot file to `stacks`, keeping them oldest first. InvalidArgument naming the file
// (and line) when it holds no rank block, a rank out of range, or two blocks of one rank.
absl::Status ParseStackSnapshot(const std::string& path, std::string_view text,
                                StackSnapshots* stacks);

// The thread that runs the program: the one whose outermost frame is `<module>` (the script), or
// else the last thread with Python frames (faulthandler lists the main thread last). nullptr when
// no thread has a Python frame.
const PythonThread* MainThread(const RankStacks& rank);

// Where a main thread is, by its innermost frame.
enum class StackPlace {
  kCommunication,  // inside torch.distributed (a collective, a barrier, a wait)
  kTorch,          // elsewhere inside torch (autograd, a CUDA sync)
  kOutside,        // user code or another library: data loading, I/O, a lock, a sleep
  kNoPython,       // no Python frame (a C extension started the thread, or none printed)
};
StackPlace PlaceOf(const PythonThread* main);
std::string_view StackPlaceName(StackPlace place);

// "all_reduce (torch/distributed/distributed_c10d.py:3252)": the path shortened to what follows
// site-packages/ (or its last three parts), as py-spy prints frames.
std::string DescribeFrame(const PythonFrame& frame);

// Ranks of the newest snapshot whose main threads are identical (every frame), largest group
// first.
struct StackGroup {
  std::vector<int64_t> ranks;  // ascending
  StackPlace place = StackPlace::kNoPython;
  std::vector<PythonFrame> frames;  // innermost first; empty for kNoPython
};

struct RankNoAnswer {
  int64_t rank = -1;
  RankAnswer answer = RankAnswer::kFailed;
  std::string error;
};

struct StackJudgement {
  // The newest snapshot the judgement reads, and how many snapshots (oldest to newest) it had.
  std::string newest_path;
  int snapshots = 0;
  std::vector<StackGroup> groups;
  // Ranks waiting inside torch.distributed, ascending; the innermost frame of the largest group of
  // them ("all_reduce (...)").
  std::vector<int64_t> waiting;
  std::string waiting_in;
  // Ranks outside communication while at least two others and most ranks that answered wait
  // inside it: where the job stopped, unless they are moving.
  std::vector<int64_t> held_by;
  // For each of held_by (same order): its frame nearest the user's code, i.e. the innermost frame
  // outside the standard library and site-packages, else the innermost frame.
  std::vector<PythonFrame> held_at;
  // held_by's main threads were identical in this many snapshots in a row ending at the newest,
  // spanning `unchanged_ns` (-1 when the snapshots carry no times).
  int unchanged_snapshots = 0;
  int64_t unchanged_ns = -1;
  // Some of held_by had another stack in an earlier snapshot of the run that ends at the newest:
  // they move (slow), they are not stuck.
  bool moving = false;
  // Work every rank shares (a checkpoint, an evaluation): the longest span over which another
  // rank was seen in the first held rank's frame (held_at) in earlier snapshots of the same
  // processes, and left it. -1 when no other rank was seen there. A held rank is then doing what
  // its peers did, slower; it is stuck only when it stays far longer than they took.
  int64_t peers_in_frame_ns = -1;
  std::vector<RankNoAnswer> no_answer;  // ascending rank
};

StackJudgement JudgeStacks(const StackSnapshots& stacks);

}  // namespace fr

#endif  // FR_STACKS_PYTHON_STACKS_H_
