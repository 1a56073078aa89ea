from datetime import datetime


def test_a_python_worker_s_mark_reads_back_as_the_driver_s_marks_do():
    from kafka_dr.bench.systems import start_up_timeline
    from kafka_dr.spark.timeline import line

    launched = datetime(2026, 11, 27, 18, 0, 0).timestamp()
    log = line("task started", launched + 7.25) + line("copier ready", launched + 8.5)
    assert start_up_timeline(log, launched) == {"task started": 7.25, "copier ready": 8.5}


def test_each_mark_is_written_once_per_process(capsys):
    from kafka_dr.spark import timeline

    timeline.mark_once("first plan (test)")
    timeline.mark_once("first plan (test)")
    err = capsys.readouterr().err
    assert err.count("timeline: first plan (test)") == 1
