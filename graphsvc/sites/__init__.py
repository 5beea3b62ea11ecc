"""Sites: where clusters are (on-prem, cloud regions, zones), how they are linked, what their
capacity costs and emits, and where a job is cheapest or fastest to run (docs/sites.md)."""
