"""Workflows: failover, failback and offset sync, each composing the adapters (Kafka, Spark, data quality)
and deciding across clusters. Adapters never import a workflow; the DAGs and the command line do."""
