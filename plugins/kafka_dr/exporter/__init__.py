"""``kafka-dr exporter``: kafka-dr's health in Prometheus's exposition format (docs/monitoring.md)."""
