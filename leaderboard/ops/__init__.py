"""Operating the site (docs/site.md, "Production layout"): the workers' boot records and heartbeats, /metrics for
Prometheus, /readyz for a load balancer, and the staff's Workers page."""
