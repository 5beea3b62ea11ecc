// Reservations by id (or by idempotency key) with the GPUs they hold. A GPU without its host is
// left out (FalkorDB's OPTIONAL MATCH can bind the GPU with a null host when the HAS_GPU edge is gone).
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
RETURN properties(r) AS reservation, gpus
