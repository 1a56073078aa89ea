"""spark-submit entry point: replicate one kafka-dr flow.

    spark-submit spark_jobs/replicate.py --config kafka-dr.yaml --flow east_to_west [--mode incremental]

Thin on purpose: everything lives in kafka_dr.spark.job (installed with the package).
"""

import sys

from kafka_dr.spark.job import main

if __name__ == "__main__":
    sys.exit(main())
