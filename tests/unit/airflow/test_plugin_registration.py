"""Airflow finds kafka-dr's status page once: through the package's entry point, from one
distribution of the package (a second copy of its metadata on sys.path would register the
plugin twice, and Airflow reports the second as a plugin import error)."""


def test_the_status_page_plugin_is_one_entry_point_of_one_distribution():
    from airflow._shared.module_loading import entry_points_with_dist

    found = [(ep.value, dist.metadata["Name"]) for ep, dist in entry_points_with_dist("airflow.plugins")]
    ours = [f for f in found if f[1] == "kafka-dr"]
    assert ours == [("kafka_dr.airflow.plugin:KafkaDrStatusPlugin", "kafka-dr")], found
