"""kafka_dr.kafka.gc_pause: the collector's switch is process-wide, so the pause counts holders."""

import gc
import threading

import pytest

from kafka_dr.kafka.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on():
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_inside_and_on_again_after_even_when_the_body_raises():
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a refused record")
    assert gc.isenabled()


def test_the_last_holder_out_turns_it_on_not_the_first():
    """Two copier threads of one Spark worker: the one that finishes first must not turn the
    collector back on under the other, nor the other leave it off."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first():
        with gc_paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with gc_paused():
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"after the first left": False}
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()
