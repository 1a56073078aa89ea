"""Refusals that a retry would only repeat: a task that meets one fails at once.

A failover or failback precondition that does not hold (the failed cluster still answers, the
survivor is not ready), an input that is invalid or a pre-flight violation is a verdict on the
run's inputs and the clusters' recorded state; the operator changes something, then triggers
again. Airflow's retries are for what can pass on its own (a timeout, a cluster not answering).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def refusal_types() -> tuple[type[BaseException], ...]:
    from kafka_dr.core.config_load import ConfigError
    from kafka_dr.core.failback import FailbackRefused
    from kafka_dr.core.inputs import InvalidInput
    from kafka_dr.kafka.clients import AuthenticationFailed
    from kafka_dr.workflows.failover import FailoverRefused

    return (FailoverRefused, FailbackRefused, InvalidInput, ConfigError, AuthenticationFailed)


@contextmanager
def final_on_refusal() -> Iterator[None]:
    """Inside: a refusal fails the task without its retries (Airflow's AirflowFailException),
    with the refusal's own line as the task's error."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    try:
        yield
    except refusal_types() as e:
        raise AirflowFailException(f"{type(e).__name__}: {e}") from e
