#include "fr/logs/line_table.h"

namespace fr::logs_internal {
namespace {

// The family a recognizer (a member function pointer) belongs to.
template <typename Recognizer>
struct FamilyOf;
template <typename Family>
struct FamilyOf<bool (Family::*)(std::string_view, std::string_view)> {
  using Type = Family;
};

}  // namespace

LineFamilies::LineFamilies(LineContext* context)
    : process_group_nccl_(context),
      nccl_(context),
      kernel_(context),
      slurm_(context),
      store_(context),
      torchrun_(context),
      deepspeed_(context),
      ray_(context),
      open_mpi_(context),
      python_(context, &ray_) {}

template <auto kRecognizer>
bool LineFamilies::Call(LineFamilies& families, std::string_view line, std::string_view body) {
  using Family = typename FamilyOf<decltype(kRecognizer)>::Type;
  return (families.Get<Family>().*kRecognizer)(line, body);
}

void LineFamilies::HandleLine(std::string_view line, std::string_view body) {
  // What began on earlier lines comes first: a line that belongs to an open error table or to a
  // traceback is theirs alone.
  if (torchrun_.in_table() && torchrun_.TableLine(body)) return;
  if (python_.FollowTraceback(line, body)) return;
  python_.NoteLineOfWriter(body);
  if (nccl_.FollowLastError(line, body)) return;
  // NCCL's own lines, by their level: no needle below is about them.
  if (nccl_.OnLeveledLine(line, body)) return;
  Dispatch(line, body);
}

void LineFamilies::Finish() {
  torchrun_.FlushTable();
  python_.Finish();
}

void LineFamilies::Dispatch(std::string_view line, std::string_view body) {
  struct Pattern {
    std::string_view needle;
    bool (*recognize)(LineFamilies& families, std::string_view line, std::string_view body);
  };
  // The pattern table: the first row whose needle occurs in the body and whose recognizer
  // accepts the line makes the line's one event. Order matters where needles overlap (the
  // comments say which), so each family's rows stand where its needles must come, not together:
  // a new row goes where no earlier needle takes its lines and it takes no later row's. Most
  // lines match no needle, and cost one memmem per row.
  static constexpr Pattern kPatterns[] = {
      // The fault an NCCL error quotes, before the words of the error that quotes it.
      {"Last error:", Call<&NcclLines::OnLastError>},
      // Torch's cascade, in the order ProcessGroupNCCL prints it.
      {"Watchdog caught collective operation timeout",
       Call<&ProcessGroupNcclLines::OnWatchdogTimeout>},
      {"Some NCCL operations have failed or timed out",
       Call<&ProcessGroupNcclLines::OnWatchdogTimeout>},
      {"Heartbeat monitor timed out", Call<&ProcessGroupNcclLines::OnWatchdogStuck>},
      {"watchdog got stuck", Call<&ProcessGroupNcclLines::OnWatchdogStuck>},
      {" signal ", Call<&ProcessGroupNcclLines::OnDumpSignal>},
      {" work: ", Call<&ProcessGroupNcclLines::OnWorkTimeoutSeqs>},
      {"taking the entire process down", Call<&ProcessGroupNcclLines::OnProcessTakenDown>},
      {"Detected mismatch between collectives", Call<&ProcessGroupNcclLines::OnCollectiveMismatch>},
      // Hosts and schedulers (srun's "task 3: Segmentation fault" is its report on the task:
      // before the worker's own segfault).
      {"NVRM: Xid", Call<&KernelLines::OnXid>},
      {"Killed process ", Call<&KernelLines::OnHostOom>},
      {"oom-kill:", Call<&KernelLines::OnHostOom>},
      {"srun: error: ", Call<&SlurmLines::OnSrunTask>},
      {"oom_kill event", Call<&SlurmLines::OnSlurmOom>},
      {"oom-kill event", Call<&SlurmLines::OnSlurmOom>},
      {"CANCELLED AT ", Call<&SlurmLines::OnSlurmCancel>},
      // The job never forming.
      {"The client socket has ", Call<&StoreLines::OnStoreUnreachable>},
      {"failed to connect/validate to host", Call<&StoreLines::OnStoreUnreachable>},
      {"store based barrier", Call<&StoreLines::OnStoreBarrier>},
      {"server socket has failed to listen", Call<&StoreLines::OnStoreListenFailure>},
      {"Duplicate GPU detected", Call<&NcclLines::OnDuplicateGpu>},
      {"ncclSocketInit", Call<&NcclLines::OnSocketInit>},
      // Torchrun's agent.
      {"failed (exitcode: ", Call<&TorchrunLines::OnWorkerFailed>},
      {"closing signal ", Call<&TorchrunLines::OnSignalSent>},
      {" death signal", Call<&TorchrunLines::OnLauncherSignalled>},
      {"Rendezvous complete", Call<&TorchrunLines::OnRendezvous>},
      {"Setting OMP_NUM_THREADS environment variable", Call<&TorchrunLines::OnLauncherStart>},
      // DeepSpeed's launcher.
      {"exits with return code = ", Call<&DeepSpeedLines::OnDeepSpeedExit>},
      {"Killing subprocess ", Call<&DeepSpeedLines::OnDeepSpeedKill>},
      {"deepspeed.launcher.launch", Call<&DeepSpeedLines::OnDeepSpeedCommand>},
      // The kernel's boot clock.
      {"setting system clock to ", Call<&KernelLines::OnBootClock>},
      // Torchrun's error table begins (its next lines: TorchrunLines::TableLine).
      {"Root Cause (first observed failure)", Call<&TorchrunLines::OnTableStart>},
      {"Failures:", Call<&TorchrunLines::OnTableStart>},
      {"(local_rank: ", Call<&TorchrunLines::OnHeadlessTableEntry>},
      // Transport seen by a victim, and transport faults.
      {"remote process exited", Call<&NcclLines::OnRemotePeerGone>},
      {"ncclRemoteError", Call<&NcclLines::OnRemotePeerGone>},
      {"ncclSystemError", Call<&NcclLines::OnTransportError>},
      {"unhandled system error", Call<&NcclLines::OnTransportError>},
      // The worker's own faults ("CUDA error: out of memory" is an OOM).
      {"out of memory", Call<&PythonLines::OnCudaOom>},
      {"CUDA error", Call<&PythonLines::OnCudaError>},
      {"illegal memory access", Call<&PythonLines::OnCudaError>},
      {"device-side assert", Call<&PythonLines::OnCudaError>},
      {"unhandled cuda error", Call<&PythonLines::OnCudaError>},
      // Ray: a worker process that died (before the SIGSEGV of its stock advice).
      {"Worker exit type: ", Call<&RayLines::OnRayWorkerExit>},
      // Open MPI's mpirun (before the "(Segmentation fault)" of the signal it names).
      {"mpirun noticed that process rank ", Call<&OpenMpiLines::OnMpirunNoticed>},
      {"Process name: [[", Call<&OpenMpiLines::OnMpiProcessName>},
      {"Exit code:", Call<&OpenMpiLines::OnMpiExitCode>},
      // The worker's own crash, and its loss ("oss" rejects most lines; OnLoss looks closer).
      // A crash handler's report names its signal ("Caught signal 11 (Segmentation fault: ...)").
      {"Caught signal ", Call<&PythonLines::OnCaughtSignal>},
      {"op.preamble.length <= op.nbytes", Call<&PythonLines::OnGlooSizeMismatch>},
      {"Segmentation fault", Call<&PythonLines::OnSegfault>},
      {"SIGSEGV", Call<&PythonLines::OnSegfault>},
      {"by peer [", Call<&PythonLines::OnBareException>},
      {"Read error [", Call<&PythonLines::OnBareException>},
      {"Write error [", Call<&PythonLines::OnBareException>},
      {"Timed out waiting ", Call<&PythonLines::OnBareException>},
      {"FloatingPointError: ", Call<&PythonLines::OnBareException>},
      {"RayTaskError(", Call<&PythonLines::OnRayTaskError>},
      {"oss", Call<&PythonLines::OnLoss>},
  };
  for (const Pattern& pattern : kPatterns) {
    if (body.find(pattern.needle) != std::string_view::npos &&
        pattern.recognize(*this, line, body)) {
      return;
    }
  }
}

}  // namespace fr::logs_internal
