"""How many compiled query plans FalkorDB keeps, sized from the statements this service runs.

FalkorDB compiles a statement's text into a plan and keeps the plan in a least-recently-used
cache of ``CACHE_SIZE`` entries per server thread (25 by default); parameters travel apart from
the text, so one named statement is one entry whatever its arguments. This service runs over a
hundred named statements (``queries/``). With 25 entries, a statement that ran before 25 others
did is compiled again: the reservation batch statement costs the store ~6 ms of CPU compiled
and ~0.8 ms from the cache (docs/benchmarks.md, "Plans compiled once"), so a placement request
asked after an operator's explorer views or a metrics scrape paid its compile every time. The
embedded store is started with room for every named statement; a FalkorDB server this service
does not start (``falkordb://``) is checked, and a smaller cache is logged at startup.
Neo4j keeps 1,000 plans per database by default: nothing to size there.
"""

from __future__ import annotations

from graphsvc.store.queries import QueryRegistry, default_registry

FALKORDB_DEFAULT = 25
HEADROOM = 16  # statements that are not named queries: index DDL, the explorer's EXPLAIN, tests' own


def served_statements(registry: QueryRegistry) -> int:
    """The named statements a running service may ask for: every query but the migrations
    (run once, at startup, before anything else)."""
    return sum(1 for name in registry.names() if not name.startswith("migrations/"))


def plan_cache_size(statements: int) -> int:
    """Entries enough that no named statement is evicted by the others."""
    return max(FALKORDB_DEFAULT, statements + HEADROOM)


def sized_plan_cache() -> int:
    """The embedded store's CACHE_SIZE: room for every named statement under queries/."""
    return plan_cache_size(served_statements(default_registry()))


def plan_cache_warning(configured: int | None, statements: int) -> str | None:
    """What to tell the operator of a FalkorDB server whose plan cache is smaller than the
    service's named statements (None: large enough, or not known)."""
    if configured is None or configured >= statements:
        return None
    return (
        f"FalkorDB keeps {configured} compiled plans (CACHE_SIZE) and this service runs {statements} named "
        f"statements: statements will be compiled again as others evict them (several ms each). "
        f"Start FalkorDB with CACHE_SIZE {plan_cache_size(statements)} or more."
    )
