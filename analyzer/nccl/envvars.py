"""Known NCCL_ / TORCH_NCCL_ / TORCH_FR_ variables: meaning and default.

Sources: NCCL's user guide (``docs/env.html``) and PyTorch's ``ProcessGroupNCCL.hpp`` /
Flight Recorder. Defaults are those of
recent releases; where they changed the text says so. A name missing here is not necessarily
wrong (NCCL adds variables every release): close matches to a known name are reported as
probable typos, others as unknown.
"""
from __future__ import annotations

import difflib

# name: (default, meaning)
NCCL_VARS: dict[str, tuple[str, str]] = {
    "NCCL_DEBUG": ("unset (no output)", "log level: VERSION, WARN, INFO, TRACE"),
    "NCCL_DEBUG_SUBSYS": ("INIT,BOOTSTRAP,ENV", "subsystems logged at INFO (INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ...)"),
    "NCCL_DEBUG_FILE": ("stdout", "log file pattern (%h host, %p pid)"),
    "NCCL_DEBUG_TIMESTAMP_FORMAT": ("[%F %T] ", "strftime format of log timestamps"),
    "NCCL_DEBUG_TIMESTAMP_LEVELS": ("WARN", "log levels that carry a timestamp"),
    "NCCL_SOCKET_IFNAME": ("auto (ib*, then any but lo/docker*)", ("interfaces for bootstrap and socket transport; "
                           "^ excludes, = exact match, else prefix")),
    "NCCL_SOCKET_FAMILY": ("auto", "AF_INET or AF_INET6 for sockets"),
    "NCCL_SOCKET_NTHREADS": ("1 (2 on AWS, 4 on GCP gVNIC)", "CPU helper threads per socket connection"),
    "NCCL_NSOCKS_PERTHREAD": ("1 (8 on AWS)", "sockets per helper thread"),
    "NCCL_SOCKET_RETRY_CNT": ("34", "socket connect retries"),
    "NCCL_SOCKET_RETRY_SLEEP_MSEC": ("100", "sleep between socket connect retries"),
    "NCCL_CROSS_NIC": ("2", "let rings/trees use different NICs on different nodes (0 no, 1 yes, 2 auto)"),
    "NCCL_IB_HCA": ("auto (all)", "InfiniBand/RoCE devices to use; ^ excludes, = exact, :port"),
    "NCCL_IB_DISABLE": ("0", "1 disables InfiniBand/RoCE: the network falls back to sockets"),
    "NCCL_IB_TIMEOUT": ("20", "IB verbs timeout exponent (4.096 us x 2^n)"),
    "NCCL_IB_RETRY_CNT": ("7", "IB retry count"),
    "NCCL_IB_GID_INDEX": ("auto (since 2.21; 0 before)", "RoCE GID index"),
    "NCCL_IB_ADDR_FAMILY": ("AF_INET", "RoCE GID address family when auto-selecting"),
    "NCCL_IB_ADDR_RANGE": ("unset", "RoCE GID address range when auto-selecting"),
    "NCCL_IB_ROCE_VERSION_NUM": ("2", "RoCE version when auto-selecting the GID"),
    "NCCL_IB_SL": ("0", "IB service level"),
    "NCCL_IB_TC": ("0", "IB traffic class"),
    "NCCL_IB_FIFO_TC": ("IB_TC", "traffic class of the control messages"),
    "NCCL_IB_RETURN_ASYNC_EVENTS": ("1", "report IB async events as errors"),
    "NCCL_IB_AR_THRESHOLD": ("8192", "message size above which adaptive routing is used"),
    "NCCL_IB_QPS_PER_CONNECTION": ("1", "queue pairs per connection"),
    "NCCL_IB_SPLIT_DATA_ON_QPS": ("0", "split each message over the QPs (1) or round-robin (0)"),
    "NCCL_IB_CUDA_SUPPORT": ("auto", "deprecated; use NCCL_NET_GDR_LEVEL"),
    "NCCL_IB_PCI_RELAXED_ORDERING": ("2", "PCI relaxed ordering for IB (2 auto)"),
    "NCCL_IB_ADAPTIVE_ROUTING": ("auto", "IB adaptive routing"),
    "NCCL_IB_ECE_ENABLE": ("1", "IB enhanced connection establishment"),
    "NCCL_IB_MERGE_NICS": ("1", "merge the ports of dual-port NICs into one device"),
    "NCCL_IB_MERGE_VFS": ("1", "merge virtual functions of one NIC"),
    "NCCL_IB_USE_INLINE": ("0", "inline small IB messages"),
    "NCCL_IB_ADDR_RANGE6": ("unset", "IPv6 GID range"),
    "NCCL_OOB_NET_ENABLE": ("0", "use the network plugin for bootstrap"),
    "NCCL_OOB_NET_IFNAME": ("unset", "interface of the out-of-band network"),
    "NCCL_UID_STAGGER_THRESHOLD": ("256", "ranks above which bootstrap connections are staggered"),
    "NCCL_UID_STAGGER_RATE": ("7000", "bootstrap connections per second when staggered"),
    "NCCL_NET": ("auto", "network module by name (IB, Socket, plugin name)"),
    "NCCL_NET_PLUGIN": ("auto (libnccl-net.so)", "network plugin library"),
    "NCCL_TUNER_PLUGIN": ("unset", "tuner plugin library"),
    "NCCL_PROFILER_PLUGIN": ("unset", "profiler plugin library"),
    "NCCL_ENV_PLUGIN": ("unset", "environment plugin library"),
    "NCCL_NET_GDR_LEVEL": ("auto", "max GPU-NIC distance for GPU Direct RDMA (LOC, PIX, PXB, PHB, SYS)"),
    "NCCL_NET_GDR_READ": ("1 on NVLink platforms", "use GDR for sends too"),
    "NCCL_NET_GDR_C2C": ("1 (2.27+)", "GDR over C2C on Grace platforms"),
    "NCCL_NET_SHARED_BUFFERS": ("1", "share network buffers between peers"),
    "NCCL_NET_SHARED_COMMS": ("1", "share network connections (PXN)"),
    "NCCL_NET_OVERHEAD": ("auto", "network overhead used by the tuner (us)"),
    "NCCL_NET_FORCE_FLUSH": ("0", "flush GDR receives"),
    "NCCL_IGNORE_CPU_AFFINITY": ("0", "ignore the job's CPU affinity and use the GPU's"),
    "NCCL_CONF_FILE": ("~/.nccl.conf, /etc/nccl.conf", "file of VAR=value settings"),
    "NCCL_COLLNET_ENABLE": ("0", "CollNet / SHARP in-network reduction"),
    "NCCL_COLLNET_NODE_THRESHOLD": ("2", "nodes needed before CollNet is used"),
    "NCCL_TOPO_FILE": ("unset", "XML topology to load instead of detecting"),
    "NCCL_TOPO_DUMP_FILE": ("unset", "write the detected topology as XML"),
    "NCCL_GRAPH_FILE": ("unset", "XML graph (rings/trees) to load"),
    "NCCL_GRAPH_DUMP_FILE": ("unset", "write the computed graphs as XML"),
    "NCCL_SET_THREAD_NAME": ("0", "name NCCL's threads"),
    "NCCL_SINGLE_RING_THRESHOLD": ("262144", "deprecated: size under which one ring is used"),
    "NCCL_LL_THRESHOLD": ("auto", "deprecated: LL protocol threshold"),
    "NCCL_TREE_THRESHOLD": ("auto", "deprecated: tree algorithm threshold"),
    "NCCL_ALGO": ("auto (per size)", "force algorithms: Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT"),
    "NCCL_PROTO": ("auto (per size)", "force protocols: LL, LL128, Simple"),
    "NCCL_NVB_DISABLE": ("0", "disable NVLink-bridge (through a third GPU) paths"),
    "NCCL_PXN_DISABLE": ("0", "disable PXN (send through an NVLink peer's NIC)"),
    "NCCL_P2P_PXN_LEVEL": ("2", "when PXN is used for send/recv (0 never, 1 if needed, 2 always)"),
    "NCCL_RUNTIME_CONNECT": ("1", "connect channels lazily, at first use"),
    "NCCL_NVLS_ENABLE": ("2 (auto)", "NVLink SHARP (NVSwitch multicast) collectives"),
    "NCCL_NVLS_CHUNKSIZE": ("131072", "NVLS chunk size"),
    "NCCL_MNNVL_ENABLE": ("2 (auto)", "multi-node NVLink"),
    "NCCL_CUMEM_ENABLE": ("auto (enabled since 2.19; 0 in 2.18)", "allocate NCCL memory with cuMem* APIs"),
    "NCCL_CUMEM_HOST_ENABLE": ("auto (2.23+)", "use cuMem for host memory (SHM transport)"),
    "NCCL_P2P_DISABLE": ("0", "1 disables P2P (NVLink/PCIe peer) transport between GPUs"),
    "NCCL_P2P_LEVEL": ("auto", "max GPU-GPU distance for P2P (LOC, NVL, PIX, PXB, PHB, SYS)"),
    "NCCL_P2P_DIRECT_DISABLE": ("0", "disable direct access to peer buffers inside one process"),
    "NCCL_P2P_NET_CHUNKSIZE": ("131072", "send/recv chunk size over the network"),
    "NCCL_P2P_NVL_CHUNKSIZE": ("524288", "send/recv chunk size over NVLink"),
    "NCCL_P2P_PCI_CHUNKSIZE": ("131072", "send/recv chunk size over PCIe"),
    "NCCL_P2P_LL_THRESHOLD": ("16384", "send/recv size under which LL is used"),
    "NCCL_P2P_USE_CUDA_MEMCPY": ("0", "use copy engines for P2P"),
    "NCCL_P2P_READ_ENABLE": ("auto", "P2P read instead of write"),
    "NCCL_SHM_DISABLE": ("0", "1 disables the shared-memory transport"),
    "NCCL_SHM_USE_CUDA_MEMCPY": ("0", "use copy engines for SHM"),
    "NCCL_SHM_MEMCPY_MODE": ("1", "which side copies for SHM with cudaMemcpy"),
    "NCCL_SHM_LOCALITY": ("2", "where SHM buffers live (1 sender, 2 receiver)"),
    "NCCL_BUFFSIZE": ("4194304", "bytes of buffer per channel and peer (Simple protocol)"),
    "NCCL_LL_BUFFSIZE": ("auto", "LL protocol buffer size"),
    "NCCL_LL128_BUFFSIZE": ("auto", "LL128 protocol buffer size"),
    "NCCL_NTHREADS": ("512", "CUDA threads per block"),
    "NCCL_MAX_NCHANNELS": ("auto", "upper bound on channels (CTAs)"),
    "NCCL_MIN_NCHANNELS": ("auto", "lower bound on channels (CTAs)"),
    "NCCL_MAX_RINGS": ("auto", "deprecated: use NCCL_MAX_NCHANNELS"),
    "NCCL_MIN_RINGS": ("auto", "deprecated: use NCCL_MIN_NCHANNELS"),
    "NCCL_MAX_CTAS": ("auto", "upper bound on CTAs (2.17+)"),
    "NCCL_MIN_CTAS": ("auto", "lower bound on CTAs (2.17+)"),
    "NCCL_CGA_CLUSTER_SIZE": ("auto", "CUDA thread block cluster size (sm90+)"),
    "NCCL_NCHANNELS_PER_NET_PEER": ("2", "channels per network peer for send/recv"),
    "NCCL_CHECKS_DISABLE": ("0", "deprecated: argument checks"),
    "NCCL_CHECK_POINTERS": ("0", "check CUDA pointers of every call (slow)"),
    "NCCL_LAUNCH_MODE": ("PARALLEL", "kernel launch mode for multi-GPU-per-thread (PARALLEL, GROUP)"),
    "NCCL_LAUNCH_ORDER_IMPLICIT": ("0", "order kernel launches by host call order"),
    "NCCL_GRAPH_MIXING_SUPPORT": ("1", "allow mixing CUDA-graph and eager launches on one communicator"),
    "NCCL_GRAPH_REGISTER": ("1", "register user buffers captured in CUDA graphs"),
    "NCCL_LOCAL_REGISTER": ("1", "register user buffers for ncclCommRegister"),
    "NCCL_LEGACY_CUDA_REGISTER": ("0", "register cudaMalloc'd buffers (legacy IPC)"),
    "NCCL_DMABUF_ENABLE": ("1", "use Linux DMA-BUF for GPU Direct RDMA"),
    "NCCL_GDRCOPY_ENABLE": ("0", "use GDRCopy for network flushes"),
    "NCCL_WORK_FIFO_BYTES": ("1048576", "size of the work FIFO to the GPU"),
    "NCCL_WORK_FIFO_DEPTH": ("65536", "deprecated: use NCCL_WORK_FIFO_BYTES"),
    "NCCL_COMM_BLOCKING": ("1", "blocking communicator calls (0: non-blocking init/abort)"),
    "NCCL_COMM_SPLIT_SHARE_RESOURCES": ("0", "child communicators share the parent's resources"),
    "NCCL_COMM_ID": ("unset", "host:port of the bootstrap root (ncclGetUniqueId)"),
    "NCCL_HOSTID": ("hostname + boot id", "identity of the host, to group ranks by node"),
    "NCCL_RAS_ENABLE": ("1 (2.24+)", "RAS subsystem (ncclras on port 28028)"),
    "NCCL_RAS_ADDR": ("localhost:28028", "RAS listening address"),
    "NCCL_RAS_TIMEOUT_FACTOR": ("1", "scale RAS timeouts"),
    "NCCL_PAT_ENABLE": ("auto", "PAT algorithm for allgather/reduce-scatter at 1 GPU per node"),
    "NCCL_CTA_POLICY": ("0 (2.27+)", "CTA scheduling policy"),
    "NCCL_ALLOC_P2P_NET_LL_BUFFERS": ("0", "allocate LL buffers for network send/recv"),
    "NCCL_PROXY_PROFILE": ("unset", "proxy thread profiling dump file"),
    "NCCL_PROGRESS_APPENDOP_FREQ": ("8", "proxy progress frequency"),
    "NCCL_NVLSTREE_MAX_CHUNKSIZE": ("262144", "NVLSTree chunk size"),
    "NCCL_WIN_ENABLE": ("1 (2.27+)", "symmetric memory windows"),
    "NCCL_SYM_ENABLE": ("1 (2.27+)", "symmetric-memory kernels"),
    "NCCL_ASYNC_ERROR_HANDLING": ("see TORCH_NCCL_ASYNC_ERROR_HANDLING", ("PyTorch's old name (before 2.2) of "
                                  "TORCH_NCCL_ASYNC_ERROR_HANDLING")),
    "NCCL_BLOCKING_WAIT": ("see TORCH_NCCL_BLOCKING_WAIT", "PyTorch's old name (before 2.2) of TORCH_NCCL_BLOCKING_WAIT"),
    "NCCL_DESYNC_DEBUG": ("see TORCH_NCCL_DESYNC_DEBUG", "PyTorch's old name of TORCH_NCCL_DESYNC_DEBUG"),
}

# Set by containers, build systems and installers; NCCL itself does not read them.
NOT_NCCL_SETTINGS: dict[str, str] = {
    "NCCL_VERSION": "set by NVIDIA containers to the NCCL they ship; not read by NCCL",
    "NCCL_HOME": "build/install path; not read by NCCL",
    "NCCL_ROOT": "build/install path; not read by NCCL",
    "NCCL_ROOT_DIR": "build/install path; not read by NCCL",
    "NCCL_INCLUDE_DIR": "build path; not read by NCCL",
    "NCCL_LIB_DIR": "build path; not read by NCCL",
    "NCCL_LIBRARY": "build path; not read by NCCL",
    "NCCL_PATH": "install path; not read by NCCL",
}

TORCH_VARS: dict[str, tuple[str, str]] = {
    "TORCH_NCCL_BLOCKING_WAIT": ("0", "wait() blocks the CPU until the collective ends or times out"),
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": ("3 (skip cleanup)", ("what the watchdog does on timeout/error: "
                                        "0 nothing, 1 abort+kill, 2 abort, 3 kill without cleanup")),
    "TORCH_NCCL_DESYNC_DEBUG": ("0", "on timeout, report which ranks lag (needs a store round-trip)"),
    "TORCH_NCCL_ENABLE_TIMING": ("0", "record start events: durations in Flight Recorder and hooks"),
    "TORCH_NCCL_ENABLE_MONITORING": ("1", "heartbeat monitor that kills a stuck watchdog"),
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": ("480 (600 before ~2.4)", "how long the watchdog may stall"),
    "TORCH_NCCL_TRACE_BUFFER_SIZE": ("0 on ~2.6-2.10, else 2000", "Flight Recorder entries; >0 enables it"),
    "TORCH_NCCL_DUMP_ON_TIMEOUT": ("1 (2.7+)", "dump Flight Recorder on timeout or NCCL error"),
    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": ("~/.cache/torch/comm_lib_trace_rank_", "Flight Recorder dump prefix"),
    "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": ("unset", "FIFO prefix; a write to it dumps Flight Recorder"),
    "TORCH_NCCL_TRACE_CPP_STACK": ("0", "C++ frames in Flight Recorder"),
    "TORCH_NCCL_COORD_CHECK_MILSEC": ("1000", "how often the dump signal is polled"),
    "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": ("15000 (2.7+)", "time allowed for the dump"),
    "TORCH_NCCL_EXTRA_DUMP_ON_EXEC": ("0", "dump when the watchdog thread dies"),
    "TORCH_NCCL_AVOID_RECORD_STREAMS": ("0 (1 in 2.6+)", "keep tensors alive without recordStream"),
    "TORCH_NCCL_USE_COMM_NONBLOCKING": ("0", "non-blocking NCCL communicators"),
    "TORCH_NCCL_CUDA_EVENT_CACHE": ("1", "reuse CUDA events"),
    "TORCH_NCCL_NAN_CHECK": ("0", "check collective inputs for NaN (slow)"),
    "TORCH_NCCL_PROPAGATE_ERROR": ("0", "tell other ranks about a rank's error through the store"),
    "TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN": ("1", "log C++ stacks when killed by the watchdog"),
    "TORCH_NCCL_RETHROW_CUDA_ERRORS": ("1", "rethrow CUDA errors from the watchdog"),
    "TORCH_NCCL_HIGH_PRIORITY": ("0", "high-priority NCCL streams"),
    "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK": ("0", "register allocator segments with NCCL"),
    "TORCH_NCCL_ABORT_IN_DESTROY_PG": ("0", "abort communicators in destroy_process_group"),
    "TORCH_NCCL_DUMP_DEBUG_INFO": ("unset", "older spelling of dump-on-timeout; check your torch version"),
    "TORCH_FR_BUFFER_SIZE": ("as TORCH_NCCL_TRACE_BUFFER_SIZE", "alias of TORCH_NCCL_TRACE_BUFFER_SIZE (newer torch)"),
    "TORCH_FR_DUMP_ON_TIMEOUT": ("as TORCH_NCCL_DUMP_ON_TIMEOUT", "alias of TORCH_NCCL_DUMP_ON_TIMEOUT"),
    "TORCH_FR_DUMP_TEMP_FILE": ("as TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "alias of TORCH_NCCL_DEBUG_INFO_TEMP_FILE"),
    "TORCH_FR_CPP_STACK": ("as TORCH_NCCL_TRACE_CPP_STACK", "alias of TORCH_NCCL_TRACE_CPP_STACK"),
}

PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_FR_")


def relevant(name: str) -> bool:
    return name.startswith(PREFIXES)


def describe(name: str) -> tuple[str | None, str | None]:
    """(default, meaning) of a known variable, (None, None) otherwise."""
    if name in NCCL_VARS:
        return NCCL_VARS[name]
    if name in TORCH_VARS:
        return TORCH_VARS[name]
    if name in NOT_NCCL_SETTINGS:
        return "-", NOT_NCCL_SETTINGS[name]
    return None, None


def probable_typo(name: str) -> str | None:
    """The known name an unknown one most likely misspells, if any is close enough."""
    pool = list(TORCH_VARS) if name.startswith("TORCH_") else list(NCCL_VARS) + list(TORCH_VARS)
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.8)
    return close[0] if close else None
