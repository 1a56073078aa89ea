"""spark-submit entry for one data-quality run: ``spark-submit spark_jobs/data_quality.py --config ...``.

Argument parsing and the run live in ``kafka_dr.dq.cli``; this file only wires.
"""

import sys

from kafka_dr.dq.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
