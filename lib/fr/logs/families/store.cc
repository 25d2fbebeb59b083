#include "fr/logs/families/store.h"

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
