#!/usr/bin/env python3
"""logsim: write the logs of a whole (simulated) distributed PyTorch job, plus the truth.

A job is N ranks on hosts node000.. with G GPUs each. One fault is injected; the cascade that
follows it (NCCL watchdog timeouts, aborts, torchrun / srun reports, kernel messages) is written
in the line formats real PyTorch, NCCL, torchrun, Slurm and the Linux kernel print (see README.md
for where each format was taken from). Every host prints times in its own skewed, drifting clock.
`expected.json` records what was injected: the analyzer under test must find it from the text.

Standard library only. Deterministic for a given seed and arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
from datetime import datetime, timedelta

FAULTS = ("xid", "host_oom", "cuda_oom", "host_kill", "transport_error", "python_exception",
          "cuda_error", "segfault", "collective_timeout", "unknown", "none")
LAYOUTS = ("torchrun_logdir", "per_rank", "slurm_combined", "per_host", "pasted")
TRAPS = ("skew_points_at_victim", "many_victims", "xid_bus_id_only", "second_unrelated_error",
         "midnight_crossing", "year_crossing", "drift", "root_cause_table_names_victim")
KERNEL_STYLES = ("dmesg", "dmesg_T", "kern.log", "journal")
TORCH_VERSIONS = ("1.13", "2.1", "2.3", "2.4", "2.6", "2.8")
TIMESTAMPED_TORCH = ("2.3", "2.4", "2.6", "2.8")   # versions whose c10 lines carry a glog time
EARLY_EXIT = ("host_oom", "cuda_oom", "python_exception", "cuda_error", "segfault",
              "transport_error", "unknown")

# PCI bus ids of the 8 GPU slots of an HGX-style board (domain:bus:device).
BUS_IDS = ("0000:18:00", "0000:2a:00", "0000:3a:00", "0000:5d:00",
           "0000:9a:00", "0000:ab:00", "0000:ba:00", "0000:db:00")

# Per PyTorch generation: NCCL version shipped, source line of the watchdog message, and the
# shape of the surrounding lines.
TORCH = {
    "1.13": dict(nccl="2.14.3", wd_line=737, rank_tag=False, ts=False, numel=False,
                 status=None, pg_style=None, dump=False, agent="plain", tee="default"),
    "2.1": dict(nccl="2.18.1", wd_line=475, rank_tag=False, ts=False, numel=True,
                status=None, pg_style=None, dump=False, agent="bracket", tee="default"),
    "2.3": dict(nccl="2.20.5", wd_line=565, rank_tag=True, ts=True, numel=True,
                status="timeout_at", pg_style="short", dump=False, agent="bracket", tee="rank"),
    "2.4": dict(nccl="2.20.5", wd_line=607, rank_tag=True, ts=True, numel=True,
                status="exception+timeout_at", pg_style="desc", dump=True, agent="glog",
                tee="rank"),
    "2.6": dict(nccl="2.21.5", wd_line=616, rank_tag=True, ts=True, numel=True,
                status="exception", pg_style="guid", dump=True, agent="glog", tee="rank"),
    "2.8": dict(nccl="2.26.2", wd_line=632, rank_tag=True, ts=True, numel=True,
                status="failure_detected", pg_style="guid", dump=True, agent="glog",
                tee="rank"),
}

EPOCH = datetime(1970, 1, 1)
PY = "/usr/local/lib/python3.11/site-packages"
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _dt(x):
    return EPOCH + timedelta(seconds=x)


def _iso(x):
    d = _dt(x)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def _ranges(nums):
    """[0,1,2,5] -> '0-2,5' (srun's task list notation)."""
    out, start, prev = [], None, None
    for n in sorted(nums):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(out)


class Host:
    def __init__(self, idx, name, off, drift, boot, pid_base, ip):
        self.idx, self.name, self.off, self.drift = idx, name, off, drift
        self.boot, self.pid_base, self.ip = boot, pid_base, ip


class Sim:
    """One simulated job. Build with the arguments, call run()."""

    culprit_rank = None  # set to choose the faulty rank instead of drawing it

    def __init__(self, out_dir, ranks, fault, layout, seed, gpus_per_host=8, skew_ms_max=90000,
                 drift_ppm_max=50, nccl_info=False, bytes_target=0, traps=(), torch_version=None,
                 kernel_log=None, timeout_ms=None):
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}; one of {LAYOUTS}")
        traps = sorted(set(traps))
        for t in traps:
            if t not in TRAPS:
                raise ValueError(f"unknown trap {t!r}; one of {TRAPS}")
        if fault == "xid" and "xid_bus_id_only" not in traps:
            traps.append("xid_bus_id_only")
            traps.sort()
        if ranks < 1 or gpus_per_host < 1:
            raise ValueError("ranks and gpus_per_host must be positive")
        self.out, self.N, self.fault, self.layout = out_dir, ranks, fault, layout
        self.seed, self.G, self.traps = seed, gpus_per_host, traps
        self.skew_max, self.drift_max = skew_ms_max / 1000.0, drift_ppm_max
        self.nccl_info, self.bytes_target = nccl_info or bytes_target > 0, int(bytes_target)
        self.rng = random.Random(f"logsim:{seed}:{ranks}:{fault}:{layout}:{gpus_per_host}:"
                                 f"{','.join(traps)}")
        r = self.rng
        self.tv = torch_version or r.choice(TIMESTAMPED_TORCH)
        if self.tv not in TORCH:
            raise ValueError(f"unknown torch version {self.tv!r}; one of {TORCH_VERSIONS}")
        self.T = TORCH[self.tv]
        self.kstyle = kernel_log or r.choice(KERNEL_STYLES)
        if self.kstyle not in KERNEL_STYLES:
            raise ValueError(f"unknown kernel log style {self.kstyle!r}")
        self.timeout_ms = timeout_ms or r.choice((600000, 1800000))
        if "skew_points_at_victim" in traps and timeout_ms is None and fault not in EARLY_EXIT:
            self.timeout_ms = 60000     # short enough that a skewed clock can invert the order
        self.job_id = r.randint(100000, 9999999)
        self._k = 0
        self.trap = lambda name: name in self.traps

    # ---------------------------------------------------------------- clocks and formats

    def loc(self, h, t):
        return t + h.off + h.drift * (t - self.t0)

    def glog_c10(self, h, t, lvl="E"):
        x = self.loc(h, t)
        s = math.floor(x)
        d = _dt(s)
        return f"{lvl}{d.month}{d.day:02d} {d:%H:%M:%S}.{int((x - s) * 1e9):09d}"

    def c10(self, h, r, t, lvl, src, msg):
        """A line printed by PyTorch's C++ logging (ProcessGroupNCCL.cpp and friends)."""
        if self.T["ts"]:
            return f"[rank{r}]:[{self.glog_c10(h, t, lvl)} {src}] {msg}"
        if self.T["rank_tag"]:
            return f"[rank{r}]:[{lvl} {src}] {msg}"
        return f"[{lvl} {src}] {msg}"

    def pyprefix(self, r):
        return f"[rank{r}]: " if self.T["rank_tag"] else ""

    def agent_line(self, h, t, lvl, src, msg):
        """A line of the torchrun agent's Python logging, in this generation's format."""
        x = self.loc(h, t)
        s = math.floor(x)
        d = _dt(s)
        ms = int((x - s) * 1000)
        mod = src.split(":")[0][:-3].replace("/", ".")
        lname = {"W": "WARNING", "E": "ERROR", "I": "INFO"}[lvl]
        style = self.T["agent"]
        if style == "plain":
            return f"{lname}:{mod}:{msg}"
        if style == "bracket":
            return f"[{d:%Y-%m-%d %H:%M:%S},{ms:03d}] {mod}: [{lname}] {msg}"
        return (f"{lvl}{d.month:02d}{d.day:02d} {d:%H:%M:%S}.{ms * 1000:06d} "
                f"{h.pid_base - 7} {src}] {msg}")

    def kernel(self, h, t, msg):
        x = self.loc(h, t)
        st = self.kstyle
        if st == "dmesg":
            up = x - self.loc(h, h.boot)
            return f"[{int(up):5d}.{int((up % 1) * 1e6):06d}] {msg}"
        d = _dt(math.floor(x))
        if st == "dmesg_T":
            return f"[{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}] {msg}"
        if st == "kern.log":
            up = x - self.loc(h, h.boot)
            return (f"{MONTHS[d.month - 1]} {d.day:2d} {d:%H:%M:%S} {h.name} kernel: "
                    f"[{int(up):5d}.{int((up % 1) * 1e6):06d}] {msg}")
        return f"{d:%Y-%m-%dT%H:%M:%S}+00:00 {h.name} kernel: {msg}"

    def pg_tag(self, pg, grank):
        st = self.T["pg_style"]
        pid, guid, desc = pg["id"], pg["guid"], pg["desc"]
        if st is None:
            return f"[Rank {grank}]"
        if st == "short":
            return f"[PG {pid} Rank {grank}]"
        if st == "desc":
            return f"[PG {pid}{f' ({desc})' if desc == 'default_pg' else ''} Rank {grank}]"
        return f"[PG ID {pid} PG GUID {guid}{f'({desc})' if desc else ''} Rank {grank}]"

    def work(self, seq, op, numel, timeout_ms):
        if self.T["numel"]:
            return (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
                    f"Timeout(ms)={timeout_ms})")
        return f"WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)={timeout_ms})"

    # ---------------------------------------------------------------- event plumbing

    def k(self):
        self._k += 1
        return self._k

    def rev(self, r, t, text, stream="err", tags=None):
        """An event on rank r's own output: (time, order, stream, text, tags)."""
        self.rank_ev[r].append((t, self.k(), stream, text, tags))

    def aev(self, h, t, text, tags=None):
        self.agent_ev[h.idx].append((t, self.k(), "err", text, tags))

    def kev(self, h, t, msg, tags=None):
        self.kern_ev[h.idx].append((t, self.k(), "err", self.kernel(h, t, msg), tags))

    def sev(self, t, text, tags=None):
        self.slurm_ev.append((t, self.k(), "err", text, tags))

    def nccl(self, r, tid_off=0):
        h = self.host_of(r)
        L = r % self.G
        return f"{h.name}:{self.pid[r]}:{self.pid[r] + 40 + tid_off} [{L}]"

    def host_of(self, r):
        return self.hosts[r // self.G]

    # ---------------------------------------------------------------- the job

    def run(self):
        r = self.rng
        self.H = (self.N + self.G - 1) // self.G
        # Start time: a weekday morning of 2025, or just before midnight/new year for the traps.
        if self.trap("year_crossing"):
            base = datetime(2025, 12, 31, 0, 0, 0)
        else:
            base = datetime(2025, 1, 6) + timedelta(days=r.randint(0, 300))
        base_t = (base - EPOCH).total_seconds()
        long_job = self.trap("drift")
        duration = r.uniform(3.0, 4.5) * 86400 if long_job else r.uniform(1.0, 3.0) * 3600
        if self.trap("midnight_crossing") or self.trap("year_crossing"):
            midnight = base_t + 86400
            # the watchdog lines land within a minute after local midnight on some hosts
            t_wd = midnight + r.uniform(5.0, 40.0)
            self.t_fault = t_wd - self.timeout_ms / 1000.0 - 0.8
            self.t0 = self.t_fault - duration
        else:
            self.t0 = base_t + r.uniform(6, 12) * 3600
            self.t_fault = self.t0 + duration
        # Hosts and their clocks.
        self.hosts = []
        dmax = self.drift_max
        for i in range(self.H):
            off = r.uniform(-self.skew_max, self.skew_max)
            drift = (r.choice((-1, 1)) * r.uniform(0.6, 1.0) * dmax if long_job
                     else r.uniform(-dmax, dmax)) * 1e-6
            boot = self.t0 - r.uniform(2, 40) * 86400
            self.hosts.append(Host(i, f"node{i:03d}", off, drift, boot,
                                   r.randint(20000, 3900000),
                                   f"10.{(i // 250) % 256}.{i % 250}.{r.randint(10, 250)}"))
        self.ctl_off = r.uniform(-self.skew_max / 4, self.skew_max / 4)
        self.bus = list(BUS_IDS[:self.G]) + [f"0000:{0xc0 + i:02x}:00" for i in range(8, self.G)]
        self.pid = [self.hosts[i // self.G].pid_base + (i % self.G) * 3 for i in range(self.N)]
        self.rank_ev = [[] for _ in range(self.N)]
        self.agent_ev = [[] for _ in range(self.H)]
        self.kern_ev = [[] for _ in range(self.H)]
        self.slurm_ev = []
        self.truth_ev = []     # (key, text-substring) for lines used as evidence
        self.exit = {}         # rank -> (true time, exitcode) for processes ending by themselves
        self.table_roots = []
        self.distractors = []
        self.use_torchrun = self.layout != "slurm_combined"
        self.pgs = [dict(id=0, guid=0, desc="default_pg", ranks=list(range(self.N)))]
        if self.N > self.G:
            self.pgs.append(dict(id=1, guid=1, desc="TP", ranks="per host"))
            self.pgs.append(dict(id=2, guid=3, desc="DP", ranks="same local rank"))
        self.op = r.choice(("ALLREDUCE", "ALLREDUCE", "_REDUCE_SCATTER_BASE", "_ALLGATHER_BASE"))
        self.numel = r.choice((26214400, 466119168, 9801523, 544997376))
        self.step_s = r.uniform(0.8, 2.5)
        self.per_step = r.choice((2, 3, 4))
        n_steps = int(duration / self.step_s)
        self.n_steps = n_steps
        self.seq_fault = 1 + n_steps * self.per_step + 1   # the collective the culprit never joins
        self.culprits = self.pick_culprits()
        self.boot_lines()
        self.startup()
        self.training()
        if self.fault == "none":
            self.healthy_end()
        else:
            self.inject()
            if self.fault != "host_kill":
                self.cascade()
            self.launcher_reaction()
        if self.trap("second_unrelated_error") and self.fault != "none":
            self.distractor()
        self.kernel_noise()
        return self.write()

    def pick_culprits(self):
        r = self.rng
        if self.fault in ("host_kill", "none"):
            return []
        if self.culprit_rank is not None:
            # Chosen by the caller: logs to put beside dumps whose culprit is this rank.
            return [self.culprit_rank]
        cands = list(range(self.N))
        if self.trap("root_cause_table_names_victim") and self.G > 1:
            cands = [x for x in cands if x % self.G != 0]
        return [r.choice(cands)]

    # ---------------------------------------------------------------- phases

    def boot_lines(self):
        for h in self.hosts:
            b = h.boot
            self.kev(h, b, "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) "
                           "(gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0) #115-Ubuntu SMP")
            rtc = _dt(math.floor(self.loc(h, b + 1.7)))
            self.kev(h, b + 1.7, f"rtc_cmos 00:04: setting system clock to "
                                 f"{rtc:%Y-%m-%dT%H:%M:%S} UTC "
                                 f"({int((rtc - EPOCH).total_seconds())})")
            self.kev(h, b + 21.3, "nvidia: loading out-of-tree module taints kernel.")
            self.kev(h, b + 21.9, "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  "
                                  "Fri May 31 09:35:42 UTC 2024")
            for i in range(min(self.G, 8)):
                self.kev(h, b + 24 + i * 0.01, f"mlx5_core 0000:{0x1c + 0x20 * i:02x}:00.0: "
                                               f"mlx5_ib{i}: Port: 1 Link ACTIVE")

    def startup(self):
        r, T = self.rng, self.T
        t0 = self.t0
        for h in self.hosts:
            if self.use_torchrun:
                t = t0 + r.uniform(0, 2)
                src = "torch/distributed/run.py:793"
                banner = "*" * 41
                msg = ("Setting OMP_NUM_THREADS environment variable for each process to be 1 "
                       "in default, to avoid your system being overloaded, please further tune "
                       "the variable for optimal performance in your application as needed. ")
                lines = [self.agent_line(h, t, "W", src, x) for x in ("", banner, msg, banner)]
                self.aev(h, t, "\n".join(lines))
        nv = T["nccl"]
        self.comm = {}
        cid = r.getrandbits(64)
        for rank in range(self.N):
            h, L = self.host_of(rank), rank % self.G
            t = t0 + 20 + r.uniform(0, 6)
            p = self.nccl(rank)
            bus = self.bus[L][5:7] + "000"
            comm = 0x550000000000 + r.getrandbits(36) * 16
            self.comm[rank] = comm
            lines = [f"{p} NCCL INFO Bootstrap : Using eth0:{h.ip}<0>",
                     f"{p} NCCL INFO cudaDriverVersion 12040"]
            if rank == 0:
                lines.append(f"NCCL version {nv}+cuda12.4")
            lines.append(f"{p} NCCL INFO NET/IB : Using [0]mlx5_{L}:1/IB [RO]; OOB eth0:{h.ip}<0>")
            lines.append(f"{p} NCCL INFO Using network IB")
            lines.append(self.init_line(p, comm, rank, self.N, L, bus, cid, "Init START"))
            if self.nccl_info:
                lines += [f"{p} NCCL INFO Channel {c:02d}/{self.N // 2 if self.N > 1 else 1} :"
                          f"    {' '.join(str((rank + j) % self.N) for j in range(6))}"
                          for c in range(4)]
                lines.append(f"{p} NCCL INFO Connected all rings")
                lines.append(f"{p} NCCL INFO Connected all trees")
            lines.append(self.init_line(p, comm, rank, self.N, L, bus, cid, "Init COMPLETE"))
            self.rev(rank, t, "\n".join(lines), "out",
                     tags=[(f"init:{rank}", len(lines) - 1)])
            if self.N > self.G:   # the TP communicator of this host: group ranks, not global
                tp_cid = (cid ^ (h.idx * 0x9E3779B97F4A7C15)) & ((1 << 64) - 1)
                tcomm = 0x550000000000 + r.getrandbits(36) * 16
                nloc = min(self.G, self.N - h.idx * self.G)
                self.rev(rank, t + 1.5 + r.uniform(0, 0.5),
                         self.init_line(p, tcomm, L, nloc, L, bus, tp_cid, "Init COMPLETE"), "out")

    def init_line(self, p, comm, rank, nranks, dev, bus, cid, what):
        nv = self.T["nccl"]
        if nv.startswith("2.14"):
            return f"{p} NCCL INFO comm {comm:#x} rank {rank} nranks {nranks} cudaDev {dev} " \
                   f"busId {bus} - {what}"
        pre = "ncclCommInitRankConfig " if nv.startswith("2.26") else ""
        return (f"{p} NCCL INFO {pre}comm {comm:#x} rank {rank} nranks {nranks} cudaDev {dev} "
                f"nvmlDev {dev} busId {bus} commId {cid:#018x} - {what}")

    def training(self):
        """Progress lines of rank 0 and, with --nccl-info, NCCL chatter to reach --bytes-target."""
        r = self.rng
        h0 = self.hosts[0]
        t_start = self.t0 + 40
        t_end = self.t_fault if self.fault != "none" else self.t_fault
        every = max(10, self.n_steps // 400)
        total = self.n_steps * 3
        loss = 9.5
        for it in range(every, self.n_steps + 1, every):
            t = t_start + it * self.step_s
            if t >= t_end:
                break
            loss = max(1.2, loss * 0.995 + r.uniform(-0.02, 0.02))
            d = _dt(self.loc(h0, t))
            self.rev(0, t, f" [{d:%Y-%m-%d %H:%M:%S}] iteration {it:>8}/{total:>8} | "
                           f"elapsed time per iteration (ms): {self.step_s * 1000:.1f} | "
                           f"learning rate: {3e-4 * min(1, it / 2000):.6E} | "
                           f"lm loss: {loss:.6E} | loss scale: 1.0 | "
                           f"grad norm: {r.uniform(0.2, 3):.3f} |", "out")
        if self.nccl_info and self.bytes_target > 0:
            per_rank = self.bytes_target / self.N
            line_len = len(self.chatter(0, 0, 1, ""))
            nlines = max(1, int(per_rank / line_len))
            blocks = 64 if nlines >= 64 else 1
            per = nlines // blocks
            extra = nlines - per * blocks
            for rank in range(self.N):
                start = 0
                for b in range(blocks):
                    n = per + (1 if b < extra else 0)
                    t = t_start + (t_end - t_start - 5) * (b + 0.5) / blocks
                    self.rank_ev[rank].append((t, self.k(), "out", ("chat", rank, start, n), None))
                    start += n

    def chatter(self, rank, start, n, prefix):
        """NCCL INFO lines of NCCL_DEBUG_SUBSYS=COLL (one per collective), built in bulk."""
        p = prefix + self.nccl(rank, 1)
        comm = self.comm.get(rank, 0x551234560000)
        tmpl = (f"{p} NCCL INFO AllReduce: opCount %x sendbuff 0x7f3a2c000000 recvbuff "
                f"0x7f3a2c000000 count {self.numel} datatype 9 op 0 root 0 comm {comm:#x} "
                f"[nranks={self.N}] stream 0x55d1e3a4b6c0\n")
        return "".join([tmpl % i for i in range(start, start + n)])

    # ---------------------------------------------------------------- the fault itself

    def traceback(self, rank, t, frames, exc_lines, tag):
        pp = self.pyprefix(rank)
        lines = [f"{pp}Traceback (most recent call last):"]
        for f, ln, fn, code in frames:
            lines.append(f'{pp}  File "{f}", line {ln}, in {fn}')
            lines.append(f"{pp}    {code}")
        lines += [pp + x for x in exc_lines]
        self.rev(rank, t, "\n".join(lines), "err", tags=[(tag, len(lines) - len(exc_lines))])

    def inject(self):
        r, f = self.rng, self.fault
        tf = self.t_fault
        c = self.culprits[0] if self.culprits else None
        h = self.host_of(c) if c is not None else None
        train = [("/workspace/train.py", 412, "<module>", "main()"),
                 ("/workspace/train.py", 388, "main", "loss = train_step(model, batch)")]
        self.evid = []
        if f == "xid":
            bus = self.bus[c % self.G]
            who = "pid='<unknown>', name=<unknown>" if self.trap("xid_bus_id_only") \
                else f"pid={self.pid[c]}, name=pt_main_thread"
            uuid = "GPU-%08x-%04x-%04x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16),
                                                     r.getrandbits(16), r.getrandbits(16),
                                                     r.getrandbits(48))
            self.kev(h, tf, f"NVRM: GPU at PCI:{bus}: {uuid}")
            self.kev(h, tf + 0.000004, f"NVRM: GPU Board Serial Number: {r.randint(10**12, 10**13)}")
            self.kev(h, tf + 0.000008, f"NVRM: Xid (PCI:{bus}): 79, {who}, GPU has fallen off "
                                       f"the bus.", tags=[("evidence", 0)])
            self.evid.append(("kernel", h.idx, f"NVRM: Xid (PCI:{bus}): 79"))
            self.kev(h, tf + 0.000012, f"NVRM: GPU {bus}.0: GPU has fallen off the bus.")
            # the culprit hangs inside the driver: it prints nothing more
        elif f == "host_oom":
            p = self.pid[c]
            comm = r.choice(("python", "python3", "pt_main_thread"))
            total, anon = r.randint(180, 260) * 2**20, r.randint(95, 120) * 2**20
            cg = r.random() < 0.5
            self.kev(h, tf - 0.004, f"{comm} invoked oom-killer: gfp_mask=0x140cca"
                                    f"(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0")
            if cg:
                self.kev(h, tf - 0.002, f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
                                        f"cpuset=/,mems_allowed=0-1,oom_memcg=/slurm/uid_1000/"
                                        f"job_{self.job_id},task_memcg=/slurm/uid_1000/job_"
                                        f"{self.job_id}/step_0/task_0,task={comm},pid={p},uid=1000")
                head = "Memory cgroup out of memory"
            else:
                self.kev(h, tf - 0.002, f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),"
                                        f"cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/slurm/"
                                        f"uid_1000/job_{self.job_id}/step_0,task={comm},pid={p},"
                                        f"uid=1000")
                head = "Out of memory"
            self.kev(h, tf, f"{head}: Killed process {p} ({comm}) total-vm:{total}kB, "
                            f"anon-rss:{anon}kB, file-rss:{r.randint(100000, 900000)}kB, "
                            f"shmem-rss:{r.randint(1000, 90000)}kB, UID:1000 "
                            f"pgtables:{r.randint(200000, 400000)}kB oom_score_adj:0",
                     tags=[("evidence", 0)])
            self.evid.append(("kernel", h.idx, f"Killed process {p} ({comm})"))
            self.kev(h, tf + 0.9, f"oom_reaper: reaped process {p} ({comm}), now anon-rss:0kB, "
                                  f"file-rss:0kB, shmem-rss:0kB")
            self.exit[c] = (tf, -9)
        elif f == "cuda_oom":
            L = c % self.G
            if self.tv in ("1.13", "2.1"):
                msg = (f"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
                       f"GiB (GPU {L}; 79.15 GiB total capacity; 75.31 GiB already allocated; "
                       f"1.02 GiB free; 77.12 GiB reserved in total by PyTorch) If reserved memory "
                       f"is >> allocated memory try setting max_split_size_mb to avoid "
                       f"fragmentation.  See documentation for Memory Management and "
                       f"PYTORCH_CUDA_ALLOC_CONF")
            else:
                msg = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                       f"GPU {L} has a total capacity of 79.15 GiB of which 1.02 GiB is free. "
                       f"Including non-PyTorch memory, this process has 78.11 GiB memory in use. "
                       f"Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.81 GiB "
                       f"is reserved by PyTorch but unallocated. If reserved but unallocated "
                       f"memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
                       f"True to avoid fragmentation.  See documentation for Memory Management  "
                       f"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
            frames = train + [("/workspace/train.py", 301, "train_step", "logits = model(batch)"),
                              (f"{PY}/torch/nn/modules/module.py", 1747, "_call_impl",
                               "return forward_call(*args, **kwargs)"),
                              ("/workspace/model.py", 156, "forward",
                               "attn = torch.softmax(scores.float(), dim=-1)")]
            self.traceback(c, tf, frames, [msg], "evidence")
            self.evid.append(("rank", c, "CUDA out of memory. Tried to allocate 2.00 GiB"))
            self.exit[c] = (tf + r.uniform(0.2, 1.0), 1)
        elif f == "python_exception":
            exc = r.choice(("KeyError: 'labels'",
                            "ValueError: Expected input batch_size (16) to match target "
                            "batch_size (12).",
                            "FileNotFoundError: [Errno 2] No such file or directory: "
                            "'/data/shards/train-01187-of-04096.arrow'"))
            frames = train[:1] + [("/workspace/train.py", 377, "main", "batch = next(train_iter)"),
                                  (f"{PY}/torch/utils/data/dataloader.py", 701, "__next__",
                                   "data = self._next_data()"),
                                  (f"{PY}/torch/utils/data/dataloader.py", 757, "_next_data",
                                   "data = self._dataset_fetcher.fetch(index)  # may raise "
                                   "StopIteration"),
                                  (f"{PY}/torch/utils/data/_utils/fetch.py", 52, "fetch",
                                   "data = [self.dataset[idx] for idx in possibly_batched_index]"),
                                  ("/workspace/data.py", 88, "__getitem__",
                                   'labels = example["labels"]')]
            self.traceback(c, tf, frames, [exc], "evidence")
            self.evid.append(("rank", c, exc))
            self.exit[c] = (tf + r.uniform(0.2, 1.0), 1)
        elif f == "cuda_error":
            err = "CUDA error: an illegal memory access was encountered"
            tail = ["CUDA kernel errors might be asynchronously reported at some other API call, "
                    "so the stacktrace below might be incorrect.",
                    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."]
            if r.random() < 0.5:
                frames = train + [("/workspace/train.py", 305, "train_step", "loss.backward()"),
                                  (f"{PY}/torch/_tensor.py", 581, "backward",
                                   "torch.autograd.backward(")]
                self.traceback(c, tf, frames, ["RuntimeError: " + err] + tail, "evidence")
                self.exit[c] = (tf + r.uniform(0.2, 1.0), 1)
            else:
                pg = self.pgs[0]
                who = "Process group" if self.T["pg_style"] else "NCCL"
                exc = "c10::DistBackendError" if self.T["pg_style"] else "std::runtime_error"
                lines = [self.c10(h, c, tf, "E", "ProcessGroupNCCL.cpp:1595",
                                  f"{self.pg_tag(pg, c)} {who} watchdog thread "
                                  f"terminated with exception: {err}")] + tail + [
                    "Exception raised from c10_cuda_check_implementation at "
                    "/pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):",
                    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 "
                    "(0x7f0c4756c1b6 in /usr/local/lib/python3.11/site-packages/torch/lib/"
                    "libc10.so)",
                    "",
                    f"terminate called after throwing an instance of '{exc}'",
                    f"  what():  {self.pg_tag(pg, c)} {who} watchdog thread terminated "
                    f"with exception: {err}"]
                self.rev(c, tf, "\n".join(lines), "err", tags=[("evidence", 0)])
                self.exit[c] = (tf + r.uniform(0.1, 0.5), -6)
            self.evid.append(("rank", c, err))
        elif f == "segfault":
            lines = ["Fatal Python error: Segmentation fault", "",
                     "Thread 0x00007f12aa7fc640 (most recent call first):",
                     "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait",
                     "  File \"/usr/lib/python3.11/queue.py\", line 180 in get",
                     f"  File \"{PY}/torch/utils/data/_utils/pin_memory.py\", line 54 in do_one_step",
                     "  File \"/usr/lib/python3.11/threading.py\", line 1045 in _bootstrap_inner",
                     "",
                     "Current thread 0x00007f15c8f3b740 (most recent call first):",
                     f"  File \"{PY}/torch/autograd/graph.py\", line 825 in _engine_run_backward",
                     f"  File \"{PY}/torch/autograd/__init__.py\", line 347 in backward",
                     f"  File \"{PY}/torch/_tensor.py\", line 581 in backward",
                     "  File \"/workspace/train.py\", line 305 in train_step",
                     "  File \"/workspace/train.py\", line 388 in main",
                     "  File \"/workspace/train.py\", line 412 in <module>", "",
                     "Extension modules: numpy.core._multiarray_umath, torch._C, torch._C._fft, "
                     "yaml._yaml (total: 23)"]
            # faulthandler writes straight to fd 2: no [rankN] prefix
            self.rev(c, tf, "\n".join(lines), "err", tags=[("evidence", 0)])
            self.evid.append(("rank", c, "Fatal Python error: Segmentation fault"))
            self.kev(h, tf + 0.01, f"pt_main_thread[{self.pid[c]}]: segfault at 18 ip "
                                   f"00007f3a2b4c5d6e sp 00007ffd1e2f3a40 error 4 in "
                                   f"libtorch_cuda.so[7f3a28000000+4a2b000] likely on CPU "
                                   f"{r.randint(0, 111)} (core {r.randint(0, 55)}, socket "
                                   f"{r.randint(0, 1)})")
            self.exit[c] = (tf + 0.05, -11)
        elif f == "transport_error":
            peer_r = (c + self.G) % self.N if self.H > 1 else (c + 1) % self.N
            ph = self.host_of(peer_r)
            port = r.randint(30000, 60000)
            new = not self.T["nccl"].startswith("2.14")
            if new:
                warn = (f"NET/IB : Got completion from peer {ph.ip}<{port}> with status=12 "
                        f"opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:{h.ip} "
                        f"remoteGids::ffff:{ph.ip}")
            else:
                warn = (f"NET/IB : Got completion from peer {ph.ip}<{port}> with error 12, "
                        f"opcode 0, len 0, vendor err 129")
            p = self.nccl(c, 7)
            lines = [f"{p} transport/net_ib.cc:1696 NCCL WARN {warn}",
                     f"{p} NCCL INFO transport/net.cc:1298 -> 6",
                     f"{p} NCCL INFO proxy.cc:694 -> 6",
                     f"{p} NCCL INFO proxy.cc:874 -> 6 [Progress Thread]"]
            self.rev(c, tf, "\n".join(lines), "out", tags=[("evidence", 0)])
            self.evid.append(("rank", c, "with status=12" if new else "with error 12"))
            self.remote_error(c, tf + r.uniform(0.3, 1.2), "Last error:\n" + warn)
            self.exit[c] = (tf + r.uniform(1.5, 3.0), -6)
            # peers see the other end of the broken connection a little later
            peers = sorted({peer_r, (c - 1) % self.N} - {c})
            for q in peers:
                tq = tf + r.uniform(1.0, 4.0)
                qwarn = (f"NET/IB : Got completion from peer {h.ip}<{r.randint(30000, 60000)}> "
                         f"with status=5 opcode=32656 len=32659 vendor err 249 (Recv) "
                         f"localGid ::ffff:{self.host_of(q).ip} remoteGids::ffff:{h.ip}")
                self.remote_error(q, tq, "Last error:\n" + qwarn)
                self.exit[q] = (tq + r.uniform(1.0, 2.0), -6)
        elif f == "collective_timeout":
            pass   # the culprit silently stops before SeqNum N; see cascade()
        elif f == "unknown":
            # A SIGKILL that left no line anywhere collected (a cleanup script's kill -9, an OOM
            # kill in a kernel log nobody gathered). The launchers stop every other worker a few
            # seconds later, before any watchdog fires: the logs hold the cascade's deaths and
            # nothing that explains the first one.
            self.exit[c] = (tf, -9)
            for x in range(self.N):
                if x != c:
                    self.exit[x] = (tf + r.uniform(3.0, 8.0), -15)
        elif f == "host_kill":
            self.host_kill()

    def remote_error(self, q, t, last):
        h = self.host_of(q)
        pg = self.pgs[0]
        who = "Process group" if self.T["pg_style"] else "NCCL"
        msg = (f"{self.pg_tag(pg, q)} {who} "
               f"watchdog thread terminated with exception: NCCL error: remote process exited or "
               f"there was a network error, NCCL version {self.T['nccl']}")
        lines = [self.c10(h, q, t, "E", "ProcessGroupNCCL.cpp:1595", msg),
                 "ncclRemoteError: A call failed possibly due to a network error or a remote "
                 "process exiting prematurely."] + last.split("\n")
        exc = "c10::DistBackendError" if self.T["pg_style"] else "std::runtime_error"
        lines += ["", f"terminate called after throwing an instance of '{exc}'", "  what():  " + msg]
        self.rev(q, t, "\n".join(lines), "err")

    def host_kill(self):
        r = self.rng
        tf = self.t_fault
        reason = r.choice(("TIME LIMIT", "TIME LIMIT", "PREEMPTION", "NODE FAILURE"))
        d = _dt(math.floor(tf + self.ctl_off))
        when = d.strftime("%Y-%m-%dT%H:%M:%S")
        tail = (" DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"
                if reason == "NODE FAILURE" else f" DUE TO {reason} ***")
        self.host_kill_reason = reason
        self.sev(tf, "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        self.sev(tf + 0.01, f"slurmstepd: error: *** JOB {self.job_id} ON node000 CANCELLED AT "
                            f"{when}{tail}", tags=[("evidence", 0)])
        self.sev(tf + 0.02, f"slurmstepd: error: *** STEP {self.job_id}.0 ON node000 CANCELLED AT "
                            f"{when}{tail}")
        self.evid.append(("slurm", None, f"*** JOB {self.job_id} ON node000 CANCELLED AT {when}"))
        for h in self.hosts:
            th = tf + r.uniform(0.05, 0.6)
            locs = [x for x in range(h.idx * self.G, min(self.N, (h.idx + 1) * self.G))]
            if self.use_torchrun:
                src = "torch/distributed/elastic/agent/server/api.py:719"
                lines = [self.agent_line(h, th, "W", src, "Received 15 death signal, shutting "
                                                          "down workers")]
                msrc = "torch/distributed/elastic/multiprocessing/api.py:897"
                lines += [self.agent_line(h, th, "W", msrc, f"Sending process {self.pid[x]} "
                                                            f"closing signal SIGTERM")
                          for x in locs]
                lines += ["Traceback (most recent call last):",
                          '  File "/usr/local/bin/torchrun", line 8, in <module>',
                          "    sys.exit(main())",
                          f'  File "{PY}/torch/distributed/elastic/multiprocessing/api.py", '
                          f'line 85, in _terminate_process_handler',
                          "    raise SignalException(f\"Process {os.getpid()} got signal: "
                          "{sigval}\", sigval=sigval)",
                          f"torch.distributed.elastic.multiprocessing.api.SignalException: "
                          f"Process {h.pid_base - 7} got signal: 15"]
                self.aev(h, th, "\n".join(lines))
            for x in locs:
                self.exit[x] = (th + r.uniform(0.01, 0.3), -15)
        if not self.use_torchrun:
            for h in self.hosts:
                locs = [x for x in range(h.idx * self.G, min(self.N, (h.idx + 1) * self.G))]
                self.sev(tf + 1.0 + h.idx * 0.001,
                         f"srun: error: {h.name}: task{'s' if len(locs) > 1 else ''} "
                         f"{_ranges(locs)}: Terminated")

    # ---------------------------------------------------------------- the cascade

    def cascade(self):
        """Every rank that reached SeqNum N waits for the culprit; its watchdog fires."""
        r, f = self.rng, self.fault
        tf, to = self.t_fault, self.timeout_ms / 1000.0
        N = self.seq_fault
        pg = self.pgs[0]
        if self.trap("skew_points_at_victim") and f in EARLY_EXIT and self.H > 1:
            # a peer of the dead culprit, on a host whose clock runs behind, errors first
            ch = self.host_of(self.culprits[0])
            slow = [h for h in self.hosts if h is not ch and h.off < 0]
            if slow:
                q = self.local_ranks(slow[0])[-1]
                if q not in self.exit:
                    tq = tf + r.uniform(0.5, 2.5)
                    self.remote_error(q, tq, f"Last error:\nsocketProgress: Connection closed by "
                                             f"remote peer {ch.name}<{r.randint(30000, 60000)}>")
                    self.exit[q] = (tq + r.uniform(0.3, 1.0), -6)
        early = [x for x, (t, code) in self.exit.items() if t < tf + to]
        victims = [x for x in range(self.N) if x not in self.culprits and x not in early]
        if not victims:
            return
        enq = {x: tf + r.uniform(0.05, 0.6) for x in victims}
        wd = {x: enq[x] + to + r.uniform(0.0, 0.12) for x in victims}
        first = min(victims, key=lambda x: wd[x])
        t_first = wd[first]
        self.victim_enq_seq = N
        for x in victims:
            h = self.host_of(x)
            last_enq = N + r.choice((0, 0, 1, 2))
            t = wd[x]
            ran = int(round((t - enq[x]) * 1000))
            wline = f"[Rank {x}] Watchdog caught collective operation timeout: " \
                    f"{self.work(N, self.op, self.numel, self.timeout_ms)} ran for {ran} " \
                    f"milliseconds before timing out."
            ln = self.T["wd_line"]
            if self.T["dump"] and x != first and t > t_first + 0.25:
                td = t_first + r.uniform(0.05, 0.25)
                self.rev(x, td, self.c10(h, x, td, "E", "ProcessGroupNCCL.cpp:1743",
                                         self.dump_line(pg, x, first, last_enq, N - 1)))
            lines = [self.c10(h, x, t, "E", f"ProcessGroupNCCL.cpp:{ln}", wline)]
            st = self.T["status"]
            tt = t + 0.0003
            if st in ("exception", "exception+timeout_at"):
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:1664",
                                      f"{self.pg_tag(pg, x)} Exception (either an error or "
                                      f"timeout) detected by watchdog at work: {N}, last enqueued "
                                      f"NCCL work: {last_enq}, last completed NCCL work: {N - 1}."))
            if st == "failure_detected":
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:2271",
                                      f"{self.pg_tag(pg, x)}  failure detected by watchdog at "
                                      f"work sequence id: {N} PG status: last enqueued work: "
                                      f"{last_enq}, last completed work: {N - 1}"))
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:670",
                                      "Stack trace of the failed collective not found, "
                                      "potentially because FlightRecorder is disabled. You can "
                                      "enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a "
                                      "non-zero value."))
            if st in ("timeout_at", "exception+timeout_at"):
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:1709",
                                      f"{self.pg_tag(pg, x)} Timeout at NCCL work: {N}, last "
                                      f"enqueued NCCL work: {last_enq}, last completed NCCL "
                                      f"work: {N - 1}."))
            if self.T["dump"] and x == first:
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:1743",
                                      self.dump_line(pg, x, None, last_enq, N - 1)))
            if self.tv == "1.13":
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:414",
                                      "Some NCCL operations have failed or timed out. Due to the "
                                      "asynchronous nature of CUDA kernels, subsequent GPU "
                                      "operations might run on corrupted/incomplete data. To "
                                      "avoid data inconsistency, we are taking the entire "
                                      "process down."))
            else:
                rk = f"[Rank {x}] " if self.T["rank_tag"] else ""
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:621",
                                      f"{rk}Some NCCL operations have failed or timed out. Due to "
                                      f"the asynchronous nature of CUDA kernels, subsequent GPU "
                                      f"operations might run on corrupted/incomplete data."))
                lines.append(self.c10(h, x, tt, "E", "ProcessGroupNCCL.cpp:627",
                                      f"{rk}To avoid data inconsistency, we are taking the entire "
                                      f"process down."))
            if self.T["pg_style"]:
                what = f"{self.pg_tag(pg, x)} Process group watchdog thread terminated with " \
                       f"exception: {wline}"
                lines.append(self.c10(h, x, tt + 0.001, "E", "ProcessGroupNCCL.cpp:1595", what))
                exc = "c10::DistBackendError"
            else:
                what = f"[Rank {x}] NCCL watchdog thread terminated with exception: {wline}"
                exc = "std::runtime_error"
            if self.trap("many_victims"):
                lines += [f"Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/"
                          f"c10d/ProcessGroupNCCL.cpp:{ln} (most recent call first):"]
                lines += [f"frame #{i}: {fn} + 0x{0x40 + 37 * i:x} (0x7f0b{0xf581bc74 + i:x} in "
                          f"{PY}/torch/lib/{lib})" for i, (fn, lib) in enumerate((
                              ("c10::Error::Error(c10::SourceLocation, std::string)", "libc10.so"),
                              ("c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::"
                               "chrono::duration<long, std::ratio<1l, 1000l> > >)",
                               "libtorch_cuda.so"),
                              ("c10d::ProcessGroupNCCL::watchdogHandler()", "libtorch_cuda.so"),
                              ("c10d::ProcessGroupNCCL::ncclCommWatchdog()", "libtorch_cuda.so")))]
            lines += ["terminate called after throwing an instance of '" + exc + "'",
                      "  what():  " + what]
            self.rev(x, t, "\n".join(lines), "err", tags=[(f"wd:{x}", 0)])
            self.wd_true = getattr(self, "wd_true", {})
            self.wd_true[x] = t
            dump_wait = r.uniform(2.0, 8.0) if self.T["dump"] else r.uniform(0.05, 0.5)
            self.exit[x] = (t + dump_wait, -6)
        if f == "collective_timeout":
            c = self.culprits[0]
            h = self.host_of(c)
            style = r.choice(("silent", "late")) if self.T["ts"] else "late"
            self.ct_style = style
            if self.T["dump"]:
                td = t_first + r.uniform(0.05, 0.25)
                self.rev(c, td, self.c10(h, c, td, "E", "ProcessGroupNCCL.cpp:1743",
                                         self.dump_line(pg, c, first, N - 1, N - 1)),
                         tags=[("evidence", 0)])
                self.evid.append(("rank", c, f"Last enqueued NCCL work: {N - 1}, last "
                                             f"completed NCCL work: {N - 1}."))
            if style == "late":
                # it is blocked in a broadcast on another group that nobody else issued
                tl = t_first + r.uniform(0.3, 1.5)
                M = r.randint(3, 40)
                pg2 = self.pgs[-1] if len(self.pgs) > 1 else dict(id=1, guid=1, desc="", ranks=[])
                gr = (c // self.G) if pg2.get("desc") == "DP" else 0
                wl = (f"[Rank {gr}] Watchdog caught collective operation timeout: "
                      f"{self.work(M, 'BROADCAST', 1, self.timeout_ms)} ran for "
                      f"{int(self.timeout_ms + r.uniform(5, 90))} milliseconds before timing out.")
                lines = [self.c10(h, c, tl, "E", f"ProcessGroupNCCL.cpp:{self.T['wd_line']}", wl)]
                if self.T["pg_style"]:
                    lines.append(self.c10(h, c, tl + 0.0003, "E", "ProcessGroupNCCL.cpp:1664",
                                          f"{self.pg_tag(pg2, gr)} Exception (either an error or "
                                          f"timeout) detected by watchdog at work: {M}, last "
                                          f"enqueued NCCL work: {M}, last completed NCCL work: "
                                          f"{M - 1}."))
                key = "late" if self.T["dump"] else "evidence"
                if key == "evidence":
                    self.evid.append(("rank", c, f"SeqNum={M}, OpType=BROADCAST"))
                self.rev(c, tl, "\n".join(lines), "err", tags=[(key, 0)])
                self.exit[c] = (tl + r.uniform(2.0, 4.0), -6)
            if not self.evid:
                self.evid.append(("wd", first, f"SeqNum={N}"))
        elif f == "xid":
            pass  # culprit hangs; it is killed by the launcher
        self.wd_first = first

    def dump_line(self, pg, x, src, last_enq, last_done):
        frm = "this local rank" if src is None else f" rank {src}"
        return (f"{self.pg_tag(pg, x)} Received a dump signal due to a collective timeout from "
                f"{frm} and we will try our best to dump the debug info. Last enqueued NCCL work: "
                f"{last_enq}, last completed NCCL work: {last_done}.This is most likely caused by "
                f"incorrect usages of collectives, e.g., wrong sizes used across ranks, the order "
                f"of collectives is not same for all ranks or the scheduled collective, for some "
                f"reason, didn't run.")

    # ---------------------------------------------------------------- launchers

    def launcher_reaction(self):
        if self.fault == "host_kill":
            return
        if self.use_torchrun:
            for h in self.hosts:
                self.torchrun_agent(h)
        else:
            self.srun_reaction()
        if self.fault == "host_oom":
            c = self.culprits[0]
            h = self.host_of(c)
            t = self.last_exit + 0.5
            new = self.rng.random() < 0.6
            msg = (f"slurmstepd: error: Detected 1 oom_kill event in StepId={self.job_id}.0. "
                   f"Some of the step tasks have been OOM Killed." if new else
                   f"slurmstepd: error: Detected 1 oom-kill event(s) in StepId={self.job_id}.0 "
                   f"cgroup. Some of your processes may have been killed by the cgroup "
                   f"out-of-memory handler.")
            self.sev(t, msg, tags=[("evidence2", 0)])

    def local_ranks(self, h):
        return list(range(h.idx * self.G, min(self.N, (h.idx + 1) * self.G)))

    def torchrun_agent(self, h):
        r = self.rng
        locs = self.local_ranks(h)
        c = self.culprits[0] if self.culprits else None
        trap = self.trap("root_cause_table_names_victim")
        early_culprit = c in locs and self.fault in EARLY_EXIT and c in self.exit
        if trap and early_culprit:
            # the culprit's death breaks the shared-memory/NVLink connections of its local
            # peers at once; the 5 s monitor sees them all in one poll
            ct = self.exit[c][0]
            for q in locs:
                if q < c and (q not in self.exit or self.exit[q][0] > ct + 2):
                    tq = ct + r.uniform(0.3, 1.2)
                    self.remote_error(q, tq, "Last error:\nsocketProgress: Connection closed by "
                                             "remote peer " + h.name)
                    self.exit[q] = (tq + 0.2, -6)
        fails = sorted((self.exit[x][0], x) for x in locs if x in self.exit)
        if not fails:
            return
        poll = 5.0 if (trap or self.tv in ("1.13", "2.1")) else 0.1
        t_first = fails[0][0]
        tp = t_first + r.uniform(0.01, poll)
        if trap and early_culprit:
            tp = max(t for t, _ in fails if t < self.exit[c][0] + 2) + r.uniform(0.2, 1.0)
        failed = [x for t, x in fails if t <= tp and self.exit[x][1] != 0]
        alive = [x for x in locs if x not in failed]
        for x in alive:   # SIGTERM from the agent: whatever they would have printed later is lost
            kt = tp + r.uniform(0.01, 0.3)
            self.rank_ev[x] = [e for e in self.rank_ev[x] if e[0] <= kt]
            self.exit[x] = (kt, -15)
        msrc = "torch/distributed/elastic/multiprocessing/api.py"
        lines = [self.agent_line(h, tp, "W", f"{msrc}:897",
                                 f"Sending process {self.pid[x]} closing signal SIGTERM")
                 for x in alive]
        root = min(failed)     # no error files: all failures carry the same timestamp
        code = self.exit[root][1]
        failed_line = (f"failed (exitcode: {code}) local_rank: {root % self.G} "
                       f"(pid: {self.pid[root]}) of binary: /usr/bin/python3")
        lines.append(self.agent_line(h, tp + 0.3, "E", f"{msrc}:869", failed_line))
        tags = None
        if self.fault == "unknown" and root == c:
            # Nothing else explains the first death: the launcher's line is the evidence.
            tags = [("evidence", len(lines) - 1)]
            self.evid.append(("launcher", h.idx, failed_line.split(" of binary")[0]))
        self.aev(h, tp, "\n".join(lines), tags=tags)
        tt = tp + r.uniform(0.5, 3.0)
        stamp = _dt(math.floor(self.loc(h, tt))).strftime("%Y-%m-%d_%H:%M:%S")
        sig = {-6: "Signal 6 (SIGABRT)", -9: "Signal 9 (SIGKILL)", -11: "Signal 11 (SIGSEGV)",
               -15: "Signal 15 (SIGTERM)"}

        def entry(i, x):
            cd = self.exit[x][1]
            tb = (f"{sig[cd]} received by PID {self.pid[x]}" if cd in sig else
                  "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html")
            return [f"[{i}]:", f"  time      : {stamp}", f"  host      : {h.name}",
                    f"  rank      : {x} (local_rank: {x % self.G})",
                    f"  exitcode  : {cd} (pid: {self.pid[x]})", "  error_file: <N/A>",
                    f"  traceback : {tb}"]
        tb = ["Traceback (most recent call last):",
              '  File "/usr/local/bin/torchrun", line 8, in <module>',
              "    sys.exit(main())",
              f'  File "{PY}/torch/distributed/elastic/multiprocessing/errors/__init__.py", '
              f'line 355, in wrapper', "    return f(*args, **kwargs)",
              f'  File "{PY}/torch/distributed/run.py", line 919, in main', "    run(args)",
              f'  File "{PY}/torch/distributed/run.py", line 910, in run', "    elastic_launch(",
              f'  File "{PY}/torch/distributed/launcher/api.py", line 138, in __call__',
              "    return launch_agent(self._config, self._entrypoint, list(args))",
              f'  File "{PY}/torch/distributed/launcher/api.py", line 269, in launch_agent',
              "    raise ChildFailedError(",
              "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
              "=" * 60, "train.py FAILED", "-" * 60, "Failures:"]
        others = [x for x in failed if x != root]
        if not others:
            tb.append("  <NO_OTHER_FAILURES>")
        for i, x in enumerate(others, 1):
            tb += entry(i, x)
        tb += ["-" * 60, "Root Cause (first observed failure):"]
        off = len(tb)
        tb += entry(0, root) + ["=" * 60]
        self.aev(h, tt, "\n".join(tb), tags=[(f"table:{h.name}", off + 3)])
        self.table_roots.append(dict(host=h.name, rank=root, is_culprit=root in self.culprits))
        self.last_exit = max(getattr(self, "last_exit", 0), tt)

    def srun_reaction(self):
        r = self.rng
        kill_on_bad_exit = self.fault in ("xid", "collective_timeout") or r.random() < 0.5
        fails = sorted((t, x) for x, (t, cd) in self.exit.items() if cd != 0)
        if not fails:
            return
        t1, x1 = fails[0]
        names = {-6: "Aborted (core dumped)", -9: "Killed", -11: "Segmentation fault (core dumped)",
                 -15: "Terminated", 1: "Exited with exit code 1"}
        h1 = self.host_of(x1)
        oom = self.fault == "host_oom" and x1 in self.culprits
        first_death = (f"srun: error: {h1.name}: task {x1}: "
                       f"{'Out Of Memory' if oom else names[self.exit[x1][1]]}")
        unexplained = self.fault == "unknown" and x1 in self.culprits
        self.sev(t1 + 0.2, first_death, tags=[("evidence", 0)] if unexplained else None)
        if unexplained:
            self.evid.append(("srun", 0, first_death))
        if kill_on_bad_exit:
            tk = t1 + r.uniform(0.3, 1.0)
            when = _dt(math.floor(tk + self.ctl_off)).strftime("%Y-%m-%dT%H:%M:%S")
            self.sev(tk, f"srun: Terminating StepId={self.job_id}.0")
            self.sev(tk + 0.01, f"slurmstepd: error: *** STEP {self.job_id}.0 ON node000 "
                                f"CANCELLED AT {when} ***")
            for x in range(self.N):
                if x == x1:
                    continue
                if x not in self.exit or self.exit[x][0] > tk:
                    kt = tk + r.uniform(0.05, 0.5)
                    self.rank_ev[x] = [e for e in self.rank_ev[x] if e[0] <= kt]
                    self.exit[x] = (kt, -15)
        by = {}
        for x, (t, cd) in self.exit.items():
            if x == x1:
                continue
            by.setdefault((self.host_of(x).idx, cd), []).append((t, x))
        for (hi, cd), lst in sorted(by.items()):
            if cd == 0:
                continue
            t = max(t for t, _ in lst)
            xs = [x for _, x in lst]
            self.sev(t + 0.2, f"srun: error: {self.hosts[hi].name}: "
                              f"task{'s' if len(xs) > 1 else ''} {_ranges(xs)}: {names[cd]}")
        self.last_exit = max(t for t, _ in self.exit.values())

    def healthy_end(self):
        r = self.rng
        te = self.t_fault
        for x in range(self.N):
            t = te + r.uniform(0, 2)
            if x == 0:
                self.rev(0, t, "training finished: checkpoint saved to /ckpt/iter_final", "out")
            self.rev(x, t + 0.5, f"{self.nccl(x)} NCCL INFO comm {self.comm[x]:#x} rank {x} "
                                 f"nranks {self.N} cudaDev {x % self.G} busId "
                                 f"{self.bus[x % self.G][5:7]}000 - Destroy COMPLETE", "out")
            self.exit[x] = (t + 1.0, 0)
        if self.use_torchrun:
            for h in self.hosts:
                t = te + 3 + r.uniform(0, 1)
                self.aev(h, t, self.agent_line(
                    h, t, "I", "torch/distributed/elastic/agent/server/api.py:879",
                    "[default] worker group successfully finished. Waiting 300 seconds for other "
                    "agents to finish."))
                self.aev(h, t + 0.6, self.agent_line(
                    h, t + 0.6, "I", "torch/distributed/elastic/agent/server/api.py:932",
                    f"Done waiting for other agents. Elapsed: {r.uniform(0.1, 0.9):.4f} seconds"))

    def distractor(self):
        """A later, unrelated error on another rank (a dying data loader worker)."""
        r = self.rng
        cands = [x for x in range(self.N) if x not in self.culprits]
        if not cands:
            return
        x = r.choice(cands)
        end = self.exit.get(x, (self.t_fault + 600, 0))[0]
        t = self.t_fault + r.uniform(60, 240)
        if t >= end - 0.5:
            t = self.t_fault + (end - self.t_fault) * r.uniform(0.55, 0.9)
        if t <= self.t_fault:
            return
        pp = self.pyprefix(x)
        lines = [f"{pp}ERROR: Unexpected bus error encountered in worker. This might be caused by "
                 f"insufficient shared memory (shm).",
                 f"{pp}Exception in thread Thread-3 (_pin_memory_loop):",
                 f"{pp}Traceback (most recent call last):",
                 f'{pp}  File "{PY}/torch/utils/data/_utils/pin_memory.py", line 55, in '
                 f'do_one_step',
                 f"{pp}    r = in_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)",
                 f"{pp}RuntimeError: DataLoader worker (pid {self.pid[x] + 900}) is killed by "
                 f"signal: Bus error. It is possible that dataloader's workers are out of shared "
                 f"memory. Please try to raise your shared memory limit."]
        self.rev(x, t, "\n".join(lines), "err", tags=[("distractor", 0), ("distractor", 5)])
        self.distractor_rank = x

    def kernel_noise(self):
        r = self.rng
        for h in self.hosts:
            for _ in range(r.randint(1, 3)):
                t = self.t0 + r.uniform(0, self.t_fault - self.t0)
                self.kev(h, t, r.choice((
                    "perf: interrupt took too long (2503 > 2500), lowering "
                    "kernel.perf_event_max_sample_rate to 79750",
                    "workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us 4 times, "
                    "consider switching to WQ_UNBOUND",
                    "NFS: server storage01 not responding, still trying",
                    "NFS: server storage01 OK")))
            if self.fault != "none":
                t = self.t_fault + self.timeout_ms / 1000.0 + r.uniform(5, 30)
                self.kev(h, t, "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected "
                               "invalid context, skipping further processing")

    # ---------------------------------------------------------------- writing

    def render(self, ev, prefix):
        """Event -> (text, number of lines)."""
        text = ev[3]
        if isinstance(text, tuple):
            _, rank, start, n = text
            s = self.chatter(rank, start, n, prefix)
            return s, n
        if prefix:
            text = "\n".join(prefix + ln for ln in text.split("\n"))
        return text + "\n", text.count("\n") + 1

    def write_file(self, rel, sources):
        """sources: list of (events, prefix, owner). Writes them merged by time. Tags -> lines."""
        path = os.path.join(self.out, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        allev = []
        for evs, prefix, owner in sources:
            for e in evs:
                allev.append((e[0], e[1], e, prefix, owner))
        allev.sort(key=lambda a: (a[0], a[1]))
        line = 1
        buf, size = [], 0
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            for _, _, e, prefix, owner in allev:
                s, n = self.render(e, prefix)
                if e[4]:
                    for key, off in e[4]:
                        self.found.append((key, owner, rel, line + off, e[0]))
                line += n
                buf.append(s)
                size += len(s)
                if size > 1 << 22:
                    fh.write("".join(buf))
                    buf, size = [], 0
            fh.write("".join(buf))
        # A log's modification time is when its last line was written (true time; the file
        # system's clock is the host's, but seconds do not matter for what mtimes tell).
        if allev:
            last = allev[-1][0]
            os.utime(path, (last, last))
        self.files.append(rel)
        return line - 1

    def kern_name(self):
        return {"dmesg": "dmesg.txt", "dmesg_T": "dmesg-T.log", "kern.log": "kern.log",
                "journal": "journalctl-k.txt"}[self.kstyle]

    def write(self):
        os.makedirs(self.out, exist_ok=True)
        self.files, self.found = [], []
        lay = self.layout
        tee = self.T["tee"]
        G = self.G
        if lay != "pasted":
            for h in self.hosts:
                self.write_file(f"{h.name}/{self.kern_name()}", [(self.kern_ev[h.idx], "",
                                                                  ("host", h.idx))])
            if self.slurm_ev or lay == "slurm_combined":
                srcs = [(self.slurm_ev, "", ("slurm", None))]
                if lay == "slurm_combined":
                    w = len(str(self.N - 1))
                    srcs += [(self.rank_ev[x], f"{x:>{w}}: ", ("rank", x)) for x in range(self.N)]
                self.write_file(f"slurm-{self.job_id}.out", srcs)
        if lay == "torchrun_logdir":
            for x in range(self.N):
                h = self.host_of(x)
                for stream in ("stdout", "stderr"):
                    evs = [e for e in self.rank_ev[x] if e[2] == stream[3:]]
                    self.write_file(f"{h.name}/attempt_0/{x % G}/{stream}.log",
                                    [(evs, "", ("rank", x))])
            for h in self.hosts:
                self.write_file(f"{h.name}/torchrun.log", [(self.agent_ev[h.idx], "",
                                                            ("agent", h.idx))])
        elif lay == "per_rank":
            for x in range(self.N):
                self.write_file(f"rank_{x}.log", [(self.rank_ev[x], "", ("rank", x))])
            for h in self.hosts:
                self.write_file(f"torchrun_{h.name}.log", [(self.agent_ev[h.idx], "",
                                                            ("agent", h.idx))])
        elif lay == "per_host":
            for h in self.hosts:
                srcs = [(self.agent_ev[h.idx], "", ("agent", h.idx))]
                for x in self.local_ranks(h):
                    p = f"[default{x % G}]:" if tee == "default" else f"[rank{x}]:"
                    srcs.append((self.rank_ev[x], p, ("rank", x)))
                self.write_file(f"{h.name}.log", srcs)
        elif lay == "pasted":
            self.write_pasted()
        return self.expected()

    def write_pasted(self):
        """A few hundred lines a user would paste: head and failure window of one host's console."""
        c = self.culprits[0] if self.culprits else None
        h = self.host_of(c) if c is not None else self.hosts[0]
        G = self.G
        tee = self.T["tee"]
        srcs = [(self.agent_ev[h.idx], "", ("agent", h.idx))]
        for x in self.local_ranks(h):
            p = f"[default{x % G}]:" if tee == "default" else f"[rank{x}]:"
            srcs.append(([e for e in self.rank_ev[x] if not isinstance(e[3], tuple)], p,
                         ("rank", x)))
        allev = sorted(((e[0], e[1], e, p, o) for evs, p, o in srcs for e in evs),
                       key=lambda a: (a[0], a[1]))
        rows = []   # (text, [(key, owner, t)])
        for t, _, e, p, o in allev:
            s, _ = self.render(e, p)
            ls = s.rstrip("\n").split("\n")
            tagmap = {}
            for key, off in (e[4] or []):
                tagmap.setdefault(off, []).append((key, o, t))
            for i, ln in enumerate(ls):
                rows.append((t, ln, tagmap.get(i, [])))
        head_n = min(120, sum(1 for x in rows if x[0] < self.t0 + 60))
        t_lo = self.t_fault - 20
        w0 = next((i for i, x in enumerate(rows) if x[0] >= t_lo), len(rows))
        w0 = max(w0, head_n)
        out = rows[:head_n]
        if w0 > head_n:
            out.append((None, "...", []))
        out += rows[w0:w0 + 260]
        extra = []
        if self.fault in ("xid", "host_oom", "segfault"):
            extra.append((None, "", []))
            extra.append((None, f"$ sudo dmesg | tail   # on {h.name}", []))
            kev = sorted(self.kern_ev[h.idx], key=lambda e: (e[0], e[1]))
            ks = [e for e in kev if abs(e[0] - self.t_fault) < 5]
            for e in ks:
                extra.append((e[0], e[3], [(k, ("host", h.idx), e[0]) for k, _ in (e[4] or [])]))
        if self.fault in ("host_kill", "host_oom"):
            extra.append((None, "", []))
            extra.append((None, f"$ tail slurm-{self.job_id}.out", []))
            for e in sorted(self.slurm_ev, key=lambda e: (e[0], e[1])):
                extra.append((e[0], e[3], [(k, ("slurm", None), e[0]) for k, _ in (e[4] or [])]))
        out += extra
        rel = "pasted.log"
        with open(os.path.join(self.out, rel), "w", encoding="utf-8", newline="\n") as fh:
            for i, (_, ln, tags) in enumerate(out, 1):
                fh.write(ln + "\n")
                for key, owner, t in tags:
                    self.found.append((key, owner, rel, i, t))
        self.files.append(rel)

    # ---------------------------------------------------------------- ground truth

    def expected(self):
        f = self.fault
        hosts = {h.name: {"offset_ms": round(h.off * 1000, 3),
                          "drift_ppm": round(h.drift * 1e6, 4),
                          "boot_time_utc": _iso(h.boot)} for h in self.hosts}
        cul = sorted(self.culprits)
        if f == "none":
            victims = []
        elif f == "host_kill":
            victims = list(range(self.N))
        else:
            victims = [x for x in range(self.N) if x not in cul]
        ev = []
        for key, owner, rel, line, t in self.found:
            if key in ("evidence", "evidence2"):
                ev.append({"file": rel, "line": line, "contains": self.evid_text(key),
                           "primary": key == "evidence"})
        if f == "collective_timeout" and not any(e["primary"] for e in ev):
            for key, owner, rel, line, t in self.found:
                if key.startswith("wd:"):
                    ev.append({"file": rel, "line": line, "contains": f"SeqNum={self.seq_fault}",
                               "primary": True})
                    break
        ev.sort(key=lambda e: (not e["primary"], e["file"], e["line"]))
        wd = []
        for key, owner, rel, line, t in self.found:
            if key.startswith("wd:"):
                x = int(key[3:])
                wd.append({"rank": x, "host": self.host_of(x).name, "file": rel, "line": line,
                           "true_time_utc": _iso(t), "true_time": t})
        wd.sort(key=lambda w: (w["rank"], w["file"]))
        tables = []
        for key, owner, rel, line, t in self.found:
            if key.startswith("table:"):
                hn = key[6:]
                root = next(tr for tr in self.table_roots if tr["host"] == hn)
                tables.append({"host": hn, "file": rel, "line": line, "rank": root["rank"],
                               "is_culprit": root["is_culprit"]})
        dist = [{"file": rel, "line": line, "rank": owner[1]}
                for key, owner, rel, line, t in self.found if key == "distractor"]
        inits = {}
        for key, owner, rel, line, t in self.found:
            if key.startswith("init:"):
                inits.setdefault(int(key[5:]), {"file": rel, "line": line})
        raw_inv = self.raw_earliest_is_victim()
        exp = {
            "schema": 1,
            "kind": f,
            "culprit_ranks": cul,
            "culprit_hosts": sorted({self.host_of(x).name for x in cul}),
            "fault_time_utc": _iso(self.t_fault) if f != "none" else None,
            "hosts": hosts,
            "controller": {"offset_ms": round(self.ctl_off * 1000, 3), "drift_ppm": 0.0},
            "victim_ranks": victims,
            "ranks": self.N,
            "gpus_per_host": self.G,
            "layout": self.layout,
            "traps": list(self.traps),
            "files": sorted(self.files),
            "evidence": ev,
            "seed": self.seed,
            "job_id": self.job_id,
            "t0_utc": _iso(self.t0),
            "t0": self.t0,
            "torch_version": self.tv,
            "nccl_version": self.T["nccl"],
            "kernel_log": self.kstyle,
            "gpu_bus_ids": self.bus,
            "rank_pids": self.pid,
            "collective": None if f in ("none", "host_kill") else {
                "pg_id": 0, "pg_desc": "default_pg", "seq": self.seq_fault, "op": self.op,
                "numel": self.numel, "timeout_ms": self.timeout_ms},
            "process_groups": self.pgs,
            "watchdog": wd,
            "root_cause_tables": tables,
            "distractors": dist,
            "nccl_init_lines": {str(k): v for k, v in sorted(inits.items())},
            "raw_earliest_is_victim": raw_inv,
            "stdin_file": "pasted.log" if self.layout == "pasted" else None,
        }
        if f == "host_kill":
            exp["host_kill_reason"] = self.host_kill_reason
        if f == "collective_timeout":
            exp["culprit_style"] = getattr(self, "ct_style", "silent")
        with open(os.path.join(self.out, "expected.json"), "w", encoding="utf-8") as fh:
            json.dump(exp, fh, indent=1)
            fh.write("\n")
        return exp

    def evid_text(self, key):
        if key == "evidence2":
            return "oom"
        return self.evid[0][2] if self.evid else ""

    def raw_earliest_is_victim(self):
        """By printed (local) times, does some victim's error look earlier than the culprit's?"""
        if not self.culprits or not hasattr(self, "wd_first"):
            return False
        c = self.culprits[0]
        t_c = self.loc(self.host_of(c), self.t_fault)
        wd = getattr(self, "wd_true", {})
        best = min((self.loc(self.host_of(x), t) for x, t in wd.items()), default=None)
        early = [self.loc(self.host_of(x), t) for x, (t, cd) in self.exit.items()
                 if x not in self.culprits and cd == -6 and t < self.t_fault + 30]
        cands = [v for v in ([best] if best is not None else []) + early]
        return bool(cands) and min(cands) < t_c


def _apply_skew_trap(sim):
    """The culprit's host clock runs ahead, a victim host's behind: raw order lies."""
    if not sim.trap("skew_points_at_victim") or not sim.culprits or sim.H < 2:
        return
    ch = sim.host_of(sim.culprits[0])
    ch.off = sim.skew_max * 0.95
    others = [h for h in sim.hosts if h is not ch]
    for h in others[: max(1, len(others) // 4)]:
        h.off = -sim.skew_max * 0.95


class _SkewSim(Sim):
    def pick_culprits(self):
        c = super().pick_culprits()
        self.culprits = c
        _apply_skew_trap(self)
        return c


def simulate(out_dir, ranks, fault, layout, seed, **opts):
    """Write a job's logs under out_dir and return the expected.json content.

    opts: gpus_per_host, skew_ms_max, drift_ppm_max, nccl_info, bytes_target, torch_version,
    kernel_log, timeout_ms, traps (list), culprit_rank (the faulty rank, instead of one drawn
    by seed), and any trap name as a boolean keyword.
    """
    culprit_rank = opts.pop("culprit_rank", None)
    traps = list(opts.pop("traps", ()) or ())
    for name in list(opts):
        if name in TRAPS:
            if opts.pop(name):
                traps.append(name)
    sim = _SkewSim(out_dir, ranks, fault, layout, seed, traps=traps, **opts)
    sim.culprit_rank = culprit_rank
    return sim.run()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--fault", choices=FAULTS, default="xid")
    ap.add_argument("--layout", choices=LAYOUTS, default="torchrun_logdir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gpus-per-host", type=int, default=8)
    ap.add_argument("--skew-ms-max", type=float, default=90000)
    ap.add_argument("--drift-ppm-max", type=float, default=50)
    ap.add_argument("--nccl-info", action="store_true")
    ap.add_argument("--bytes-target", type=float, default=0)
    ap.add_argument("--trap", action="append", default=[],
                    help="trap name (repeat, or comma-separated): " + ", ".join(TRAPS))
    ap.add_argument("--torch-version", choices=TORCH_VERSIONS)
    ap.add_argument("--kernel-log", choices=KERNEL_STYLES)
    ap.add_argument("--timeout-ms", type=int)
    a = ap.parse_args(argv)
    traps = [t for arg in a.trap for t in arg.split(",") if t]
    exp = simulate(a.out, a.ranks, a.fault, a.layout, a.seed, gpus_per_host=a.gpus_per_host,
                   skew_ms_max=a.skew_ms_max, drift_ppm_max=a.drift_ppm_max,
                   nccl_info=a.nccl_info, bytes_target=int(a.bytes_target), traps=traps,
                   torch_version=a.torch_version, kernel_log=a.kernel_log,
                   timeout_ms=a.timeout_ms)
    print(json.dumps({"kind": exp["kind"], "culprit_ranks": exp["culprit_ranks"],
                      "files": len(exp["files"]), "out": a.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
