// The log family of the job never forming: c10d's TCPStore client that cannot reach the store
// (the rendezvous host). Its patterns are rows of the table in lib/fr/logs/line_table.cc.
//
//   [E521 15:43:02.707733876 socket.cpp:1023] [c10d] The client socket has timed out after
//   600000ms while trying to connect to (172.18.21.4, 37907).
#ifndef FR_LOGS_FAMILIES_STORE_H_
#define FR_LOGS_FAMILIES_STORE_H_

#include <string>
#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer returns false when the line is none of its own (the table then goes on).
class StoreLines {
 public:
  explicit StoreLines(LineContext* context) : context_(context) {}

  bool OnStoreUnreachable(std::string_view line, std::string_view body);
  // c10d's store-based barrier that every rank passes to form a process group (torch < 2.0 and
  // new_group): it timed out, or more workers arrived than the world has.
  bool OnStoreBarrier(std::string_view line, std::string_view body);
  // The store's server that cannot listen (rank 0 or the agent starting the rendezvous): its
  // port is taken, by another job or a leftover process of this one.
  bool OnStoreListenFailure(std::string_view line, std::string_view body);

 private:
  LineContext* context_;
};

// Whether a message about c10d's store-based barrier is a fault: it timed out, or more workers
// arrived than the world has; and the event's failed step and reason from it. Python's
// tracebacks quote the same words (RuntimeError: Timed out initializing process group ...).
bool IsStoreBarrierFault(std::string_view message);
void DescribeStoreBarrierFault(std::string_view message, LogEvent* event);

// Whether a message says c10d's store server could not listen ("The server socket has failed to
// listen on any local network address", with or without the bind errors or libuv's "code: -98,
// name: EADDRINUSE" after it); and the event's failed step, reason and port from it. Python's
// tracebacks quote the same words (RuntimeError, DistNetworkError).
bool IsStoreListenFailure(std::string_view message);
void DescribeStoreListenFailure(std::string_view message, LogEvent* event);

// The store's address in a message about reaching it: "(172.18.21.4, 37907)" as
// "172.18.21.4:37907"; "[node01]:29500" and "host 10.0.0.1:29500" as written. Empty when none.
// Python's tracebacks quote the same words (DistNetworkError).
std::string StoreAddress(std::string_view message);

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_STORE_H_
