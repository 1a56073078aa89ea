"""``kafka-dr bench``: this project's replication job against MirrorMaker 2 and the raw-pipe
limit, side by side on the same lab brokers, topics and data.

- :mod:`.procmem`  peak RSS of a process tree, sampled from ``/proc``;
- :mod:`.load`     backlogs, a steady producer, arrival timelines, counts and a latency probe;
- :mod:`.systems`  the three runners (ours, MirrorMaker 2, raw pipe), one interface;
- :mod:`.mm2`      MirrorMaker 2 in dedicated mode (also used by the checkpoint comparison);
- :mod:`.rawpipe`  the simplest consume-and-produce loop: the ceiling of these brokers;
- :mod:`.report`   the table and the final JSON line (pure);
- :mod:`.run`      the scenario: backlog phases per size, then a latency phase, per system.
"""
