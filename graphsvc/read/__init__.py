"""Read models: what the API, the exports and the explorer read from the graph, as typed values.

Each module turns named-query rows into frozen dataclasses once, so the transport layers
(REST, GraphQL, the export renderers) never see a store row: `hosts` (one host's topology,
batched over any number of hosts), `browse` (cluster summary, host and GPU pages, the fabric,
host-to-host paths), `health` (the probe's and the metrics' counts).
"""
