"""The ``kafka-dr`` command line (see :mod:`kafka_dr.cli.app`)."""

from kafka_dr.cli.app import main

__all__ = ["main"]
