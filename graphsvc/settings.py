"""Service settings: flags override ``GRAPHSVC_*`` environment variables, which override defaults."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GRAPHSVC_", extra="ignore")

    store: str = Field(
        default="embedded",
        description="'embedded', falkordb://host:port, or neo4j://, bolt://, neo4j+s:// URIs",
    )
    data_dir: Path = Field(default=Path(".graphsvc"), description="Embedded store data directory")
    graph: str = Field(default="topology", pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str = "neo4j"
    neo4j_plan_allowance_s: float = Field(
        default=50.0,
        ge=0,
        le=600,
        description="Neo4j: added to query_timeout_s for a statement's first run with a new plan (planned inside it)",
    )
    falkordb_password: SecretStr = SecretStr("")
    appendfsync: str = Field(default="always", pattern=r"^(always|everysec|no)$")
    aof_rewrite_min_size: str = Field(
        default="4mb",
        pattern=r"^[1-9][0-9]*(kb|mb|gb)?$",
        description="Embedded store: compact the append-only log once its incremental part is this big ...",
    )
    aof_rewrite_percentage: int = Field(
        default=25, ge=1, le=10_000, description="... and has grown by this percentage since the last compaction"
    )
    redis_server: str | None = None
    store_check_interval_s: float = Field(
        default=0.5, gt=0, description="How often the embedded redis-server is checked (restarted if it died)"
    )
    falkordb_module: str | None = None
    store_plan_cache: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Embedded store: compiled plans FalkorDB keeps (CACHE_SIZE); unset: one per named statement",
    )

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535, description="0: a free port the kernel picks")
    port_file: Path | None = Field(default=None, description="Written with the port once the service listens on it")
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, le=512 * 1024 * 1024)
    max_fabric_body_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024, description="PUT /v1/fabric, operators only"
    )
    max_anonymous_body_bytes: int = Field(
        default=16 * 1024, ge=0, le=1024 * 1024, description="Callers without a valid token (refused with 401 above)"
    )
    query_timeout_s: float = Field(default=10.0, gt=0, le=600)
    stale_after_s: float = Field(default=300.0, gt=0)
    max_clock_skew_s: float = Field(
        default=300.0, ge=0, description="How far ahead of the service's clock a collected_at may be"
    )
    default_ttl_s: int = Field(default=600, ge=1, description="Lease of a reservation that asks for none")
    max_ttl_s: int = Field(default=7 * 24 * 3600, ge=1)
    lease_check_interval_s: float = Field(default=5.0, gt=0)
    reservation_history_s: float = Field(
        default=7 * 24 * 3600.0,
        ge=3600,  # a reservation read back right after it ended (a release's answer, a resize) is still there
        description="How long an ended reservation stays readable (by id, in lists, for an idempotent retry) "
        "before the lease job deletes it",
    )
    insecure_dev: bool = Field(default=False, description="No authentication: every caller is an operator")
    tokens_file: Path | None = Field(default=None, description="JSON list of {name, role, sha256, hosts}")
    tokens: str | None = Field(default=None, description="The same JSON inline (hashes only, never tokens)")
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None
    mutation_rate_per_minute: float = Field(
        default=120_000.0,
        gt=0,
        description="Mutations (GraphQL and REST) a token may make a minute: 2,000/s, "
        "one scheduler's reserve+release at 1,000 jobs/s (docs/deploy.md)",
    )
    mutation_burst: int = Field(default=2000, ge=1, description="Mutations a token may make at once")
    graphql_max_cost: int = Field(default=1000, ge=1, description="Most cost units one GraphQL operation may have")
    graphql_cost_per_minute: float = Field(
        default=360_000.0, gt=0, description="Cost units a token earns a minute (GraphQL and the REST fast path)"
    )
    graphql_cost_burst: int = Field(default=20_000, ge=1, description="Cost units a token may spend at once")
    dev_mode: bool = Field(default=False, description="GraphiQL at /graphql; `graphsvc demo` turns it on")
    opentelemetry: bool = Field(
        default=False,
        description="FastAPI's OpenTelemetry spans, HTTP metrics and logs, for an OpenTelemetry SDK or agent the "
        "operator configures (off: every request would ask OpenTelemetry for its providers; /metrics is the "
        "service's own)",
    )

    @model_validator(mode="after")
    def _burst_fits_a_query(self) -> Settings:
        if self.graphql_cost_burst < self.graphql_max_cost:
            raise ValueError("graphql_cost_burst must be at least graphql_max_cost, or the largest query never runs")
        return self

    @field_validator("store")
    @classmethod
    def _known_store(cls, value: str) -> str:
        if value == "embedded" or value.split("://", 1)[0] in STORE_SCHEMES:
            return value
        raise ValueError(f"unknown store {value!r}: use 'embedded', falkordb://host:port, or a neo4j:// / bolt:// URI")


STORE_SCHEMES = frozenset({"falkordb", "redis", "neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"})
