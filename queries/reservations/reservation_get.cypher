// Reservations by id (or by idempotency key) with the GPUs they hold or held. Along HOLDS edges, a
// GPU without its host is left out (FalkorDB's OPTIONAL MATCH can bind the GPU with a null host when the HAS_GPU
// edge is gone). A live reservation (or one from before `held_uuids`) lists the GPUs along its
// HOLDS edges. An ended one lists the GPUs it held when it ended, by uuid (`held_uuids`, kept by
// every statement that gives or takes back GPUs: reserve, resize, preemption), each an index seek
// in a subquery: a later reservation of them takes their HOLDS edges, and the list went empty
// (an idempotent retry answered a reservation of no GPU; a probe's case). By uuid, not the edges
// less those found: that difference grew with the square of the GPUs (2,048: 0.6 s; a review).
// A GPU whose host was removed (remove_host deletes them) is no node: it is listed by its uuid
// alone, index, model and host null (as_reservation_rows says what the API shows), as is a GPU
// left without its host; an ended reservation and its idempotent retry answered none of them (a
// probe's case). A live reservation (a lapsed hold does not block a removal) lists the uuids of
// `held_uuids` that are no node besides its HOLDS edges, looked up only when it has fewer edges.
// @read
// @param ids list<string>
// @param keys list<string>
// @row reservation map, gpus list<map>
MATCH (r:Reservation)
WHERE r.id IN $ids OR r.idempotency_key IN $keys
WITH r, r.held_uuids IS NOT NULL AND NOT r.state IN ['active', 'pending'] AS by_uuid
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)<-[:HAS_GPU]-(h:Host)
WHERE NOT by_uuid
WITH r, by_uuid, g, h
ORDER BY h.name, g.index
WITH r, by_uuid, collect(CASE WHEN g IS NULL OR h IS NULL THEN NULL ELSE {
  uuid: g.uuid, index: g.index, model: g.model, host: h.name, rack: h.rack, scalable_unit: h.scalable_unit,
  state: g.state, held: g.reservation = r.id
} END) AS gpus
CALL (r, by_uuid, gpus) {
  UNWIND CASE WHEN by_uuid OR size(gpus) < size(coalesce(r.held_uuids, [])) THEN r.held_uuids ELSE [] END AS u
  OPTIONAL MATCH (og:GPU {uuid: u})
  WITH r, by_uuid, u, og
  WHERE by_uuid OR og IS NULL
  OPTIONAL MATCH (og)<-[:HAS_GPU]-(oh:Host)
  WITH og, oh, r, u
  ORDER BY oh.name, og.index, u
  RETURN collect({
    uuid: u, index: og.index, model: og.model, host: oh.name, rack: oh.rack, scalable_unit: oh.scalable_unit,
    state: og.state, held: og IS NOT NULL AND og.reservation = r.id
  }) AS ended
}
RETURN properties(r) AS reservation, gpus + ended AS gpus
