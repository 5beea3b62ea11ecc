// Explains an ingest that wrote nothing: newer stored facts, or GPU uuids owned elsewhere.
// @read
// @param gpu_uuids list<string>
// @param host string
// @row stored_collected_at float?, taken list<map>
OPTIONAL MATCH (prev:Host {name: $host})
OPTIONAL MATCH (taken:GPU)
WHERE taken.uuid IN $gpu_uuids AND taken.host <> $host
RETURN prev.collected_at AS stored_collected_at,
       collect(DISTINCT {uuid: taken.uuid, host: taken.host}) AS taken
