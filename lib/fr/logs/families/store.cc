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

bool StoreLines::OnStoreListenFailure(std::string_view line, std::string_view body) {
  if (!IsStoreListenFailure(body)) return false;
  DescribeStoreListenFailure(body, context_->Emit(LogEventKind::kInitFailure, line));
  return true;
}

bool IsStoreListenFailure(std::string_view message) {
  return Contains(message, "server socket has failed to listen");
}

void DescribeStoreListenFailure(std::string_view message, LogEvent* e) {
  e->failed_step = "start the rendezvous store (c10d's TCPStore server)";
  bool in_use = Contains(message, "Address already in use") || Contains(message, "EADDRINUSE");
  int64_t port = IntAfter(message, "port: ");
  if (port < 0) {
    // "failed to bind to [::]:29500 (errno: 98 ...)": the port after the address's last colon.
    size_t bind = message.find("failed to bind to ");
    size_t paren = bind == std::string_view::npos ? bind : message.find(" (", bind);
    if (paren != std::string_view::npos) {
      std::string_view address = message.substr(bind + 18, paren - bind - 18);
      size_t colon = address.rfind(':');
      if (colon != std::string_view::npos) port = IntAfter(address.substr(colon), ":");
    }
  }
  std::string where = port > 0 ? fmt::format("port {}", port) : std::string("its port");
  e->reason = in_use ? fmt::format(
                           "{} is already in use: another job, or a leftover process "
                           "of an earlier run, holds it",
                           where)
                     : fmt::format("it could not listen on {}", where);
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
