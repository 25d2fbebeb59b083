// What every rank of the simulated job runs: the op templates (profiling names, shapes, dtypes
// and the Megatron-LM stacks they were issued from) and each step's program of launches, a GPipe
// schedule of TP collectives, PP sends and recvs, the DP gradient sync and the world barrier.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fr/simulate/job_simulator_internal.h"

namespace fr::simulate_internal {
namespace {

// Frames of the stacks: a Megatron-LM pretraining script.
enum Frame : uint32_t {
  kFrameModule,
  kFramePretrain,
  kFrameTrain,
  kFrameTrainStep,
  kFrameSchedule,
  kFrameForwardStep,
  kFrameBackwardStep,
  kFrameCallImpl,
  kFrameWrappedCallImpl,
  kFrameAttention,
  kFrameMlp,
  kFrameMoe,
  kFrameTokenDispatch,
  kFrameAutogradApply,
  kFrameEngineRunBackward,
  kFrameTensorBackward,
  kFrameGatherFirstDim,
  kFrameReduceScatterFirstDim,
  kFrameCrossEntropy,
  kFrameCommunicate,
  kFrameP2pOps,
  kFrameBatchIsendIrecv,
  kFrameFinishGradSync,
  kFrameOptimizerStep,
  kFrameAllGatherParams,
  kFrameCoalescingManager,
  kFrameLogger,
  kFrameAllReduce,
  kFrameAllGatherIntoTensor,
  kFrameReduceScatterTensor,
  kFrameAllToAllSingle,
  kFrameIsend,
  kFrameIrecv,
  kFrameBarrier,
  kFrameCount,
};

std::vector<FrameSpec> MegatronFrames() {
  const std::string torch = "/usr/local/lib/python3.10/dist-packages/torch";
  const std::string c10d = torch + "/distributed/distributed_c10d.py";
  const std::string mcore = "/workspace/Megatron-LM/megatron/core";
  std::vector<FrameSpec> frames(kFrameCount);
  frames[kFrameModule] = {"<module>", "/workspace/Megatron-LM/pretrain_gpt.py", 278};
  frames[kFramePretrain] = {"pretrain", "/workspace/Megatron-LM/megatron/training/training.py",
                            386};
  frames[kFrameTrain] = {"train", "/workspace/Megatron-LM/megatron/training/training.py", 1411};
  frames[kFrameTrainStep] = {"train_step", "/workspace/Megatron-LM/megatron/training/training.py",
                             754};
  frames[kFrameSchedule] = {"forward_backward_pipelining_without_interleaving",
                            mcore + "/pipeline_parallel/schedules.py", 1629};
  frames[kFrameForwardStep] = {"forward_step", mcore + "/pipeline_parallel/schedules.py", 275};
  frames[kFrameBackwardStep] = {"backward_step", mcore + "/pipeline_parallel/schedules.py", 366};
  frames[kFrameCallImpl] = {"_call_impl", torch + "/nn/modules/module.py", 1747};
  frames[kFrameWrappedCallImpl] = {"_wrapped_call_impl", torch + "/nn/modules/module.py", 1736};
  frames[kFrameAttention] = {"forward", mcore + "/transformer/attention.py", 624};
  frames[kFrameMlp] = {"forward", mcore + "/transformer/mlp.py", 141};
  frames[kFrameMoe] = {"forward", mcore + "/transformer/moe/moe_layer.py", 206};
  frames[kFrameTokenDispatch] = {"token_permutation",
                                 mcore + "/transformer/moe/token_dispatcher.py", 549};
  frames[kFrameAutogradApply] = {"apply", torch + "/autograd/function.py", 575};
  frames[kFrameEngineRunBackward] = {"_engine_run_backward", torch + "/autograd/graph.py", 823};
  frames[kFrameTensorBackward] = {"backward", torch + "/autograd/__init__.py", 347};
  frames[kFrameGatherFirstDim] = {"_gather_along_first_dim", mcore + "/tensor_parallel/mappings.py",
                                  224};
  frames[kFrameReduceScatterFirstDim] = {"_reduce_scatter_along_first_dim",
                                         mcore + "/tensor_parallel/mappings.py", 272};
  frames[kFrameCrossEntropy] = {"forward", mcore + "/tensor_parallel/cross_entropy.py", 141};
  frames[kFrameCommunicate] = {"_communicate", mcore + "/pipeline_parallel/p2p_communication.py",
                               385};
  frames[kFrameP2pOps] = {"_p2p_ops", mcore + "/pipeline_parallel/p2p_communication.py", 239};
  frames[kFrameBatchIsendIrecv] = {"_batched_p2p_ops",
                                   mcore + "/pipeline_parallel/p2p_communication.py", 186};
  frames[kFrameFinishGradSync] = {"finish_grad_sync",
                                  mcore + "/distributed/param_and_grad_buffer.py", 498};
  frames[kFrameOptimizerStep] = {"step", mcore + "/optimizer/distrib_optimizer.py", 1715};
  frames[kFrameAllGatherParams] = {"start_param_sync",
                                   mcore + "/distributed/param_and_grad_buffer.py", 402};
  frames[kFrameCoalescingManager] = {"_coalescing_manager", c10d, 2357};
  frames[kFrameLogger] = {"wrapper", torch + "/distributed/c10d_logger.py", 81};
  frames[kFrameAllReduce] = {"all_reduce", c10d, 2501};
  frames[kFrameAllGatherIntoTensor] = {"all_gather_into_tensor", c10d, 3714};
  frames[kFrameReduceScatterTensor] = {"reduce_scatter_tensor", c10d, 4239};
  frames[kFrameAllToAllSingle] = {"all_to_all_single", c10d, 4470};
  frames[kFrameIsend] = {"isend", c10d, 2187};
  frames[kFrameIrecv] = {"irecv", c10d, 2244};
  frames[kFrameBarrier] = {"barrier", c10d, 4811};
  return frames;
}

}  // namespace

std::vector<uint32_t> Simulator::Stack(std::initializer_list<uint32_t> inner, bool backward) {
  std::vector<uint32_t> frames(inner);
  if (backward) {
    frames.insert(frames.end(),
                  {kFrameEngineRunBackward, kFrameTensorBackward, kFrameBackwardStep});
  } else {
    frames.insert(frames.end(), {kFrameCallImpl, kFrameWrappedCallImpl, kFrameForwardStep});
  }
  frames.insert(frames.end(),
                {kFrameSchedule, kFrameTrainStep, kFrameTrain, kFramePretrain, kFrameModule});
  return frames;
}

void Simulator::BuildTemplates() {
  state_->frames = MegatronFrames();
  const int64_t seq = 4096, hidden = 4096;
  const int64_t shard = std::max<int64_t>(seq / tp_, 1);
  const std::string bf16 = "BFloat16", f32 = "Float";
  auto collective = [&](int slot, std::string name, std::vector<int64_t> in,
                        std::vector<int64_t> out, const std::string& dtype,
                        std::vector<uint32_t> frames) {
    return AddTemplate({slot,
                        std::move(name),
                        "",
                        false,
                        {std::move(in)},
                        {std::move(out)},
                        {dtype},
                        {dtype},
                        std::move(frames),
                        0});
  };
  for (int dir = 0; dir < 2; ++dir) {
    bool bwd = dir == 1;
    // Sequence parallelism: gather the sequence shards before a block, scatter the sum after it.
    uint32_t block = bwd ? kFrameAutogradApply : kFrameCallImpl;
    ids_.ag_attn[dir] = collective(
        kTpSlot, "nccl:_all_gather_base", {shard, 1, hidden}, {shard * tp_, 1, hidden}, bf16,
        Stack(
            {kFrameAllGatherIntoTensor, kFrameLogger, kFrameGatherFirstDim, block, kFrameAttention},
            bwd));
    ids_.rs_attn[dir] = collective(kTpSlot, "nccl:_reduce_scatter_base", {shard * tp_, 1, hidden},
                                   {shard, 1, hidden}, bf16,
                                   Stack({kFrameReduceScatterTensor, kFrameLogger,
                                          kFrameReduceScatterFirstDim, block, kFrameAttention},
                                         bwd));
    ids_.ag_mlp[dir] = collective(
        kTpSlot, "nccl:_all_gather_base", {shard, 1, hidden}, {shard * tp_, 1, hidden}, bf16,
        Stack({kFrameAllGatherIntoTensor, kFrameLogger, kFrameGatherFirstDim, block, kFrameMlp},
              bwd));
    ids_.rs_mlp[dir] = collective(kTpSlot, "nccl:_reduce_scatter_base", {shard * tp_, 1, hidden},
                                  {shard, 1, hidden}, bf16,
                                  Stack({kFrameReduceScatterTensor, kFrameLogger,
                                         kFrameReduceScatterFirstDim, block, kFrameMlp},
                                        bwd));
  }
  // MoE token exchange: rank t sends base + 128 * ((t + r) % tp) tokens and receives
  // base + 128 * ((tp - 1 - t + r) % tp): uneven per rank, equal totals over the group.
  const int64_t base_tokens = 2048;
  for (int dir = 0; dir < 2; ++dir) {
    for (int kind = 0; kind < 2; ++kind) {
      for (int64_t t = 0; t < tp_; ++t) {
        for (int64_t r = 0; r < tp_; ++r) {
          int64_t in = base_tokens + 128 * ((t + r) % tp_);
          int64_t out = base_tokens + 128 * ((tp_ - 1 - t + r) % tp_);
          if (kind == 1) std::swap(in, out);  // combine returns what dispatch sent
          ids_.a2a.push_back(
              collective(kTpSlot, "nccl:all_to_all", {in, hidden}, {out, hidden}, bf16,
                         Stack({kFrameAllToAllSingle, kFrameLogger, kFrameTokenDispatch, kFrameMoe,
                                dir == 1 ? kFrameAutogradApply : kFrameCallImpl},
                               dir == 1)));
        }
      }
    }
  }
  ids_.loss_all_reduce = collective(
      kTpSlot, "nccl:all_reduce", {seq}, {seq}, f32,
      Stack({kFrameAllReduce, kFrameLogger, kFrameCrossEntropy, kFrameAutogradApply}, false));
  for (int64_t b = 0; b < o_.dp_buckets; ++b) {
    // Buckets of 40M +- a few elements, divisible by the DP size.
    int64_t shard_elems = (40'000'000 + 1'048'576 * b) / dp_;
    std::vector<uint32_t> grad_stack = {
        kFrameReduceScatterTensor, kFrameLogger, kFrameCoalescingManager, kFrameFinishGradSync,
        kFrameTrainStep,           kFrameTrain,  kFramePretrain,          kFrameModule};
    ids_.dp_reduce_scatter.push_back(collective(
        kDpSlot, "nccl:_reduce_scatter_base", {shard_elems * dp_}, {shard_elems}, f32, grad_stack));
    grad_stack[0] = kFrameAllReduce;
    ids_.dp_all_reduce.push_back(collective(kDpSlot, "nccl:all_reduce", {shard_elems * dp_},
                                            {shard_elems * dp_}, f32, grad_stack));
    ids_.dp_all_gather.push_back(collective(
        kDpSlot, "nccl:_all_gather_base", {shard_elems}, {shard_elems * dp_}, bf16,
        {kFrameAllGatherIntoTensor, kFrameLogger, kFrameCoalescingManager, kFrameAllGatherParams,
         kFrameOptimizerStep, kFrameTrainStep, kFrameTrain, kFramePretrain, kFrameModule}));
  }
  ids_.dp_end = AddTemplate({kDpSlot,
                             "nccl:coalesced",
                             "",
                             false,
                             {},
                             {},
                             {},
                             {},
                             {kFrameCoalescingManager, kFrameFinishGradSync, kFrameTrainStep,
                              kFrameTrain, kFramePretrain, kFrameModule},
                             0});
  ids_.barrier =
      collective(kWorldSlot, "nccl:all_reduce_barrier", {1}, {1}, f32,
                 {kFrameBarrier, kFrameLogger, kFrameTrain, kFramePretrain, kFrameModule});
  for (int64_t s = 0; s < pp_; ++s) {
    for (int dir = 0; dir < 2; ++dir) {
      // Forward activations flow to s + 1, gradients back to s - 1; names use PP-local ranks.
      int64_t to = dir == 0 ? s + 1 : s - 1;
      int64_t from = dir == 0 ? s - 1 : s + 1;
      std::vector<int64_t> shape = {seq, 1, hidden};
      std::vector<uint32_t> tail = {kFrameCommunicate, kFrameSchedule, kFrameTrainStep,
                                    kFrameTrain,       kFramePretrain, kFrameModule};
      auto stack = [&](uint32_t inner) {
        std::vector<uint32_t> f = {inner, kFrameLogger,
                                   o_.batched_p2p ? kFrameBatchIsendIrecv : kFrameP2pOps};
        f.insert(f.end(), tail.begin(), tail.end());
        return f;
      };
      ids_.send.push_back(AddTemplate({kPpSlot,
                                       fmt::format("nccl:send {}->{}", s, to),
                                       "",
                                       true,
                                       {shape},
                                       {shape},
                                       {bf16},
                                       {bf16},
                                       stack(kFrameIsend),
                                       0}));
      ids_.recv.push_back(AddTemplate({kPpSlot,
                                       fmt::format("nccl:recv {}<-{}", s, from),
                                       "",
                                       true,
                                       {shape},
                                       {shape},
                                       {bf16},
                                       {bf16},
                                       stack(kFrameIrecv),
                                       0}));
    }
  }
  ids_.p2p_end = AddTemplate({kPpSlot,
                              "nccl:coalesced",
                              "",
                              true,
                              {},
                              {},
                              {},
                              {},
                              {kFrameBatchIsendIrecv, kFrameCommunicate, kFrameSchedule,
                               kFrameTrainStep, kFrameTrain, kFramePretrain, kFrameModule},
                              0});
  state_->p2p_end_template = ids_.p2p_end;
}

void Simulator::BuildStep(int32_t rank, RankSim& rs) {
  const RankCoordinates c = Coord(rank);
  const int64_t s = c.pp_stage;
  const int64_t step = rs.step;
  std::vector<ProgramOp>& prog = rs.program;
  prog.clear();
  auto collective = [&](int slot, uint32_t id, int64_t gap) {
    ProgramOp op;
    op.slot = slot;
    op.entry_count = 1;
    op.entries[0] = id;
    op.gpu_gap_ns = gap;
    prog.push_back(op);
  };
  auto coalesced = [&](int slot, const std::vector<uint32_t>& ids, uint32_t end, int64_t gap) {
    ProgramOp op;
    op.slot = slot;
    for (uint32_t id : ids) op.entries[op.entry_count++] = id;
    op.entries[op.entry_count++] = end;
    op.gpu_gap_ns = gap;
    prog.push_back(op);
  };
  // A p2p launch: one op plain, two ops as a batch_isend_irecv. dir 0 = forward, 1 = backward.
  struct P2pSpec {
    bool is_send;
    int dir;
  };
  auto p2p = [&](std::initializer_list<P2pSpec> ops) {
    ProgramOp op;
    op.slot = kPpSlot;
    op.is_p2p = true;
    op.blocking = false;
    // Within a batch the order of sends and recvs is arbitrary; vary it by stage.
    std::vector<P2pSpec> ordered(ops);
    if (ordered.size() == 2 && s % 2 == 1) std::swap(ordered[0], ordered[1]);
    for (const P2pSpec& p : ordered) {
      int64_t peer = (p.is_send == (p.dir == 0)) ? s + 1 : s - 1;
      op.p2p[op.p2p_count++] = {p.is_send, peer};
      op.entries[op.entry_count++] =
          p.is_send ? ids_.send[s * 2 + p.dir] : ids_.recv[s * 2 + p.dir];
      op.blocking |= !p.is_send;
    }
    if (ordered.size() > 1) op.entries[op.entry_count++] = ids_.p2p_end;
    prog.push_back(op);
  };
  const bool has_tp = tp_ > 1, has_pp = pp_ > 1;
  const bool batched = o_.batched_p2p;
  const bool first = s == 0, last = s == pp_ - 1;
  const int64_t m_count = o_.microbatches, layers = o_.layers_per_stage;
  auto a2a = [&](int dir, int kind, int64_t rotation) {
    return ids_.a2a[((dir * 2 + kind) * tp_ + c.tp_index) * tp_ + rotation % tp_];
  };
  auto layer_ops = [&](int dir, int64_t m, int64_t l) {
    if (!has_tp) return;
    int64_t gap = dir == 0 ? kForwardGapNs : kBackwardGapNs;
    bool moe = o_.moe_every > 0 && (l + 1) % o_.moe_every == 0;
    auto attention = [&] {
      collective(kTpSlot, ids_.ag_attn[dir], gap);
      collective(kTpSlot, ids_.rs_attn[dir], gap);
    };
    auto mlp = [&] {
      if (moe) {
        int64_t rotation = step + m + l;
        collective(kTpSlot, a2a(dir, dir == 0 ? 0 : 1, rotation), gap);
        collective(kTpSlot, a2a(dir, dir == 0 ? 1 : 0, rotation), gap);
      } else {
        collective(kTpSlot, ids_.ag_mlp[dir], gap);
        collective(kTpSlot, ids_.rs_mlp[dir], gap);
      }
    };
    if (dir == 0) {
      attention();
      mlp();
    } else {
      mlp();
      attention();
    }
  };

  // Forward of every microbatch (fill), then backward (drain).
  for (int64_t m = 0; m < m_count; ++m) {
    if (has_pp && !first && (!batched || m == 0)) p2p({{false, 0}});
    for (int64_t l = 0; l < layers; ++l) layer_ops(0, m, l);
    if (last && has_tp) collective(kTpSlot, ids_.loss_all_reduce, kForwardGapNs);
    if (!has_pp) continue;
    bool send = !last;
    if (!batched) {
      if (send) p2p({{true, 0}});
    } else if (m + 1 < m_count) {
      // send_forward_recv_forward: this microbatch out, the next one in.
      if (send && !first) {
        p2p({{true, 0}, {false, 0}});
      } else if (send) {
        p2p({{true, 0}});
      } else if (!first) {
        p2p({{false, 0}});
      }
    } else if (send) {
      // send_forward_recv_backward at the turn from forward to backward.
      p2p({{true, 0}, {false, 1}});
    }
  }
  for (int64_t m = 0; m < m_count; ++m) {
    if (has_pp && !last && (!batched ? true : false)) p2p({{false, 1}});
    for (int64_t l = layers; l-- > 0;) layer_ops(1, m, l);
    if (!has_pp) continue;
    bool send = !first;
    if (!batched) {
      if (send) p2p({{true, 1}});
    } else if (m + 1 < m_count) {
      if (send && !last) {
        p2p({{true, 1}, {false, 1}});
      } else if (send) {
        p2p({{true, 1}});
      } else if (!last) {
        p2p({{false, 1}});
      }
    } else if (send) {
      p2p({{true, 1}});
    }
  }
  if (dp_ > 1) {
    if (o_.dp_reduce_scatter) {
      coalesced(kDpSlot, ids_.dp_reduce_scatter, ids_.dp_end, kBackwardGapNs);
      coalesced(kDpSlot, ids_.dp_all_gather, ids_.dp_end, kOptimizerGapNs);
    } else {
      coalesced(kDpSlot, ids_.dp_all_reduce, ids_.dp_end, kBackwardGapNs);
    }
  }
  if (o_.barrier_every > 0 && world_ > 1 && (step + 1) % o_.barrier_every == 0) {
    collective(kWorldSlot, ids_.barrier, 0);
  }
  if (o_.fault.kind == FaultKind::kStraggler && rank == o_.fault.rank && !prog.empty()) {
    // A slow input pipeline delays the rank's first kernel of every step.
    prog[0].gpu_gap_ns += static_cast<int64_t>(o_.fault.straggler_delay_ms * kMs);
  }
}

}  // namespace fr::simulate_internal
