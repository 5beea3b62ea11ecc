"""Every export by name, stamped with the graph version and the newest fact time it used.

The REST route, the CLI and the drift checker all go through `render`, so a deployed copy
and the graph's current answer are always produced by the same code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from graphsvc.errors import DomainError, ErrorKind
from graphsvc.exports import formats, kubernetes
from graphsvc.exports.model import ClusterView, ExportStamp, cluster_view
from graphsvc.exports.nccl import NcclExportError, nccl_xml
from graphsvc.exports.sites import sites_json
from graphsvc.read.hosts import HostReader, HostTopology
from graphsvc.store.gateway import Gateway
from graphsvc.store.migrate import stored_version


class ExportFormat(str, Enum):  # noqa: UP042 - FastAPI path enums
    SLURM_TREE = "slurm-tree"
    SLURM_BLOCK = "slurm-block"
    SLURM_YAML = "slurm-yaml"
    SLURM_GRES = "slurm-gres"
    SLURM_NODES = "slurm-nodes"
    KUEUE = "kueue"
    KUEUE_LABELS = "kueue-labels"
    TOPOGRAPH_LABELS = "topograph-labels"
    NFD = "nfd"
    DRA = "dra"
    VOLCANO = "volcano"
    NCCL = "nccl"
    SITES = "sites"  # every site, its clusters and links (graphsvc/exports/sites.py); no ?cluster=


PER_HOST = {ExportFormat.NCCL}
OPTIONAL_HOST = {ExportFormat.NFD}  # with ?host=: that host's features.d file; without: NodeFeature objects


class ExportError(DomainError):
    """An export that cannot be made from what was asked: no such cluster or host
    (`ErrorKind.NOT_FOUND`), a per-host format asked without a host (`ErrorKind.INVALID`), or a
    host whose facts cannot make the format (`ErrorKind.CONFLICT`: nccl for GPUs without a PCI
    bus id; the same request succeeds once a collector or importer has sent them)."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Rendered:
    text: str
    stamp: ExportStamp
    media_type: str = "text/plain"


SKIPPED_HOSTS = "graphsvc.io/skipped-hosts"


def as_list(items: list[dict[str, Any]], annotations: dict[str, str], skipped: list[str] | None = None) -> str:
    """A Kubernetes List in JSON (which is YAML): `kubectl apply -f` takes it as it is.

    `skipped`: why hosts that are no Kubernetes node have no object (ClusterView.not_nodes), in
    the List's own annotation; kubectl applies the items and never sends the List itself."""
    for item in items:
        item.setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
    found: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": items}
    if skipped:
        found["metadata"] = {"annotations": {SKIPPED_HOSTS: "; ".join(skipped)}}
    return json.dumps(found, indent=2) + "\n"


async def render(gw: Gateway, fmt: ExportFormat, cluster: str | None, host: str | None) -> Rendered:
    """`cluster` None: "default" for a cluster's export, the host's own for a per-host one. A
    per-host export of a host in another cluster than the one named is not found, as nfd's is;
    a per-cluster export refuses ?host= (it was ignored, even an unknown host: a probe's case)."""
    version = await stored_version(gw)
    if fmt is ExportFormat.SITES:
        stamp = ExportStamp(version, None)
        return Rendered(await sites_json(gw, stamp.annotations()), stamp, "application/json")
    if fmt in PER_HOST:
        if host is None:
            raise ExportError(ErrorKind.INVALID, f"the {fmt.value} export is per host: add ?host=NAME")
        rows = await gw.read("host_freshness", {"host": host})
        stamp = ExportStamp(version, rows[0]["collected_at"] if rows else None)
        topo = await HostReader(gw).host(host)
        if topo is None:
            raise ExportError(ErrorKind.NOT_FOUND, f"no host named {host!r}")
        if cluster is not None and topo.header.cluster != cluster:
            raise ExportError(ErrorKind.NOT_FOUND, f"no host named {host!r} in cluster {cluster!r}")
        try:
            text = nccl_xml(topo)
        except NcclExportError as exc:
            raise ExportError(ErrorKind.CONFLICT, str(exc)) from None
        return Rendered(text, stamp, "application/xml")
    if host is not None and fmt not in OPTIONAL_HOST:
        raise ExportError(ErrorKind.INVALID, f"the {fmt.value} export is per cluster: it takes no ?host=")
    cluster = cluster or "default"
    view = await cluster_view(gw, cluster)
    if not view.hosts:
        raise ExportError(ErrorKind.NOT_FOUND, f"cluster {cluster!r} has no hosts")
    stamp = ExportStamp(version, view.facts_as_of)
    return await _render_cluster(gw, fmt, view, host, stamp)


async def _render_cluster(gw: Gateway, fmt: ExportFormat, view: ClusterView, host: str | None,
                          stamp: ExportStamp) -> Rendered:  # fmt: skip
    head = stamp.comment_lines()
    notes = stamp.annotations()
    if fmt is ExportFormat.SLURM_TREE:
        return Rendered(formats.slurm_tree(view, head), stamp)
    if fmt is ExportFormat.SLURM_BLOCK:
        return Rendered(formats.slurm_block(view, head), stamp)
    if fmt is ExportFormat.SLURM_YAML:
        return Rendered(formats.slurm_topology_yaml(view, head), stamp, "application/yaml")
    if fmt is ExportFormat.SLURM_GRES:
        return Rendered(_after_first_line(formats.slurm_gres(view, await _hosts(gw, view)), head), stamp)
    if fmt is ExportFormat.SLURM_NODES:
        return Rendered(_after_first_line(formats.slurm_nodes(view, await _hosts(gw, view)), head), stamp)
    if fmt is ExportFormat.KUEUE:
        topologies = [formats.kueue_topology(view), kubernetes.topograph_kueue_topology(view)]
        return Rendered(as_list(topologies, notes), stamp, "application/json")
    if fmt is ExportFormat.KUEUE_LABELS:
        return Rendered(_after_first_line(formats.kueue_label_commands(view), head), stamp)
    if fmt is ExportFormat.TOPOGRAPH_LABELS:
        return Rendered(kubernetes.label_commands(view, kubernetes.topograph_labels(view), head), stamp)
    if fmt is ExportFormat.NFD:
        if host is not None:
            labels = kubernetes.topograph_labels(view).get(host)
            if labels is None:
                raise ExportError(ErrorKind.NOT_FOUND, f"no host named {host!r} in cluster {view.cluster!r}")
            return Rendered(kubernetes.nfd_feature_file(host, labels, head), stamp)
        return Rendered(
            as_list(kubernetes.nfd_node_features(view, notes), notes, view.not_nodes), stamp, "application/json"
        )
    if fmt is ExportFormat.DRA:
        slices = kubernetes.resource_slices(view, await _hosts(gw, view), notes)
        return Rendered(as_list(slices, notes, view.not_nodes), stamp, "application/json")
    return Rendered(as_list(formats.volcano_hypernodes(view), notes, view.not_nodes), stamp, "application/json")


async def _hosts(gw: Gateway, view: ClusterView) -> list[HostTopology]:
    """The view's hosts' topologies, in the view's order (one batched read for the cluster)."""
    found = await HostReader(gw).hosts([h.name for h in view.hosts])
    return [found[h.name] for h in view.hosts if h.name in found]


def _after_first_line(text: str, extra: list[str]) -> str:
    first, _, rest = text.partition("\n")
    return "\n".join([first, *extra, rest]) if rest else "\n".join([first, *extra]) + "\n"
