// Fragment (not a query): how renew_reservation and renew_mig_slices extend a lease, once the
// reservation `r` and what it holds (`leased`: its GPUs, or its MIG slices) are locked and checked.
// The lease: $ttl_s when the caller gave one, else the one last granted (`ttl_s`, recorded here by
// every renew and by a completed preemption; for a reservation never renewed, its expiry less its
// creation: what `reserve` granted), so a renew without a TTL never shortens a longer lease to the
// service's default; $default_ttl_s only where neither is known (or it is under a second), and
// never more than $max_ttl_s (a bound lowered since the lease was granted).
// In: `r`, `leased`. Out: `WITH r, leased`, the lease extended from $now on both.
WITH r, leased, toInteger(round(coalesce($ttl_s, r.ttl_s, r.expires_at - coalesce(r.renewed_at, r.created_at), $default_ttl_s))) AS lease
WITH r, leased, CASE WHEN lease < 1 THEN $default_ttl_s WHEN lease > $max_ttl_s THEN $max_ttl_s ELSE lease END AS lease
SET r.expires_at = $now + lease, r.renewed_at = $now, r.ttl_s = lease
FOREACH (x IN leased | SET x.lease_expires_at = $now + lease)
WITH r, leased
