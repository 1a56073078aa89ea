"""The warm-up job :func:`kafka_dr.spark.class_archive.ensure_archive` runs with spark-submit:
a session, a batch job and a short streaming query with ``foreachBatch``, so that the archive
holds the classes a replication driver loads before its first micro-batch."""

from __future__ import annotations

import time

from pyspark.sql import SparkSession


def main() -> None:
    spark = SparkSession.builder.appName("kafka-dr-class-archive").getOrCreate()
    spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    batches: list[int] = []
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 10)
        .load()
        .writeStream.foreachBatch(lambda df, batch_id: batches.append(df.count()))
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + 120
    while len(batches) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
