"""The hot statements traverse some relationships without naming the label at their far end
(docs/store.md, "No label test the schema already makes"): that is only the same match while the
schema allows one label there. A relationship given a second label at such an end fails here,
naming the statements to label again."""

from __future__ import annotations

import pytest

from graphsvc.store.schema import graph_schema

# (relationship, end) -> the one label the schema allows there. Traversed label-free by
# reserve_batch_take, reserve_in_host_take, reserve_gpus, release_batch, delta_tail,
# placement_leaves_fit, placement_host_maps, placement_host_counts and placement_domain_counts.
LABEL_FREE_ENDS = {
    ("HAS_GPU", "from"): "Host",
    ("HAS_GPU", "to"): "GPU",
    ("IN_DOMAIN", "from"): "GPU",
    ("IN_DOMAIN", "to"): "NVLinkDomain",
    ("HOLDS", "to"): "GPU",
    ("NIC_AFFINITY", "to"): "NIC",
    ("HAS_NIC", "from"): "Host",
    ("HAS_NIC", "to"): "NIC",  # `()-[:UPLINK]->` after HAS_NIC, `()<-[:HAS_NIC]-` after UPLINK
    ("UPLINK", "to"): "Switch",
}


@pytest.mark.parametrize(("end", "label"), LABEL_FREE_ENDS.items(), ids=lambda x: str(x))
def test_a_label_free_end_has_one_label_in_the_schema(end: tuple[str, str], label: str) -> None:
    rel = graph_schema().relationships[end[0]]
    labels = rel.sources if end[1] == "from" else rel.targets
    assert labels == (label,), f"{end[0]} {end[1]}: {labels}; label it again in the statements named above"
