"""`slug` and `kubernetes_nodes` (graphsvc.exports.model): distinct names never share an object name,
every name is a DNS-1123 subdomain, and hosts that are no (or no single) Kubernetes node are said."""

from __future__ import annotations

import pytest

from graphsvc.exports.model import is_dns1123_subdomain, kubernetes_nodes, slug

ODD = ["Case-Node1", "case-node1", "odd..x", "odd_host.", "odd-host-", "a.-b", "a-.b", "_x_", "A" * 300, "x." * 80]


@pytest.mark.parametrize("limit", [40, 50, 63])
def test_slugs_are_valid_names_and_distinct(limit: int) -> None:
    slugs = [slug(name, limit) for name in ODD]
    assert len(set(slugs)) == len(ODD), slugs
    for s in slugs:
        assert is_dns1123_subdomain(s) and len(s) <= limit, s


def test_a_valid_name_is_its_own_slug() -> None:
    assert slug("case-node1") == "case-node1"
    assert slug("rack-1.su2") == "rack-1.su2"
    assert slug("Case-Node1").startswith("case-node1-")


def test_hosts_that_differ_by_case_or_are_no_node_name_are_left_out_and_said() -> None:
    nodes, notes = kubernetes_nodes(["Case-Node1", "case-node1", "odd..x", "odd_host.", "odd-host-", "Good-1"])
    assert nodes == {"Good-1": "good-1"}
    assert len(notes) == 4
    assert any("'Case-Node1', 'case-node1'" in n and "'case-node1'" in n for n in notes)
    for host in ("odd..x", "odd_host.", "odd-host-"):
        assert any(repr(host) in n and "DNS-1123" in n for n in notes)
