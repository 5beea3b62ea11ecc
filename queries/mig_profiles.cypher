// The MIG profiles collectors have reported, with how many slices of each exist and are free
// now: what a request's profile is checked against, and what an infeasible answer names.
// @read
// @param now float
// @row profile string, slices int, free int
MATCH (s:MigSlice)
OPTIONAL MATCH (r:Reservation {id: coalesce(s.reservation, '')})
WITH s.profile AS profile,
     CASE WHEN s.state = 'free' OR r IS NULL OR r.state <> 'active' OR r.expires_at < $now THEN 1 ELSE 0 END AS free
RETURN profile, count(*) AS slices, toInteger(sum(free)) AS free
ORDER BY profile
