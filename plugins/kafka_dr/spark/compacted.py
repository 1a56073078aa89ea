"""The comparison of compacted topics: the latest record of each key, not every record.

Each cluster's log cleaner drops superseded values on its own schedule, so record counts and
checksums of a compacted partition differ between two clusters that agree. What must agree is
the latest record of every key the source holds in the window. Per key, the target agrees when
its latest copy is of the same source record, or when it holds none and the source's latest is
a tombstone (a cleaner removes a tombstone, and every older value of its key, after
``delete.retention.ms``). An older copy is the newest value missing; a copy of a newer source
offset is a record the source never had. Keys the source no longer holds in the window
(superseded by a record past its end), and keys whose latest record on the target came from
elsewhere or was written after the window was planned, are not judged. The target is read to
its end at read time, not to the planned end: its cleaner may have dropped every planned record
of a key rewritten since. Duplicates and order are still checked
record by record: a cleaner keeps the order of what it keeps, and a duplicate copy survives
until it is superseded.
"""

from __future__ import annotations

#: the columns :func:`latest_per_key` adds for each compacted window
KEY_COLUMNS = ("k_source_count", "k_target_count", "k_missing", "k_unexpected", "k_source_sum", "k_target_sum")


def latest_per_key(src, target, keys: list[str]):
    """Per compacted window: counts, checksums, missing and unexpected over the latest record
    of each key.

    :param src: the source's eligible records (``src_offset``, ``digest``, ``key_hash``, ``tombstone``)
    :param target: every record of the target partition (``offset``, ``src_offset`` when it is
        a copy of a compared source record, ``id_offset``, ``digest``, ``key_hash``, and
        ``ours``: a copy or an unexpected candidate of this flow)
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def latest(frame, order_col: str):
        w = Window.partitionBy(*keys, "key_hash").orderBy(F.col(order_col).desc())
        return frame.withColumn("_rank", F.row_number().over(w)).where(F.col("_rank") == 1).drop("_rank")

    s = latest(src, "src_offset").select(
        *keys, "key_hash", F.col("src_offset").alias("s_pos"), F.col("digest").alias("s_digest"), "tombstone"
    )
    t = latest(target, "offset").select(
        *keys,
        "key_hash",
        "ours",
        F.coalesce("src_offset", "id_offset").alias("t_pos"),  # the source offset the copy names
        F.col("digest").alias("t_digest"),
    )
    # a key whose latest record on the target came from elsewhere (written there after a
    # failover, or by another flow) or after planning (in flight) is not judged: the cleaner
    # may have dropped the copy under it
    j = s.join(t, [*keys, "key_hash"], "left").where(F.col("ours").isNull() | F.col("ours"))
    held = F.col("t_pos").isNotNull()
    # never null: a null here would drop out of the sums below
    missing = F.when(held, F.col("t_pos") < F.col("s_pos")).otherwise(~F.col("tombstone"))
    unexpected = F.when(held, F.col("t_pos") > F.col("s_pos")).otherwise(F.lit(False))
    # a tombstone the target's cleaner already removed counts as held, with the source's digest
    t_digest = F.when(held, F.col("t_digest")).when(F.col("tombstone"), F.col("s_digest"))
    dec = "decimal(38,0)"
    return j.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("k_source_count"),
        F.count(t_digest).alias("k_target_count"),
        F.sum(missing.cast("long")).alias("k_missing"),
        F.sum(unexpected.cast("long")).alias("k_unexpected"),
        F.sum(F.col("s_digest").cast(dec)).alias("k_source_sum"),
        F.coalesce(F.sum(t_digest.cast(dec)), F.lit(0).cast(dec)).alias("k_target_sum"),
    )


def empty_key_columns():
    """The :data:`KEY_COLUMNS` as nulls, for a comparison without compacted windows."""
    from pyspark.sql import functions as F

    return [F.lit(None).cast("decimal(38,0)" if c.endswith("_sum") else "long").alias(c) for c in KEY_COLUMNS]
