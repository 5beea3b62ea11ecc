"""Which hosts of a multi-host NCCL dump share an NVLink domain: only those on a shared fabric."""

from __future__ import annotations

from pathlib import Path

from topo_collector.importers import ImportOptions, import_hosts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "topology"
# Apart from FIXTURES: tests iterate that folder as "one file per host model".
TWO_HGX = Path(__file__).resolve().parents[1] / "fixtures" / "nccl-multihost" / "two-hgx-hosts.nccl.xml"


def test_two_hgx_boards_in_one_dump_stay_two_nvlink_islands() -> None:
    # Two 8-GPU HGX hosts, each with its own 4 on-board NVSwitches at the same PCI bus ids.
    result = import_hosts(TWO_HGX, ImportOptions(host="x", host_names=["a", "b"]))
    assert [len(h.gpus) for h in result.hosts] == [8, 8]
    for h in result.hosts:
        assert {g.nvlink_domain for g in h.gpus} == {None}
        assert [(s.id, s.pci_bus_id, s.location) for s in h.nvswitches] == [
            (bus, bus, "host") for bus in ("0000:1a:00.0", "0000:1b:00.0", "0000:1c:00.0", "0000:1d:00.0")
        ]


def test_an_explicit_domain_joins_hgx_boards_but_their_switches_stay_on_board() -> None:
    opts = ImportOptions(host="x", host_names=["a", "b"], nvlink_domain="dom-1")
    result = import_hosts(TWO_HGX, opts)
    assert {g.nvlink_domain for h in result.hosts for g in h.gpus} == {"dom-1"}
    assert {(s.location, s.pci_bus_id is not None) for h in result.hosts for s in h.nvswitches} == {("host", True)}


def test_nvl72_trays_still_share_one_domain_through_the_rack_switch() -> None:
    result = import_hosts(FIXTURES / "nvl72-two-trays.nccl.xml", ImportOptions(host="x", host_names=["t1", "t2"]))
    domains = {g.nvlink_domain for h in result.hosts for g in h.gpus}
    assert len(domains) == 1 and None not in domains
    assert {(s.location, s.pci_bus_id) for h in result.hosts for s in h.nvswitches} == {("rack", None)}
