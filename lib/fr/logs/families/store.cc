#include "fr/logs/families/store.h"

#include "fmt/format.h"
#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

// "[E521 15:43:02.707733876 socket.cpp:1023] [c10d] The client socket has timed out after
// 600000ms while trying to connect to (172.18.21.4, 37907).", "The client socket has failed to
// connect to [node01]:29500 (errno: 111 - Connection refused).", and TCPStore's "TCP client
// failed to connect/validate to host 172.18.21.4:37907 - timed out (try=1, ...)".
bool StoreLines::OnStoreUnreachable(std::string_view line, std::string_view body) {
  if (!Contains(body, "connect")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kInitFailure, line);
  e->peer_address = StoreAddress(body);
  e->reason = Contains(body, "timed out") ? "timed out" : "connection failed";
  return true;
}

// "Timed out initializing process group in store based barrier on rank: 7, for key:
// store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)"; and "Waiting in
// store based barrier to initialize process group for rank: 0, key: ... (world_size=4,
// worker_count=16, timeout=0:01:00)", which is only a fault when more workers than the world
// arrived (two jobs share one store, or one job was started twice).
bool StoreLines::OnStoreBarrier(std::string_view line, std::string_view body) {
  if (!IsStoreBarrierFault(body)) return false;
  DescribeStoreBarrierFault(body, context_->Emit(LogEventKind::kInitFailure, line));
  return true;
}

bool IsStoreBarrierFault(std::string_view message) {
  int64_t world = IntAfter(message, "world_size=");
  int64_t arrived = IntAfter(message, "worker_count=");
  return Contains(message, "Timed out initializing process group") ||
         (world > 0 && arrived > world);
}

void DescribeStoreBarrierFault(std::string_view message, LogEvent* e) {
  int64_t world = IntAfter(message, "world_size=");
  int64_t arrived = IntAfter(message, "worker_count=");
  e->failed_step = "pass the store-based barrier that forms a process group";
  if (world > 0 && arrived >= 0) {
    e->reason = arrived > world ? fmt::format(
                                      "{} workers arrived for a world of {}: two jobs "
                                      "share the store, or one was started twice",
                                      arrived, world)
                                : fmt::format("{} of {} ranks arrived", arrived, world);
  } else {
    e->reason = "timed out";
  }
}

std::string StoreAddress(std::string_view message) {
  size_t open = message.find("connect to (");
  if (open != std::string_view::npos) {
    std::string_view rest = message.substr(open + 12);
    size_t comma = rest.find(", "), close = rest.find(')');
    if (comma != std::string_view::npos && close != std::string_view::npos && comma < close) {
      return EventText(
          Cat({rest.substr(0, comma), ":", rest.substr(comma + 2, close - comma - 2)}));
    }
  }
  std::string_view word = WordAfter(message, "connect to ", " ");
  if (word.empty()) word = WordAfter(message, "to host ", " ");
  while (!word.empty() && (word.back() == '.' || word.back() == ',')) word.remove_suffix(1);
  return EventText(word);
}

}  // namespace fr::logs_internal
