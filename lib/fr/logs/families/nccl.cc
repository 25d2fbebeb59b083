#include "fr/logs/families/nccl.h"

#include <algorithm>
#include <string>

#include "fmt/format.h"
#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

bool NcclLines::OnLeveledLine(std::string_view line, std::string_view body) {
  const char level = context_->prefix().nccl_level;
  if (level == 'I') {
    if (verbs_failure_) FollowVerbsFailure(body);
    if (EndsWith(Trim(body), "Init COMPLETE")) {
      OnInit(line, body);
    } else if (Contains(body, ": Using ")) {
      OnInterface(line, body);
    } else if (StartsWith(TrimLeft(body), "NCCL version ")) {
      OnVersion(line, body);
    }
    return true;
  }
  if (level == 'W') {
    OnWarn(line, body);
    return true;
  }
  return false;
}

NcclLines::Writer NcclLines::CurrentWriter() const {
  const LinePrefix& prefix = context_->prefix();
  return Writer{.rank = prefix.rank,
                .local_rank = prefix.local_rank,
                .pid = prefix.pid,
                .host = std::string(prefix.host)};
}

bool NcclLines::OnLastError(std::string_view line, std::string_view body) {
  std::string_view quoted = Trim(body.substr(body.find("Last error:") + 11));
  if (!quoted.empty()) return OnWarn(line, quoted);
  // NCCL's warning follows on the writer's next line.
  last_error_writer_ = CurrentWriter();
  lines_to_wait_ = 8;
  return true;
}

bool NcclLines::FollowLastError(std::string_view line, std::string_view body) {
  if (!last_error_writer_) return false;
  if (CurrentWriter() != *last_error_writer_) {
    if (--lines_to_wait_ <= 0) last_error_writer_.reset();
    return false;
  }
  last_error_writer_.reset();
  return OnWarn(line, Trim(body));
}

bool NcclLines::OnRemotePeerGone(std::string_view line, std::string_view) {
  context_->Emit(LogEventKind::kRemotePeerGone, line);
  return true;
}

bool NcclLines::OnTransportError(std::string_view line, std::string_view body) {
  LogEvent* e = context_->Emit(LogEventKind::kTransportError, line);
  e->reason = Contains(body, "ncclSystemError") ? "ncclSystemError" : "system error";
  return true;
}

// "Duplicate GPU detected : rank 3 and rank 0 both on CUDA device f000" (init.cc, returning
// ncclInvalidUsage): two processes chose one GPU, so the communicator never forms.
bool NcclLines::OnDuplicateGpu(std::string_view line, std::string_view body) {
  LogEvent* e = context_->Emit(LogEventKind::kInitFailure, line);
  e->failed_step = "form the NCCL communicator";
  int64_t a = IntAfter(body, "rank ");
  int64_t b = IntAfter(body, " and rank ");
  std::string_view device = WordAfter(body, "CUDA device ", " ,.");
  e->reason = a >= 0 && b >= 0 ? fmt::format("ranks {} and {} use one GPU, CUDA device {}", a, b,
                                             device.empty() ? "?" : device)
                               : std::string("two ranks use one GPU");
  return true;
}

// "ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor
// AF_INET6(10)": the socket NCCL's bootstrap connects with could not be made (a bad
// NCCL_SOCKET_IFNAME, an address it could not resolve).
bool NcclLines::OnSocketInit(std::string_view line, std::string_view body) {
  size_t at = body.find("ncclSocketInit");
  std::string_view rest = Trim(body.substr(at + 14));
  if (StartsWith(rest, ":")) rest = Trim(rest.substr(1));
  if (rest.empty()) return false;
  LogEvent* e = context_->Emit(LogEventKind::kInitFailure, line);
  e->failed_step = "open NCCL's bootstrap socket";
  e->reason = EventText(rest);
  return true;
}

// "host:pid:tid [dev] file.cc:123 NCCL WARN ...": network and CUDA failures NCCL saw first.
bool NcclLines::OnWarn(std::string_view line, std::string_view body) {
  if (Contains(body, "Duplicate GPU detected")) {
    return OnDuplicateGpu(line, body);
  }
  // Setting up before any communicator exists: NVML cannot see the GPU ("nvmlDeviceGetHandle
  // ByPciBusId() failed: Not Found", a container without the device), no interface to bootstrap
  // over ("Bootstrap : no socket interface found", "NET/Socket : no interface found").
  if (StartsWith(TrimLeft(body), "nvml") && Contains(body, "failed")) {
    LogEvent* e = context_->Emit(LogEventKind::kInitFailure, line);
    e->failed_step = "query its GPU through NVML";
    e->reason = EventText(Trim(body));
    return true;
  }
  if (Contains(body, "no socket interface found") || Contains(body, "no interface found")) {
    LogEvent* e = context_->Emit(LogEventKind::kInitFailure, line);
    e->failed_step = "find a network interface for NCCL";
    e->reason = EventText(Trim(body));
    return true;
  }
  // ibvwrap's "Call to ibv_modify_qp failed with error Invalid argument" (before NCCL 2.4:
  // "Call to ibv_create_qp failed"): a verbs call that sets up or uses an InfiniBand/RoCE
  // connection failed on this host. Where its error's trace runs through init.cc the
  // communicator never formed (FollowVerbsFailure).
  if (size_t at = body.find("Call to ibv_"); at != std::string_view::npos) {
    std::string_view call = WordAfter(body.substr(at), "Call to ", " ");
    if (!call.empty() && Contains(body.substr(at), " failed")) {
      LogEvent* e = context_->Emit(LogEventKind::kTransportError, line);
      std::string_view error = Trim(body.substr(at));
      size_t with = error.find(" with error ");
      e->reason =
          with == std::string_view::npos
              ? Cat({"NET/IB verbs call ", call, " failed"})
              : Cat({"NET/IB verbs call ", call, " failed: ", Trim(error.substr(with + 12))});
      e->reason = EventText(e->reason);
      if (!context_->IsDropped(e)) {
        verbs_failure_ = VerbsFailure{CurrentWriter(), context_->event_count() - 1,
                                      std::string(call), kVerbsTraceLines};
      }
      return true;
    }
  }
  if (Contains(body, "Cuda failure")) {
    bool oom = Contains(body, "out of memory");
    LogEvent* e = context_->Emit(oom ? LogEventKind::kCudaOom : LogEventKind::kCudaError, line);
    e->reason = std::string(WordAfter(body, "Cuda failure '", "'"));
    return true;
  }
  std::string_view reason;
  // net_ib's "Got completion from peer <addr> with error 12, ..." (older NCCL: "Got completion
  // with error 12, ...", no peer).
  if (Contains(body, "Got completion from peer") || Contains(body, "Got completion with error")) {
    reason = "completion error";
  } else if (Contains(body, "Connection reset by peer")) {
    reason = "connection reset by peer";
  } else if (Contains(body, "Connection closed by remote peer")) {
    reason = "connection closed by remote peer";
  } else if (Contains(body, "Connection refused")) {
    reason = "connection refused";
  } else if (Contains(body, "Broken pipe")) {
    reason = "broken pipe";
  } else if (Contains(body, "completed with error")) {
    reason = "completion error";
  } else if (Contains(body, "Got async event") &&
             Contains(body.substr(body.find("Got async event")), "error")) {
    // The IB device's own event, as libibverbs names it: the fatal ones are errors ("local
    // access violation work queue error", "port error", "local catastrophic error"); "port
    // active" or "GID table change" are not.
    reason = "IB async error";
  } else if (Contains(body, "ncclSystemError") || Contains(body, "Connection timed out")) {
    reason = "system error";
  } else {
    return false;
  }
  // The verbs status of an IB completion: 5 (IBV_WC_WR_FLUSH_ERR) is a work request flushed
  // because its connection had already failed, the view of a rank whose peer failed first;
  // 12 (retry exceeded) and the others are the failure itself.
  int64_t status = IntAfter(body, "with status=");
  if (status < 0) status = IntAfter(body, "with error ");
  bool flushed = reason == "completion error" && status == 5;
  LogEvent* e =
      context_->Emit(flushed ? LogEventKind::kRemotePeerGone : LogEventKind::kTransportError, line);
  if (flushed) reason = "work request flushed (its connection had already failed)";
  std::string_view transport = WordAfter(body, "NET/", " :");
  e->reason = transport.empty() ? std::string(reason) : Cat({"NET/", transport, " ", reason});
  std::string_view peer = WordAfter(body, " peer ", " ,");
  if (peer.empty()) peer = WordAfter(body, " from ", " ,");
  // An address ("10.0.0.5<45678>") or a host name ("closed by remote peer node001").
  bool host_like =
      !peer.empty() && peer.size() <= 128 && std::all_of(peer.begin(), peer.end(), [](char c) {
        return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
               std::string_view("-_.:<>[]").find(c) != std::string_view::npos;
      });
  if (host_like) {
    e->peer_address = EventText(peer);
  }
  return true;
}

// The writer's "NCCL INFO init.cc:424 -> 2" lines after a failed verbs call: NCCL's error trace
// (NCCLCHECK), each caller's file and line with the error code. Through init.cc (init.cu before
// NCCL 2.4), the call was the communicator's set-up: the job never formed.
void NcclLines::FollowVerbsFailure(std::string_view body) {
  if (CurrentWriter() != verbs_failure_->writer) return;
  std::string_view text = Trim(body);
  // Its other threads' lines may come between (the proxy thread warns, the main thread's
  // trace reaches init.cc): only so many of the process's lines are read.
  if (--verbs_failure_->lines_left <= 0) {
    verbs_failure_.reset();
    return;
  }
  bool trace = Contains(text, " -> ") && text.find(':') < text.find(" -> ");
  if (!trace || (!StartsWith(text, "init.cc:") && !StartsWith(text, "init.cu:") &&
                 !Contains(text, "/init.cc:") && !Contains(text, "/init.cu:"))) {
    return;
  }
  LogEvent& e = context_->event(verbs_failure_->event);
  e.kind = LogEventKind::kInitFailure;
  e.failed_step = Cat({"set up its InfiniBand/RoCE connections (", verbs_failure_->call, ")"});
  verbs_failure_.reset();
}

// "comm 0x55d0c8a0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 3b000 commId 0x1a2b - Init
// COMPLETE": which GPU (bus id) a process drives, and its rank in that communicator.
void NcclLines::OnInit(std::string_view line, std::string_view body) {
  LogEvent* e = context_->Emit(LogEventKind::kNcclInit, line);
  e->comm_rank = RankOrUnknown(IntAfter(body, " rank "));
  e->nranks = RankOrUnknown(IntAfter(body, " nranks "));  // a count of ranks
  int64_t dev = IntAfter(body, " cudaDev ");
  if (dev >= 0) e->cuda_dev = ToInt32(dev);
  e->bus_id = NormalizeBusId(WordAfter(body, " busId ", " "));
  e->comm_id = std::string(WordAfter(body, " commId ", " "));
}

// The address this host's NCCL bootstraps and connects from, which its peers' transport errors
// name: "Bootstrap : Using eth0:10.0.0.5<0>", "NET/Socket : Using [0]ib0:192.168.11.1<0>",
// "NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB enp220s0np0:11.1.128.136<0>".
void NcclLines::OnInterface(std::string_view line, std::string_view body) {
  // Newer NCCL writes "Bootstrap: Using enp39s0:10.0.10.226<0>", without the space.
  size_t at = body.find("; OOB ");
  if (at != std::string_view::npos) {
    at += 6;
  } else if (Contains(body, "Bootstrap") || Contains(body, "NET/Socket")) {
    at = body.find(": Using ") + 8;
  } else {
    return;
  }
  std::string_view rest = body.substr(at);
  if (ConsumeLiteral(&rest, "[")) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return;
    rest.remove_prefix(close + 1);
  }
  size_t colon = rest.find(':');
  size_t angle = rest.find('<');
  if (colon == std::string_view::npos || angle == std::string_view::npos || angle < colon) {
    return;
  }
  std::string_view address = rest.substr(colon + 1, angle - colon - 1);
  if (address.empty() || address.size() > 64) return;
  // An address of no known host says nothing about whose it is.
  if (context_->prefix().host.empty() && context_->file().host.empty()) return;
  LogEvent* e = context_->Emit(LogEventKind::kHostAddress, line);
  e->peer_address = std::string(address);
}

// "NCCL INFO NCCL version 2.22.3+cuda12.2": the release each process runs; hosts that run
// different ones cannot be trusted to agree on a protocol.
void NcclLines::OnVersion(std::string_view line, std::string_view body) {
  std::string_view version = WordAfter(body, "NCCL version ", " ");
  if (version.empty() || version.size() > 64 || !IsDigit(version[0])) return;
  if (context_->prefix().host.empty() && context_->file().host.empty()) return;
  context_->Emit(LogEventKind::kNcclVersion, line)->reason = std::string(version);
}

}  // namespace fr::logs_internal
