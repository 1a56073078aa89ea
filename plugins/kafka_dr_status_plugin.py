"""Airflow plugin entry: the kafka-dr DR status page and its navigation entry.

A top-level file on purpose: Airflow's plugin loader imports every ``.py`` under ``plugins/``
as a top-level module (``kafka_dr/`` is excluded by ``.airflowignore``), so this file only
wires; the page is :mod:`kafka_dr.airflow.status_page`.
"""

from airflow.plugins_manager import AirflowPlugin

from kafka_dr.airflow.status_page import URL_PREFIX, create_app


class KafkaDrStatusPlugin(AirflowPlugin):
    name = "kafka_dr_status"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "kafka-dr status"}]
    external_views = [
        {
            "name": "DR status",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "url_route": "dr-status",
            "nav_top_level": True,
        }
    ]
