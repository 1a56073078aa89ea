import sys

from kafka_dr.cli.app import main

sys.exit(main())
