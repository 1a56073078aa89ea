"""Reading DumpLogSegments' output: which batch holds an offset and what ended its transaction."""

from kafka_dr.gameday.evidence import around

BATCH = (
    "baseOffset: {b} lastOffset: {l} count: {n} baseSequence: 0 lastSequence: 3 producerId: {pid} "
    "producerEpoch: {e} partitionLeaderEpoch: 2 isTransactional: true isControl: {c} position: 0 size: 9"
)
MARKER = "| offset: {o} CreateTime: 1 keySize: 4 valueSize: 6 sequence: -1 endTxnMarker: {m} coordinatorEpoch: 0"
INDEX = "version: 0 producerId: {pid} firstOffset: {f} lastOffset: {l} lastStableOffset: {s}"


def _dump(*lines: str) -> str:
    return "Dumping x.log\nLog starting offset: 0\n" + "\n".join(lines) + "\n"


def test_a_committed_batch_names_its_commit_marker_of_its_own_producer():
    dump = _dump(
        BATCH.format(b=0, l=3, n=4, pid=7, e=1, c="false"),
        "| offset: 0 CreateTime: 1 keySize: 7 valueSize: 74 sequence: 0 headerKeys: [gd.id,gd.seq]",
        BATCH.format(b=4, l=4, n=1, pid=9, e=0, c="true"),
        MARKER.format(o=4, m="ABORT"),
        BATCH.format(b=5, l=5, n=1, pid=7, e=1, c="true"),
        MARKER.format(o=5, m="COMMIT"),
    )
    assert around(dump, 2) == "batch 0..3 producer 7 epoch 1 leader epoch 2, ended by COMMIT at 5 (epoch 1)"


def test_an_index_entry_covering_the_offset_is_named_and_a_missing_marker_said():
    dump = _dump(
        BATCH.format(b=10, l=13, n=4, pid=7, e=3, c="false"),
        "Dumping x.txnindex",
        INDEX.format(pid=7, f=10, l=20, s=10),
        INDEX.format(pid=8, f=10, l=20, s=10),
    )
    assert around(dump, 11) == (
        "batch 10..13 producer 7 epoch 3 leader epoch 2, ended by no marker after it, listed aborted 10..20"
    )


def test_an_offset_outside_the_log_and_an_empty_copy_are_said_so():
    assert around(_dump(BATCH.format(b=0, l=3, n=4, pid=7, e=1, c="false")), 8) == "offset 8 not in the log (0..3)"
    assert around("", 8) == "no segment"
