// Upserts cost and energy facts by key. A fact dated earlier than the stored one (as_of_s)
// does not overwrite it: an old price file loaded late never undoes an operator's update.
// (The filter is on a projected value: FalkorDB would fold it into the MERGE otherwise.)
// @write
// @param facts list<map>
// @param now float
// @row key any
UNWIND $facts AS fact
MERGE (f:CostFact {key: fact.key})
WITH f, fact, coalesce(f.as_of_s, 0.0) AS stored
WHERE stored <= fact.as_of_s
SET f.kind = fact.kind, f.site = fact.site, f.model = fact.model, f.capacity = fact.capacity,
    f.value = fact.value, f.unit = fact.unit, f.source = fact.source, f.as_of = fact.as_of,
    f.as_of_s = fact.as_of_s, f.catalog = fact.catalog, f.note = fact.note, f.updated_at = $now
RETURN f.key AS key
ORDER BY key
