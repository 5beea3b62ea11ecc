// Explains an ingest that wrote nothing: newer stored facts, or GPU or MIG slice uuids owned elsewhere.
// @read
// @param gpu_uuids list<string>
// @param host string
// @param slice_uuids list<string>
// @row stored_collected_at float?, taken list<map>
OPTIONAL MATCH (prev:Host {name: $host})
OPTIONAL MATCH (taken:GPU)
WHERE taken.uuid IN $gpu_uuids AND taken.host <> $host
WITH prev, collect(DISTINCT {uuid: taken.uuid, host: taken.host}) AS gpus
OPTIONAL MATCH (slice:MigSlice)
WHERE slice.uuid IN $slice_uuids AND slice.host <> $host
WITH prev, gpus, collect(DISTINCT {uuid: slice.uuid, host: slice.host}) AS slices
RETURN prev.collected_at AS stored_collected_at, gpus + slices AS taken
