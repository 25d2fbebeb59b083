// Reading a folder's dumps while the folder is still being written (an upload being unpacked):
// the writer names each file as soon as it is complete, a few threads read and decode it at
// once, and LoadTrace on the finished folder (LoadOptions::early) takes each early result whose
// file is unchanged since, instead of reading the file again. Discovery, settling and everything
// after are LoadTrace's own, so the trace is the one a load of the finished folder gives: the
// files are only read sooner, beside the writing, on the cores the writer leaves idle while it
// waits for the file system.
//
//   EarlyReads early(/*jobs=*/0);
//   early.FileComplete("/uploads/x/files/job/nccl_trace_rank_0");  // as each file is closed
//   ...
//   LoadOptions options;
//   options.early = &early;
//   FR_ASSIGN_OR_RETURN(LoadedTrace trace, LoadTrace("/uploads/x/files/job", options));
//
// A file is known by its inode, not by how its path is spelled (the writer and the load may name
// it from different folders), and an early result is used only while the file has the same
// inode, size and modification time as when it was named: a file changed or replaced since is
// read again by the load. A file its name marks as no dump (a log, a core file), by the rules of
// discovery, is not read early.
//
// Files need not be on disk at all: ReadHeld takes files held in memory (an archive's members,
// as the console unpacks them) from a pipe, decodes each as it is whole, and LoadTrace judges
// them beside the files on disk (DiscoverOptions::held) and takes their results. The console
// then writes them to disk only after its answer.
#ifndef FR_LOAD_EARLY_READS_H_
#define FR_LOAD_EARLY_READS_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fr/discover/discover.h"
#include "fr/read/input_file.h"

namespace fr {

class EarlyReads;

namespace load_internal {
struct EarlyReadsState;
struct FileResult;
// For LoadTrace (load_internal.h says more).
std::optional<FileResult> TakeEarlyResult(EarlyReads& early, const std::string& open_path);
FileResult TakeHeldResult(EarlyReads& early, const std::string& path);
}  // namespace load_internal

class EarlyReads {
 public:
  // Reads on `jobs` threads (0: one per core). `background`: the threads run at the lowest
  // CPU priority, so that they take only what the writer leaves idle: where the writer is
  // bound by the CPU (a few cores), reads that slow it down delay the end they were to bring
  // nearer. `discover` holds the rules that decide which names are worth reading
  // (LoadTrace's own discovery still decides what is loaded); `read` the decompression limits,
  // as LoadOptions::read.
  explicit EarlyReads(int jobs = 0, bool background = false, DiscoverOptions discover = {},
                      ReadOptions read = {});
  // Stops reading (files not yet started are dropped) and waits for the threads.
  ~EarlyReads();
  EarlyReads(const EarlyReads&) = delete;
  EarlyReads& operator=(const EarlyReads&) = delete;

  // `path` is complete and will not change. Returns at once and never fails: a path that is
  // gone or is not a regular file is ignored (the load reads or skips it, and says why).
  void FileComplete(const std::string& path);

  // Reads files held in memory from `fd` (a pipe; this takes it and closes it) on a thread of its
  // own, until its end, and decodes each as soon as it is whole, as FileComplete's files. Each is
  // a frame, numbers little-endian: u32 path length, the path ('/' separators, relative to the
  // folder LoadTrace's root is named from: "job/nccl_trace_rank_3" for a root of "job"), u64
  // size, i64 modification time (ns since the epoch; 0: none), then its bytes. Once every
  // undecoded file held adds up to kMaxHeldBytes, the pipe is read no further until decoding
  // catches up: a writer faster than the decoding is held back, never buffered. Call it once.
  void ReadHeld(int fd);
  static constexpr uint64_t kMaxHeldBytes = uint64_t{256} << 20;

  // The files held (HeldFile: path as framed, size, first bytes), once the pipe has ended; none
  // when ReadHeld was not called. An error when the pipe ended inside a frame or a frame is
  // malformed: the files held are then not all there.
  absl::StatusOr<std::vector<HeldFile>> HeldFiles();

  // Files read to the end so far (for the console's timing breakdown and the tests).
  size_t files_read() const;
  // Early results a load has used in place of reading the file.
  size_t files_used() const;

 private:
  friend std::optional<load_internal::FileResult> load_internal::TakeEarlyResult(
      EarlyReads& early, const std::string& open_path);
  friend load_internal::FileResult load_internal::TakeHeldResult(EarlyReads& early,
                                                                 const std::string& path);
  std::unique_ptr<load_internal::EarlyReadsState> state_;
};

}  // namespace fr

#endif  // FR_LOAD_EARLY_READS_H_
