"""An HA claimsched cluster of real processes on 127.0.0.1 for bench/chaos.py
and bench/failover.py: etcd members, `claimsched server` members with [ha],
agents registered with every member, the client. Every process is started by
this module, on free loopback ports, and stopped by its PID.

Standard library only (Debian's python3)."""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def binary():
    return os.environ.get("CLAIMSCHED_BIN", os.path.join(ROOT, "build", "apps", "claimsched"))


def free_port(rng=random.Random()):
    """A loopback TCP port nothing listens on, below the ephemeral range."""
    for _ in range(1000):
        port = rng.randrange(20000, 32000)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


class Proc:
    """One background process; stdout and stderr appended to `log`."""

    def __init__(self, argv, log):
        self.argv = argv
        self.log = log
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.paused = False

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.popen.pid, sig)
        self.paused = sig == signal.SIGSTOP

    def kill(self):
        if self.alive():
            os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.wait()

    def stop(self, timeout=10):
        """SIGCONT (if paused), SIGTERM, and SIGKILL after `timeout`."""
        if not self.alive():
            return
        os.kill(self.popen.pid, signal.SIGCONT)
        os.kill(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()


class Etcd:
    """`members` etcd members with the election timing that grants 1 s leases."""

    def __init__(self, dir, members=3):
        self.dir = dir
        self.names = ["e%d" % (i + 1) for i in range(members)]
        self.client_ports = [free_port() for _ in self.names]
        self.peer_ports = [free_port() for _ in self.names]
        self.initial = ",".join("%s=http://127.0.0.1:%d" % (n, p) for n, p in zip(self.names, self.peer_ports))
        self.procs = [None] * members
        try:
            for i in range(members):
                self.start(i)
            self.wait_serving()
        except BaseException:
            self.stop()
            raise

    def endpoints(self):
        return ["http://127.0.0.1:%d" % p for p in self.client_ports]

    def start(self, i):
        client = self.endpoints()[i]
        peer = "http://127.0.0.1:%d" % self.peer_ports[i]
        argv = ["etcd", "--name", self.names[i], "--data-dir", os.path.join(self.dir, self.names[i]),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", self.initial, "--initial-cluster-state", "new",
                "--heartbeat-interval", "25", "--election-timeout", "250", "--log-level", "warn"]
        self.procs[i] = Proc(argv, os.path.join(self.dir, self.names[i] + ".log"))

    def wait_serving(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            ok = all(subprocess.run(["etcdctl", "--endpoints=" + e, "--command-timeout=1s", "endpoint", "health"],
                                    capture_output=True, env=dict(os.environ, ETCDCTL_API="3")).returncode == 0
                     for e in self.endpoints())
            if ok:
                return
            time.sleep(0.2)
        raise RuntimeError("etcd did not start serving (logs in %s)" % self.dir)

    def stop(self):
        for p in self.procs:
            if p:
                p.stop()


class Cluster:
    """etcd, HA server members and agents in `dir` (a fresh temporary one by
    default); `partitions` partitions, partition i owning pool p<i>."""

    def __init__(self, dir=None, partitions=3, members=3, etcd_members=3, ack="one", timeouts=None, extra=""):
        if dir and os.path.isdir(dir) and os.listdir(dir):
            # Its etcd and member data would be reused: etcd would wait for
            # peers of an earlier run at ports nobody listens on any more.
            raise RuntimeError("%s is not empty: a run needs a new or empty --dir" % dir)
        self.dir = dir or tempfile.mkdtemp(prefix="claimsched-ha-")
        os.makedirs(self.dir, exist_ok=True)
        self.bin = binary()
        if not os.access(self.bin, os.X_OK):
            raise RuntimeError("no claimsched binary at %s (build it, or set CLAIMSCHED_BIN)" % self.bin)
        self.partitions = partitions
        self.etcd = Etcd(self.dir, etcd_members)  # stops what it started if it fails
        self.members = {}
        self.ports = {}
        self.agents = {}
        self.agent_argv = {}
        t = {"heartbeat_interval": "200ms", "node_grace": "3s", "claim_ttl": "10s", "reply_timeout": "5s",
             "recovery_grace": "10s", "link_heartbeat": "100ms", "link_timeout": "1s"}
        t.update(timeouts or {})
        lines = ['cluster_id = "bench"', "[listen]", 'host = "127.0.0.1"', "port = 0",
                 "[storage]", 'data_dir = "%s/unused"' % self.dir, "[timeouts]"]
        lines += ['%s = "%s"' % kv for kv in t.items()]
        for p in range(1, partitions + 1):
            lines += ["[[pools]]", 'name = "p%d"' % p]
        for p in range(1, partitions + 1):
            lines += ["[[partitions]]", "id = %d" % p, 'pools = ["p%d"]' % p]
        lines += ["[ha]", "etcd = [%s]" % ", ".join('"%s"' % e for e in self.etcd.endpoints()),
                  'lease_ttl = "1s"', 'ack = "%s"' % ack]
        self.config = os.path.join(self.dir, "cluster.toml")
        with open(self.config, "w") as f:
            f.write("\n".join(lines) + "\n" + extra)
        for i in range(members):
            self.ports["m%d" % (i + 1)] = free_port()

    def log(self, name):
        return os.path.join(self.dir, name + ".log")

    def addresses(self):
        return ",".join("127.0.0.1:%d" % p for p in self.ports.values())

    def start_member(self, name, wait=True):
        argv = [self.bin, "--log-level", "info", "server", "--config", self.config, "--name", name,
                "--data-dir", os.path.join(self.dir, "data-" + name), "--port", str(self.ports[name])]
        start = os.path.getsize(self.log(name)) if os.path.exists(self.log(name)) else 0
        self.members[name] = Proc(argv, self.log(name))
        if not wait:
            return
        deadline = time.time() + 20
        while time.time() < deadline:
            with open(self.log(name), errors="replace") as f:
                f.seek(start)
                if "claimsched server listening on" in f.read():
                    return
            if not self.members[name].alive():
                raise RuntimeError("member %s exited (see %s)" % (name, self.log(name)))
            time.sleep(0.05)
        raise RuntimeError("member %s did not start listening (see %s)" % (name, self.log(name)))

    def start_agent(self, name, pool, resources="cpu=4,memory=4Gi", simulate=0):
        argv = [self.bin, "--log-level", "info", "agent", "--server", self.addresses(), "--name", name,
                "--pool", pool, "--resources", resources, "--state-dir", os.path.join(self.dir, name)]
        if simulate:
            argv += ["--simulate", str(simulate)]
        self.agent_argv[name] = argv
        self.agents[name] = Proc(argv, self.log(name))

    def restart_agent(self, name):
        self.agents[name] = Proc(self.agent_argv[name], self.log(name))

    def client(self, args, timeout=60):
        """Runs a client command against every member; (exit code, stdout)."""
        # --server goes before the arguments: they may end with "-- command".
        r = subprocess.run([self.bin, args[0], "--server", self.addresses()] + args[1:], capture_output=True,
                           text=True, timeout=timeout)
        return r.returncode, r.stdout

    def client_json(self, args):
        code, out = self.client(args + ["--json"])
        if code != 0:
            return None
        try:
            return json.loads(out)
        except ValueError:
            return None

    def owners(self):
        """partition -> owning member ("" if none), from `claimsched status`."""
        view = self.client_json(["status"])
        if not view:
            return {}
        return {p["partition"]: p.get("owner", "") for p in view.get("partitions", [])}

    def wait_for_owners(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            owners = self.owners()
            if len(owners) == self.partitions and all(owners.values()):
                return owners
            time.sleep(0.2)
        raise RuntimeError("partitions without owner after %d s: %s" % (timeout, self.owners()))

    def alive_nodes(self):
        nodes = self.client_json(["nodes"])
        return -1 if nodes is None else sum(1 for n in nodes if n.get("alive") and n.get("state") == "up")

    def stop(self, keep=False):
        for p in list(self.agents.values()) + list(self.members.values()):
            p.stop()
        self.etcd.stop()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
