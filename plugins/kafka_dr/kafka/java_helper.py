"""kafka-dr's single-file Java helpers, compiled once per host instead of on every launch.

Java's single-file launch (``java Helper.java``) compiles the source in memory each time, about
1 to 2 s of CPU; compiled once into the cache, a launch costs only its short-lived JVM.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_dr.cache import cache_root


def compiled(source: Path, java: str, classpath: list[str], name: str) -> Path | None:
    """The folder ``$KAFKA_DR_CACHE/<name>-<hash>/`` holding ``source``'s compiled class,
    compiled on first use with the JDK's ``javac``; None when this JDK has no ``javac`` or the
    source does not compile (the caller runs it from source then, and its launch reports the
    error in the call's own terms). Compiled in a folder of its own, then renamed: never
    half-written. The hash covers the source, the JDK and the class path."""
    digest = hashlib.sha1(source.read_bytes())
    digest.update(os.path.realpath(java).encode())
    digest.update("\n".join(classpath).encode())
    target = cache_root() / f"{name}-{digest.hexdigest()[:10]}"
    if (target / f"{source.stem}.class").is_file():
        return target
    javac = Path(os.path.realpath(java)).with_name("javac")
    if not javac.is_file():
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
    command = [str(javac), "-J-XX:TieredStopAtLevel=1", "-nowarn", "-d", str(work)]
    if classpath:
        command += ["-cp", ":".join(classpath)]
    done = subprocess.run([*command, str(source)], capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        return None
    try:
        work.rename(target)
    except OSError:  # another process compiled it first
        shutil.rmtree(work, ignore_errors=True)
    return target


def launch_command(source: Path, java: str, classpath: list[str], name: str, jvm_options: tuple[str, ...]) -> list[str]:
    """The command that runs ``source``'s main class: from the compiled class when it compiles,
    else from source."""
    folder = compiled(source, java, classpath, name)
    if folder is None:
        cp = ["-cp", ":".join(classpath)] if classpath else []
        return [java, *jvm_options, *cp, str(source)]
    return [java, *jvm_options, "-cp", ":".join([str(folder), *classpath]), source.stem]
