"""The bench writes the page cache's dirty data out before each full-run phase
(kafka_dr.bench.disk) and reports how much there was."""

from kafka_dr.bench import disk

MEMINFO = """MemTotal:       24589364 kB
Dirty:            204800 kB
Writeback:          1024 kB
WritebackTmp:          0 kB
"""


def test_dirty_counts_dirty_and_under_writeback_pages_only(tmp_path, monkeypatch):
    (tmp_path / "meminfo").write_text(MEMINFO)
    monkeypatch.setattr(disk, "MEMINFO", tmp_path / "meminfo")
    assert disk.dirty_bytes() == (204800 + 1024) * 1024


def test_writing_back_syncs_and_reports_what_was_dirty(tmp_path, monkeypatch):
    (tmp_path / "meminfo").write_text(MEMINFO)
    monkeypatch.setattr(disk, "MEMINFO", tmp_path / "meminfo")
    synced = []
    monkeypatch.setattr(disk.os, "sync", lambda: synced.append(True))
    assert disk.write_back() == 211 and synced == [True]


def test_no_proc_means_nothing_known_to_be_dirty(tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "MEMINFO", tmp_path / "absent")
    assert disk.dirty_bytes() == 0
