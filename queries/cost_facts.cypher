// Every cost and energy fact, by key (a few hundred at most: prices by site, model and capacity).
// @read
// @row key any, kind any, site any, model any, capacity any, value any, unit any, source any, as_of any
// @row as_of_s any, catalog any, note any
MATCH (f:CostFact)
RETURN f.key AS key, f.kind AS kind, f.site AS site, f.model AS model, f.capacity AS capacity,
       f.value AS value, f.unit AS unit, f.source AS source, f.as_of AS as_of, f.as_of_s AS as_of_s,
       f.catalog AS catalog, f.note AS note
ORDER BY key
