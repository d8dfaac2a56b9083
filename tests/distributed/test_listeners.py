"""Every socket flowbook's clusters listen on is loopback, unless an address is named.

The README's ``LocalCluster`` recipe (run as written, from the README's own
text), ``tf.train.Server`` and ``Server.create_local_server`` are started and
the listening sockets of this process and its children (``psutil``) are
checked: each must be on 127.0.0.1 or ::1.  Dask's TLS through ``security=``
is run end to end with a throwaway CA made by ``openssl`` (skipped without
it), and a plain listener beyond loopback logs one warning per address.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import subprocess
from pathlib import Path

import psutil
import pytest

import flowbook as tf
from flowbook.distributed import security

pytestmark = pytest.mark.cluster
README = Path(__file__).resolve().parents[2] / "README.md"


def _listening() -> list[tuple[int, str, int]]:
    """(pid, ip, port) of every listening inet socket of this process and its children."""
    me = psutil.Process()
    found = []
    for proc in [me, *me.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found += [(proc.pid, c.laddr.ip, c.laddr.port) for c in conns if c.status == "LISTEN"]
    return found


def _assert_loopback(listening) -> None:
    assert listening, "nothing is listening: the check would prove nothing"
    exposed = [s for s in listening if not security.is_loopback(s[1])]
    assert not exposed, f"listening beyond loopback: {exposed}"


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _readme_recipe() -> str:
    text = README.read_text()
    found = re.search(
        r"```python\n(from distributed import Client, LocalCluster\n.*?)```", text, re.S
    )
    assert found, "the README's LocalCluster recipe"
    code = found.group(1)
    return code[: code.index("client = Client(cluster)") + len("client = Client(cluster)")]


def test_the_readme_local_cluster_recipe_listens_on_loopback_only():
    space: dict = {}
    exec(_readme_recipe(), space)  # the README's own text: safe as written
    cluster, client = space["cluster"], space["client"]
    try:
        client.wait_for_workers(3, timeout=120)
        _assert_loopback(_listening())
    finally:
        client.close()
        cluster.close()


def test_readme_command_line_recipes_name_loopback_and_tls():
    text = README.read_text()
    for line in text.splitlines():
        if line.startswith(("dask scheduler", "dask worker")):
            if "tls://" in line or "--protocol tls" in line:
                continue  # the multi-machine recipe: TLS, not loopback
            assert "--host 127.0.0.1" in line, line
            if line.startswith("dask scheduler"):
                assert "--dashboard-address 127.0.0.1:" in line, line
    assert "--tls-ca-file" in text and "security=" in text


def test_train_servers_and_the_local_server_listen_on_loopback_only():
    ps, worker = (f"127.0.0.1:{p}" for p in _free_ports(2))
    cluster = tf.train.ClusterSpec({"ps": [ps], "worker": [worker]})
    made = [tf.train.Server(cluster, "ps", 0), tf.train.Server(cluster, "worker", 0)]
    local = tf.train.Server.create_local_server()
    try:
        _assert_loopback(_listening())
        assert len(_listening()) >= 5  # scheduler, dashboard and two workers; the local cluster
    finally:
        local.close()
        for server in reversed(made):
            server.close()


def test_a_plain_listener_beyond_loopback_warns_once(caplog):
    with caplog.at_level(logging.WARNING, logger="flowbook.distributed"):
        assert security.warn_if_exposed("tcp://0.0.0.0:1", "the scheduler")
        assert not security.warn_if_exposed("tcp://0.0.0.0:1", "the scheduler")
        assert security.warn_if_exposed("tcp://[::]:1", "a worker")
        assert not security.warn_if_exposed("tls://0.0.0.0:1", "the scheduler")
        assert not security.warn_if_exposed("tcp://[::1]:1", "a worker")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and "without TLS" in warnings[0] and "0.0.0.0:1" in warnings[0]


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """A self-signed CA certificate and its key, valid for 127.0.0.1 (both roles use them)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=flowbook-test"),
            *("-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return {"ca_file": str(cert), "cert": str(cert), "key": str(key)}


def _runs(target: str) -> float:
    with tf.Graph().as_default(), tf.Session(target) as sess:
        return float(sess.run(tf.constant(2.0) * 21.0))


def test_tls_local_server(pem):
    server = tf.train.Server.create_local_server(security=pem)
    try:
        assert server.target.startswith("dask://tls://127.0.0.1:")
        assert _runs(server.target) == 42.0
        _assert_loopback(_listening())
    finally:
        server.close()


def test_tls_train_servers(pem):
    ps, worker = (f"127.0.0.1:{p}" for p in _free_ports(2))
    cluster = tf.train.ClusterSpec({"ps": [ps], "worker": [worker]})
    made = [tf.train.Server(cluster, job, 0, security=pem) for job in ("ps", "worker")]
    try:
        assert made[1].target == f"dask://tls://{ps}"
        assert _runs(made[1].target) == 42.0
    finally:
        for server in reversed(made):
            server.close()
