"""When a job alerts that a cluster of its flow went silent: once per outage that lasts the threshold."""

from kafka_dr.core.silence import SilenceEpisodes


def test_an_outage_is_alerted_once_when_it_has_lasted_the_threshold():
    e = SilenceEpisodes(30.0)
    assert [e.observe("west", t) for t in (0.0, 5.0, 29.0)] == [None, None, None]
    assert e.observe("west", 31.0) == ("west", 31.0)
    assert e.observe("west", 36.0) is None  # the same outage: told once


def test_a_cluster_that_answers_again_ends_the_outage_and_the_next_one_is_told_too():
    e = SilenceEpisodes(30.0)
    assert e.observe("west", 0.0) is None and e.observe("west", 30.0) == ("west", 30.0)
    assert e.observe(None, 35.0) is None
    assert e.observe("west", 40.0) is None  # a new outage starts counting again
    assert e.observe("west", 70.0) == ("west", 30.0)


def test_a_silence_shorter_than_the_threshold_is_not_told():
    e = SilenceEpisodes(30.0)
    assert [e.observe(c, t) for c, t in (("west", 0.0), ("west", 20.0), (None, 25.0), ("west", 45.0))] == [None] * 4


def test_the_other_cluster_going_silent_starts_its_own_count():
    e = SilenceEpisodes(10.0)
    assert e.observe("east", 0.0) is None
    assert e.observe("west", 8.0) is None
    assert e.observe("west", 18.0) == ("west", 10.0)
