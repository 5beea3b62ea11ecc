"""What the declared schema derives for each store's indexes, and the static tie bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphsvc.store.schema import TIE_BUCKETS, graph_schema, load_schema, tie_bucket


def test_a_composite_index_is_one_neo4j_index_and_single_falkordb_indexes() -> None:
    schema = graph_schema()
    assert (
        "CREATE INDEX nvlinkdomain_free_gpus_tie_bucket IF NOT EXISTS "
        "FOR (n:NVLinkDomain) ON (n.free_gpus, n.tie_bucket)" in schema.neo4j_ddl()
    )
    pairs = schema.falkordb_indexes()
    assert pairs.count(("NVLinkDomain", "free_gpus")) == 1  # declared twice, indexed once
    assert ("NVLinkDomain", "tie_bucket") in pairs


def test_a_composite_index_on_an_undeclared_property_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "graph.toml"
    path.write_text(
        'graph_version = 1\n[nodes.A]\nkey = "k"\ncomposite_indexes = [["k", "missing"]]\n'
        'properties = { k = "string" }\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"A\.missing"):
        load_schema(path)


@pytest.mark.parametrize("key", ["h100-su1-n02/nvlink/0", "gb200-rack-3", "", "ü/nvlink/7"])
def test_the_tie_bucket_is_a_stable_hash_in_range(key: str) -> None:
    assert tie_bucket(key) == tie_bucket(str(key)) in range(1, TIE_BUCKETS + 1)  # never 0 (schema.tie_bucket)


def test_tie_buckets_spread_a_cluster_of_domains() -> None:
    counts = [0] * TIE_BUCKETS
    for su in range(1, 33):
        for node in range(1, 33):
            counts[tie_bucket(f"h100-su{su}-n{node:02d}/nvlink/0") - 1] += 1
    assert min(counts) > 1024 / TIE_BUCKETS / 2  # no bucket holds less than half its share
    assert tie_bucket("h100-su1-n02/nvlink/0") == 16  # crc32, not Python's per-process salted hash


def test_the_migrations_bucket_as_many_ways_as_ingest() -> None:
    """Cypher cannot read TIE_BUCKETS: the v5 migrations spell the count out."""
    root = Path(__file__).resolve().parents[2] / "queries" / "migrations"
    for name in ("0005_1_domain_tie_buckets.cypher", "0005_2_host_tie_buckets.cypher"):
        assert f"rand() * {TIE_BUCKETS})" in (root / name).read_text(encoding="utf-8"), name
    # v6 moves bucket 0 (what v5's random buckets and ingest's hash gave) to the last bucket.
    for name in ("0006_1_domain_tie_buckets_from_one.cypher", "0006_2_host_tie_buckets_from_one.cypher"):
        assert f"tie_bucket = {TIE_BUCKETS}\n" in (root / name).read_text(encoding="utf-8"), name
