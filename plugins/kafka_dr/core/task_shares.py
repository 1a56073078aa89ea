"""Share a micro-batch's offset ranges out among a fixed number of tasks.

A Spark task per source partition would pay Spark's per-task round (a Python worker handed
the task, the reader unpickled, a metrics row back through Arrow) once per partition. So the
ranges go to ``tasks`` shares (Spark's default parallelism: one per core it has), each copied
range after range by one copier, and balanced by records:
the largest range first, always to the lightest share (the share with the fewest records ends
first, so the last share to finish is as short as it can be made this way).
"""

from __future__ import annotations


def balanced_shares(sizes: list[int], tasks: int) -> list[list[int]]:
    """The indices of ``sizes`` in at most ``tasks`` non-empty shares, each share's indices in
    ascending order; shares ordered by their first index. ``tasks`` < 1 counts as 1."""
    n = max(1, min(tasks, len(sizes)))
    shares: list[list[int]] = [[] for _ in range(n)]
    loads = [0] * n
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        lightest = min(range(n), key=lambda s: (loads[s], s))
        shares[lightest].append(i)
        loads[lightest] += sizes[i]
    return sorted((sorted(s) for s in shares if s), key=lambda s: s[0])
