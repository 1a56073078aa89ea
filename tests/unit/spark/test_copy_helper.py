"""The driver's forked copy process (kafka_dr.spark.copy_helper) with plain copy functions.

Each case runs in a fresh interpreter: a pytest-xdist worker runs threads of its own, and the
helper refuses to fork beside other threads (what this file checks too)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import json, os, signal, sys, threading, time
from kafka_dr.spark.copy_helper import CopyHelper, HelperFailed
from kafka_dr.spark.range_job import copy_here

def copy(options, shares):
    if options.get("fail"):
        raise {error}
    for share in shares:
        time.sleep(options.get("sleep", 0))
        yield (share, os.getpid())
"""


def _run(body: str, error: str = "ValueError('bad share 7')") -> dict:
    script = PRELUDE.format(error=error) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_helper_copies_in_another_process_and_serves_until_closed():
    out = _run(
        """
        h = CopyHelper.fork(copy)
        h.start({}, ["a", "b"])
        first = h.rows()
        h.start({}, ["c"])
        second = h.rows()
        h.close()
        h.close()
        try:
            os.waitpid(h.pid, os.WNOHANG)
            reaped = False
        except ChildProcessError:
            reaped = True
        print(json.dumps({"first": first, "second": second, "me": os.getpid(), "pid": h.pid, "reaped": reaped}))
        """
    )
    assert [s for s, _ in out["first"]] == ["a", "b"] and [s for s, _ in out["second"]] == ["c"]
    assert {p for _, p in out["first"] + out["second"]} == {out["pid"]} != {out["me"]}
    assert out["reaped"]


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        ("ValueError('bad share 7')", "ValueError: bad share 7"),  # itself, across the pipe
        # one that cannot cross it keeps its type's name and its text
        ("type('Local', (Exception,), {})('cannot pickle me')", "RuntimeError: Local: cannot pickle me"),
    ],
)
def test_a_failed_copy_is_raised_in_the_driver(error, raised):
    out = _run(
        """
        h = CopyHelper.fork(copy)
        h.start({"fail": True}, ["a"])
        try:
            h.rows()
        except Exception as e:
            print(json.dumps({"raised": f"{type(e).__name__}: {e}"}))
        h.close()
        """,
        error=error,
    )
    assert out == {"raised": raised}


def test_a_killed_helper_is_a_failure_not_a_hang():
    out = _run(
        """
        h = CopyHelper.fork(copy)
        h.start({"sleep": 30}, ["a"])
        os.kill(h.pid, signal.SIGKILL)
        try:
            h.rows()
        except HelperFailed as e:
            print(json.dumps({"raised": str(e), "pid": h.pid}))
        h.close()
        """
    )
    assert out["raised"] == f"the driver's copy helper (pid {out['pid']}) ended without its rows"


def test_the_helper_ignores_the_stop_signals_and_dies_with_the_driver():
    out = _run(
        """
        h = CopyHelper.fork(copy)
        os.kill(h.pid, signal.SIGTERM)
        os.kill(h.pid, signal.SIGINT)
        h.start({"sleep": 0.2}, ["a"])
        rows = h.rows()
        # a driver killed with -9: its helper goes too (a grandchild forked from a child of ours)
        r, w = os.pipe()
        driver = os.fork()
        if driver == 0:
            g = CopyHelper.fork(copy)
            os.write(w, str(g.pid).encode())
            time.sleep(30)
            os._exit(0)
        grandchild = int(os.read(r, 20))
        os.kill(driver, signal.SIGKILL)
        os.waitpid(driver, 0)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                os.kill(grandchild, 0)
                state = open(f"/proc/{grandchild}/stat").read().split(")")[1].split()[0]
                if state == "Z":
                    break
            except (ProcessLookupError, FileNotFoundError):
                break
            time.sleep(0.05)
        else:
            raise SystemExit("the helper outlived its driver")
        h.close()
        print(json.dumps({"rows": len(rows)}))
        """
    )
    assert out == {"rows": 1}


def test_no_fork_beside_another_thread():
    out = _run(
        """
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        refused = CopyHelper.fork(copy) is None
        stop.set()
        t.join()
        print(json.dumps({"refused": refused}))
        """
    )
    assert out == {"refused": True}


def test_copy_here_keeps_the_first_share_and_hands_the_rest_over():
    out = _run(
        """
        import kafka_dr.spark.range_job as rj
        rj.copy_shares = copy
        h = CopyHelper.fork(copy)
        rows = copy_here({}, ["a", "b", "c"], h)
        alone = copy_here({}, ["d"], h)
        h.close()
        print(json.dumps({"rows": rows, "alone": alone, "me": os.getpid(), "pid": h.pid}))
        """
    )
    assert [s for s, _ in out["rows"]] == ["a", "b", "c"]
    assert [p for _, p in out["rows"]] == [out["me"], out["pid"], out["pid"]]
    assert out["alone"] == [["d", out["me"]]]


def test_when_the_drivers_share_fails_the_helpers_copy_is_waited_for_first():
    out = _run(
        """
        import kafka_dr.spark.range_job as rj
        done = []
        def own(options, shares):
            raise KeyError("own share")
            yield
        rj.copy_shares = own
        h = CopyHelper.fork(copy)
        t0 = time.monotonic()
        try:
            copy_here({"sleep": 0.5}, ["a", "b"], h)
        except KeyError as e:
            waited = time.monotonic() - t0
            h.start({}, ["c"])  # the helper is free again: its last reply was taken
            print(json.dumps({"raised": str(e), "waited": waited, "next": [s for s, _ in h.rows()]}))
        h.close()
        """
    )
    assert out["raised"] == "'own share'" and out["waited"] >= 0.5 and out["next"] == ["c"]


def test_after_the_helper_died_every_share_is_copied_in_the_driver():
    out = _run(
        """
        import kafka_dr.spark.range_job as rj
        rj.copy_shares = copy
        h = CopyHelper.fork(copy)
        os.kill(h.pid, signal.SIGKILL)
        os.waitpid(h.pid, 0)
        try:
            copy_here({}, ["a", "b"], h)
            first = "copied"
        except HelperFailed:
            first = "failed"
        rows = copy_here({}, ["a", "b"], h)
        h.close()
        print(json.dumps({"first": first, "usable": h.usable, "rows": rows, "me": os.getpid()}))
        """
    )
    assert out["first"] == "failed" and not out["usable"]
    assert out["rows"] == [["a", out["me"]], ["b", out["me"]]]
