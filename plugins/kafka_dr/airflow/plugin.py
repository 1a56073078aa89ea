"""The Airflow plugin: the DR status page and its navigation entry.

Registered through the package's ``airflow.plugins`` entry point, so an Airflow that has
kafka-dr installed loads it with nothing copied into its plugins folder. The page itself is
:mod:`kafka_dr.airflow.status_page`.
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
