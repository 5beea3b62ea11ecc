"""The bounds of a compareSites comparison, in one small module that both the comparison
(graphsvc.sites.service) and its price (graphsvc.api.graphql.cost) read: the price imported them
from the service, and so pulled the store and the placement engine into the pricing of a query.
"""

from __future__ import annotations

# A site too full for the job now is searched again as its leases run out: at most MAX_WAIT_STEPS
# lease-expiry times are candidates (evenly spread, the last always among them).
MAX_WAIT_STEPS = 12
# The searches that choose among those expiry times: a bisection, ceil(log2(12 + 1)) = 4. A full
# site cost one search now and then one per expiry time tried, in order: up to 13 searches a site,
# priced as one (graphsvc.api.graphql.cost). Now at most 1 + WAIT_SEARCHES = 5, as priced.
WAIT_SEARCHES = MAX_WAIT_STEPS.bit_length()
# Per site compared: one search now, and up to WAIT_SEARCHES for its predicted wait.
COMPARE_SEARCHES = 1 + WAIT_SEARCHES
