"""The replication job's restart alerts reach both channels with Airflow not importable, as on
a Spark cluster without it (real local receivers, no lab)."""

from __future__ import annotations

import json
import subprocess
import sys

from receivers import SmtpReceiver, WebhookReceiver

PROBE = """
import sys
sys.modules["airflow"] = None  # importing anything from airflow now fails
from kafka_dr.core.config_load import parse_config
from kafka_dr.spark.job import alert_restart
email = {"smtp_host": "127.0.0.1", "smtp_port": int(sys.argv[2]), "from": "dr@lab", "to": ["ops@lab"]}
cfg = parse_config({"clusters": {"east": {"bootstrap_servers": "127.0.0.1:1"},
                                 "west": {"bootstrap_servers": "127.0.0.1:2"}},
                    "flows": [{"source": "east", "target": "west"}],
                    "alerts": {"webhook": {"url": sys.argv[1]}, "email": email}})
alert_restart(cfg, "east_to_west", "source cluster 'east' did not answer", 1, 5, 2.0)
print("airflow" in [m.split(".")[0] for m in sys.modules if sys.modules[m] is not None])
"""


def test_restart_alerts_are_sent_without_airflow():
    hook, smtp = WebhookReceiver(), SmtpReceiver()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, hook.url, str(smtp.port)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "False"  # no airflow module was loaded
        assert [(h["flow"], h["event"], h["restart"]) for h in hook.received] == [("east_to_west", "restart", 1)]
        assert len(smtp.messages) == 1 and "flow east_to_west: replication query failed, restart 1/5" in json.dumps(
            smtp.messages[0]
        )
    finally:
        hook.close()
        smtp.close()
