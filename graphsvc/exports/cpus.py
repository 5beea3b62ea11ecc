"""From the CPU lists the graph keeps per NUMA node to the core numbers Slurm wants.

The graph stores each NUMA node's CPUs as Linux lists them (``0-55,112-167``): hardware
threads. Slurm's gres.conf ``Cores=`` and slurm.conf's ``CoresPerSocket`` count *cores*,
numbered the way hwloc numbers them (``lstopo``'s ``Core L#``): socket by socket, so core 0
is the first core of the first socket. Writing thread ids there makes slurmd log
"Invalid GRES data for gpu" and drop the GPU-CPU binding.

Linux numbers hardware threads core-first: with T threads and k threads per core, CPUs
0..T/k-1 are the first thread of each core and CPU x+T/k is x's sibling. A NUMA node of a
k-way SMT host therefore lists k equal runs, each shifted by T/k (``0-55,112-167``). That
is what `core_layout` looks for, on hosts with two or more NUMA nodes; anything else (a
single node, one run per node, uneven runs) is taken as one thread per core. The facts
carry no sibling lists, so this reading is a convention, not a measurement: a host whose
threads are numbered otherwise gets its thread ids as cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def parse_cpulist(text: str | None) -> list[int]:
    """``"0-3,8"`` -> ``[0, 1, 2, 3, 8]`` (sorted, unique); empty or None -> []."""
    out: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def format_cpulist(values: list[int]) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``"0-3,8"``: the range form Slurm and Linux both read."""
    runs: list[str] = []
    ordered = sorted(set(values))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


@dataclass(frozen=True)
class CoreLayout:
    """A host's cores as Slurm counts them; `cores` maps each NUMA node to its core numbers."""

    threads_per_core: int
    sockets: int
    cores_per_socket: int
    cores: dict[int, list[int]] = field(default_factory=dict)

    @property
    def total_cores(self) -> int:
        return sum(len(c) for c in self.cores.values())

    def cores_of(self, numa: int | None) -> str | None:
        """The ``Cores=`` value for a device on this NUMA node (None where unknown)."""
        if numa is None or not self.cores.get(numa):
            return None
        return format_cpulist(self.cores[numa])


def smt_width(numa_cpus: dict[int, list[int]]) -> int:
    """Threads per core read from the Linux numbering (see the module docstring); 1 if unsure."""
    all_cpus = sorted(c for cpus in numa_cpus.values() for c in cpus)
    total = len(all_cpus)
    if len([c for c in numa_cpus.values() if c]) < 2 or all_cpus != list(range(total)):
        return 1  # one node: its single run reads the same with or without SMT
    for k in (8, 4, 2):
        if total % k:
            continue
        stride = total // k
        if all(_is_smt_runs(cpus, stride, k) for cpus in numa_cpus.values() if cpus):
            return k
    return 1


def _is_smt_runs(cpus: list[int], stride: int, k: int) -> bool:
    first = [c for c in cpus if c < stride]
    if len(first) < 2 or first != list(range(first[0], first[0] + len(first))):
        return False  # the first threads of a node's cores form one contiguous run of cores
    expected = sorted(c + j * stride for j in range(k) for c in first)
    return expected == cpus


def core_layout(numa_cpus: dict[int, str | None]) -> CoreLayout:
    """Slurm's view of a host from its NUMA CPU lists: sockets = NUMA nodes holding CPUs."""
    parsed = {n: parse_cpulist(c) for n, c in numa_cpus.items()}
    parsed = {n: c for n, c in sorted(parsed.items()) if c}
    k = smt_width(parsed)
    stride = sum(len(c) for c in parsed.values()) // k if parsed else 0
    # A core is known by its first thread (x mod stride); hwloc numbers cores node by node.
    physical = {n: sorted({c % stride for c in cpus}) for n, cpus in parsed.items()}
    cores: dict[int, list[int]] = {}
    next_core = 0
    for n, firsts in physical.items():
        cores[n] = list(range(next_core, next_core + len(firsts)))
        next_core += len(firsts)
    sizes = {len(c) for c in cores.values()}
    sockets = len(cores)
    per_socket = sizes.pop() if len(sizes) == 1 else 0  # uneven nodes: no single CoresPerSocket
    return CoreLayout(threads_per_core=k, sockets=sockets, cores_per_socket=per_socket, cores=cores)
