// Reservations by id (or by idempotency key) with the GPUs they hold or held. A GPU without its
// host is left out (FalkorDB's OPTIONAL MATCH can bind the GPU with a null host when the HAS_GPU
// edge is gone). The GPUs it holds come along its HOLDS edges; those it was given and no longer
// holds (`held_uuids`, set by every statement that gives it GPUs) come by uuid once it has ended,
// a later reservation of them having taken the edges (an ended reservation's GPUs read as none
// once reused; a probe's case), each an index seek in a subquery. A live reservation lists what
// it holds, as before: a shrink's freed GPUs are not its GPUs any more.
// @read
// @param ids list<string>
// @param keys list<string>
// @row reservation map, gpus list<map>
MATCH (r:Reservation)
WHERE r.id IN $ids OR r.idempotency_key IN $keys
OPTIONAL MATCH (r)-[:HOLDS]->(g:GPU)<-[:HAS_GPU]-(h:Host)
WITH r, g, h
ORDER BY h.name, g.index
WITH r, collect(CASE WHEN g IS NULL OR h IS NULL THEN NULL ELSE {
  uuid: g.uuid, index: g.index, model: g.model, host: h.name, rack: h.rack, scalable_unit: h.scalable_unit,
  state: g.state, held: g.reservation = r.id
} END) AS gpus
WITH r, gpus, CASE WHEN r.state IN ['active', 'pending'] THEN [] ELSE
  [u IN coalesce(r.held_uuids, []) WHERE NOT u IN [x IN gpus | x.uuid]] END AS gone
CALL (r, gone) {
  UNWIND gone AS u
  MATCH (og:GPU {uuid: u})<-[:HAS_GPU]-(oh:Host)
  WITH og, oh
  ORDER BY oh.name, og.index
  RETURN collect({
    uuid: og.uuid, index: og.index, model: og.model, host: oh.name, rack: oh.rack, scalable_unit: oh.scalable_unit,
    state: og.state, held: false
  }) AS older
}
RETURN properties(r) AS reservation, gpus + older AS gpus
