"""``python -m kafka_dr.bench`` = ``kafka-dr bench``."""

import sys

from kafka_dr.bench.cli import main

sys.exit(main())
