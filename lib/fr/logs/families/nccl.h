// The log family of NCCL itself: NCCL_DEBUG=INFO / WARN lines ("host:pid:tid [dev] NCCL INFO
// ..."), recognized by their level rather than by a needle, and the transport failures NCCL's
// errors name wherever they are quoted. Its patterns are rows of the table in
// lib/fr/logs/line_table.cc.
//
//   hostname-test:984:1257 [4] NCCL INFO comm 0x557fe785f7a0 rank 36 nranks 64 cudaDev 4 nvmlDev
//   4 busId 9b000 commId 0x5ae77eb5ea4ec1ee - Init COMPLETE
//   kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer
//   10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) ...
#ifndef FR_LOGS_FAMILIES_NCCL_H_
#define FR_LOGS_FAMILIES_NCCL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

class NcclLines {
 public:
  explicit NcclLines(LineContext* context) : context_(context) {}

  // A line NCCL printed at a level ("NCCL INFO", "NCCL WARN"): true when the current line is
  // one, whether or not it made an event, since no other pattern is about NCCL's own lines.
  bool OnLeveledLine(std::string_view line, std::string_view body);

  // Table recognizers (true when the line made its event): a peer gone as a victim sees it, and
  // a transport fault.
  bool OnRemotePeerGone(std::string_view line, std::string_view body);
  bool OnTransportError(std::string_view line, std::string_view body);
  // Communicators that could not form, wherever the words are quoted (a WARN line, the "Last
  // error:" line under a DistBackendError): two ranks on one GPU (ncclInvalidUsage), a
  // bootstrap socket NCCL could not open (ncclSocketInit).
  bool OnDuplicateGpu(std::string_view line, std::string_view body);
  bool OnSocketInit(std::string_view line, std::string_view body);

  // PyTorch's NCCL errors end with "Last error:" and NCCL's last warning (ncclGetLastError), on
  // the same line (older one-line messages) or on the writer's next line: that warning is the
  // fault NCCL saw first, read as its WARN line would be. The row is the table's first, since
  // the line that quotes it is otherwise a victim's (a watchdog abort, a remote error).
  bool OnLastError(std::string_view line, std::string_view body);
  // The writer's line after a bare "Last error:": true when it was the quoted warning and made
  // an event.
  bool FollowLastError(std::string_view line, std::string_view body);

 private:
  // Who printed a line, to find the same writer's next line among other writers' lines.
  struct Writer {
    int64_t rank = -1;
    int64_t local_rank = -1;
    int32_t pid = -1;
    std::string host;
    bool operator==(const Writer&) const = default;
  };
  Writer CurrentWriter() const;

  void OnInit(std::string_view line, std::string_view body);
  void OnInterface(std::string_view line, std::string_view body);
  void OnVersion(std::string_view line, std::string_view body);
  // A warning's text (a WARN line's body, or the warning quoted after "Last error:"): true when
  // it made an event.
  bool OnWarn(std::string_view line, std::string_view body);
  // An INFO line while a failed verbs call's error trace may follow (verbs_failure_).
  void FollowVerbsFailure(std::string_view body);

  LineContext* context_;
  // After a bare "Last error:": whose next line is the warning, and for how many more lines of
  // other writers to wait for it.
  std::optional<Writer> last_error_writer_;
  int lines_to_wait_ = 0;
  // A failed verbs call ("Call to ibv_... failed") whose writer's error trace ("file:line -> N")
  // is still being read: its event, amended to an init failure where the trace runs through
  // init.cc. The trace is a handful of lines; a longer one stops being followed.
  static constexpr int kVerbsTraceLines = 16;
  struct VerbsFailure {
    Writer writer;
    size_t event = 0;
    std::string call;
    int lines_left = 0;
  };
  std::optional<VerbsFailure> verbs_failure_;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_NCCL_H_
