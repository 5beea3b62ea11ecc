// Live preemptible reservations below a priority, with the hosts their GPUs are on and what
// their preemption would cost (size, age, last reported checkpoint). Reservations already
// promised to a pending preemption (in their grace period) are not offered again.
// @read
// @param priority int
// @row reservation string, holder string, priority int, gpus list<string>, hosts list<string>
// @row created_at float, last_checkpoint_at float?, checkpoint_every_s float?
MATCH (r:Reservation)-[:HOLDS]->(g:GPU)<-[:HAS_GPU]-(h:Host)
WHERE r.state = 'active' AND r.preemptible = true AND r.priority < $priority AND g.reservation = r.id
  AND r.preempt_by IS NULL
RETURN r.id AS reservation, r.holder AS holder, r.priority AS priority, collect(g.uuid) AS gpus,
       collect(DISTINCT h.name) AS hosts, r.created_at AS created_at, r.last_checkpoint_at AS last_checkpoint_at,
       r.checkpoint_every_s AS checkpoint_every_s
