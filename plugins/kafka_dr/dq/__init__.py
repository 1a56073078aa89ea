"""Data quality across clusters: the comparison dataset, GX validation, the run and its result.

``run_data_quality(config, spark=None, flows=None, topics=None) -> DqResult`` is the entry
point (the ``dr_data_quality`` DAG and the failback gate call it); ``DataQualityFailed`` is the
exception a task raises with a failed result.
"""

from kafka_dr.core.dq import DataQualityFailed, DqResult
from kafka_dr.dq.run import run_data_quality

__all__ = ["DataQualityFailed", "DqResult", "run_data_quality"]
