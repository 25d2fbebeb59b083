#include "fr/verdict/next_actions.h"

#include "fmt/format.h"
#include "fr/base/rank_set.h"

namespace fr {

std::vector<std::string> NextActions(const NextActionContext& c) {
  std::vector<std::string> actions;
  std::string who = c.culprits.empty() ? std::string("the culprit")
                                       : fmt::format("rank{} {}", c.culprits.size() > 1 ? "s" : "",
                                                     FormatRankSet(c.culprits));
  const FailureClass fc = c.failure_class;
  if (fc == FailureClass::kMissingParticipant && c.stop_explained) {
    // The logs' own steps for the way it died come first; the dumps add what they lacked.
    if (c.culprit_dump_missing) {
      actions.push_back(
          "Write dumps to shared storage (TORCH_FR_DUMP_TEMP_FILE on a network filesystem) so a "
          "crashed node's file survives.");
    }
  } else if (fc == FailureClass::kMissingParticipant && c.culprit_exited_cleanly) {
    actions.push_back(fmt::format(
        "Find the condition that ended {}'s training loop early while its peers went on: a data "
        "shard with fewer batches, a step or time budget computed per rank, a `return` or "
        "`break` on a rank-dependent value, an exception caught and followed by a normal exit.",
        who));
    actions.push_back(
        "Make every rank agree before any leaves: all_reduce the stop flag, give every rank the "
        "same number of batches (DistributedSampler with drop_last, or "
        "torch.distributed.algorithms.Join for uneven inputs).");
  } else if (fc == FailureClass::kMissingParticipant && c.culprit_dump_missing) {
    actions.push_back(fmt::format(
        "Find out why {} left no dump: look for a crash in its log (Python traceback, CUDA error, "
        "segfault), an OOM kill (dmesg) or a lost node.",
        who));
    actions.push_back(
        "Write dumps to shared storage (TORCH_FR_DUMP_TEMP_FILE on a network filesystem) so a "
        "crashed node's file survives.");
  } else if (fc == FailureClass::kMissingParticipant && c.culprit_waits_elsewhere) {
    actions.push_back(fmt::format(
        "Read {}'s stack in the evidence: it waits in a collective its peers never reach, so it "
        "took a branch they did not (a data shard with fewer batches that ends its epoch early, an "
        "early exit, a rank-dependent condition around a collective).",
        who));
    actions.push_back(
        "Make every rank run the same collectives in the same order: the same number of batches "
        "per rank (DistributedSampler with drop_last, or torch.distributed.algorithms.Join for "
        "uneven inputs), and no collective inside a condition that differs between ranks.");
  } else if (fc == FailureClass::kMissingParticipant) {
    actions.push_back(
        fmt::format("Read {}'s stack in the evidence: it is stuck outside communication (data "
                    "loading, checkpoint I/O, "
                    "a host sync) or took a data-dependent branch that skips the collective.",
                    who));
    actions.push_back(fmt::format(
        "Check {}'s log around the time of its last op for an exception caught and swallowed, "
        "and dump its Python threads (py-spy dump --pid) if the job is still up.",
        who));
  } else if (fc == FailureClass::kGpuStall) {
    actions.push_back(fmt::format(
        "{} enqueued the op but its GPU never started it: check that GPU (nvidia-smi, Xid errors "
        "in dmesg, ECC) and kernels still running before it on the stream (py-spy dump --native, "
        "cuda-gdb).",
        who));
  } else if (fc == FailureClass::kOpMismatch || fc == FailureClass::kSizeMismatch ||
             fc == FailureClass::kDtypeMismatch) {
    actions.push_back(fmt::format(
        "Look for rank-dependent control flow or shapes at the stack shown: uneven batches, "
        "dynamic shapes, a layer skipped on {}, or a different model/config version.",
        who));
    actions.push_back(
        "Set TORCH_DISTRIBUTED_DEBUG=DETAIL to make c10d check collective shapes on every call "
        "while reproducing.");
  } else if (fc == FailureClass::kP2pUnmatched) {
    actions.push_back(fmt::format(
        "{} never posted the matching send/recv: compare the pipeline schedule across stages "
        "(number of microbatches, warm-up/cool-down conditions, early exits).",
        who));
  } else if (fc == FailureClass::kStuckCollective) {
    actions.push_back(
        "Every member is inside the collective: suspect NCCL or the network. Run nccl-tests "
        "(all_reduce_perf) across the group's hosts and check NIC/InfiniBand link errors.");
    actions.push_back(
        "Rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=COLL,NET) and compare NCCL and driver "
        "versions across hosts.");
  } else if (fc == FailureClass::kInsufficientEvidence) {
    actions.push_back(fmt::format("Collect the dumps of ranks {} (or say why they are missing).",
                                  FormatRankSet(c.ranks_missing)));
  } else if (fc == FailureClass::kNone) {
    actions.push_back(
        "Nothing is stuck in c10d: if the job hung, the dumps may predate the hang, or the hang "
        "is outside collectives (py-spy dump every rank).");
  }
  if (c.has_stragglers) {
    actions.push_back(
        "Profile the straggler's host (CPU contention, data loader workers, thermal throttling, "
        "a slower NIC): it delays every collective it joins.");
  }
  if (!c.timing_known && c.timing_recordable && fc != FailureClass::kNone) {
    actions.push_back(
        "Set TORCH_NCCL_ENABLE_TIMING=1 next time: the dumps then show which ranks' GPUs started "
        "each op, separating a GPU stall from a transport stall.");
  }
  if (c.buffer_wrapped) {
    actions.push_back(
        "Entries rolled out of the ring buffers: raise TORCH_FR_BUFFER_SIZE (default 2000) to "
        "keep more history.");
  }
  if (!c.ranks_missing.empty() && fc != FailureClass::kInsufficientEvidence &&
      !c.culprit_dump_missing) {
    actions.push_back(
        fmt::format("Dumps of ranks {} are missing; adding them would firm up the "
                    "verdict.",
                    FormatRankSet(c.ranks_missing)));
  }
  return actions;
}

}  // namespace fr
