"""Failover time of an HA partition under load (see bench/failover.sh).

1. The submit rate with ack "one" as a ratio to a single durable server, both
   running here at once: one client submits N one-task jobs pipelined
   (`submit --repeat N`, 256 in flight, timed around the client) to
   the partition's owner / the single server, alternately three times each;
   the ratio of the medians is replicated_submit_ratio. The same with 4
   clients at once, once each: replicated_submit_ratio_clients (on one
   machine the standbys' copies then compete for the same two cores).
2. An HA cluster - 3 server members, etcd, one partition - whose agent hosts
   1,000 simulated nodes, filled with 100,000 running allocations.
3. At least 20 times: kill -9 the partition's owner; a probe job submitted at
   once through every member (the client moves past the dead one and retries
   while the partition has no owner) measures owner death -> first placement
   by the new owner (the probe's first task confirmed, on the server's
   wall clock, minus the kill on the same host's clock). The killed member is
   started again and the cluster settles (owner, every standby caught up)
   before the next kill.
4. The check: every acknowledged job still held, the 100,000 allocations
   each still running exactly once (the nodes hold exactly what the
   partition's records say runs), no node over its capacity.

One JSON line: failover_p50_ms, failover_p99_ms, failover_max_ms,
lost_acked_jobs, duplicate_runs, overcommits, replicated_submit_ratio, ...
"""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness  # noqa: E402


def quantile(values, q):
    if not values:
        return 0.0
    v = sorted(values)
    i = max(0, min(len(v) - 1, math.ceil(q * len(v)) - 1))
    return v[i]


def submit_rate(bin, address, jobs):
    """Jobs per second of `jobs` pipelined one-task jobs submitted to one
    server (`submit --repeat`, 256 in flight), each acknowledged once it is
    durable as the server's ack mode says; timed around the client."""
    started = time.monotonic()
    out = subprocess.run([bin, "submit", "--server", address, "--repeat", str(jobs),
                          "--pool", "p1", "--duration", "1ms", "--", "/bin/true"],
                         capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - started
    if out.returncode != 0:
        raise RuntimeError("submit --repeat failed: " + out.stdout + out.stderr)
    acknowledged = len(out.stdout.split())
    if acknowledged != jobs:
        raise RuntimeError("submit --repeat acknowledged %d of %d jobs" % (acknowledged, jobs))
    return jobs / elapsed


def parallel_rate(bin, address, jobs, clients):
    """Jobs per second of `clients` clients submitting jobs/clients each at once."""
    rates = [0.0] * clients

    def one(i):
        rates[i] = submit_rate(bin, address, jobs // clients)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(rates)


class SingleServer:
    """A single durable server (no [ha]) with one simulated agent."""

    def __init__(self, bin, dir):
        port = ha_harness.free_port()
        config = os.path.join(dir, "single.toml")
        with open(config, "w") as f:
            f.write('cluster_id = "single"\n[listen]\nhost = "127.0.0.1"\nport = %d\n[storage]\n'
                    'data_dir = "%s/single"\n[[pools]]\nname = "p1"\n[[partitions]]\nid = 1\npools = ["p1"]\n'
                    % (port, dir))
        self.address = "127.0.0.1:%d" % port
        self.server = ha_harness.Proc([bin, "server", "--config", config], os.path.join(dir, "single.log"))
        self.agent = None
        deadline = time.time() + 20
        while "listening" not in open(os.path.join(dir, "single.log")).read():
            if time.time() > deadline or not self.server.alive():
                self.stop()
                raise RuntimeError("the single server did not start (see %s/single.log)" % dir)
            time.sleep(0.05)
        self.agent = ha_harness.Proc([bin, "agent", "--server", self.address, "--name", "single", "--pool", "p1",
                                      "--simulate", "8", "--resources", "cpu=64,memory=64Gi", "--state-dir",
                                      os.path.join(dir, "single-agent")], os.path.join(dir, "single-agent.log"))

    def stop(self):
        if self.agent:
            self.agent.stop()
        self.server.stop()


def submit_rates(bin, single, replicated, jobs, clients, rounds=3):
    """Median submit rates of the single server and the HA owner, measured
    alternately (`rounds` each) so that load on the machine hits both."""
    a, b = [], []
    submit_rate(bin, single, min(jobs, 500))  # warm up
    submit_rate(bin, replicated, min(jobs, 500))
    for _ in range(rounds):
        a.append(parallel_rate(bin, single, jobs, clients))
        b.append(parallel_rate(bin, replicated, jobs, clients))
    return sorted(a)[rounds // 2], sorted(b)[rounds // 2]


class Bench:
    def __init__(self, args):
        self.args = args
        self.dir = args.dir or tempfile.mkdtemp(prefix="claimsched-failover-")
        os.makedirs(self.dir, exist_ok=True)
        self.cluster = None
        self.single = None

    def settle(self, timeout=120):
        """Every member up with every node registered at its gateway, the
        partition owned, every standby caught up."""
        c = self.cluster
        deadline = time.time() + timeout
        while time.time() < deadline:
            registered = all((v or {}).get("gateway_nodes", 0) >= self.args.nodes
                             for v in (self.member_view(m) for m in sorted(c.ports)))
            view = c.client_json(["status"])
            if registered and view and len(view.get("members", [])) == len(c.ports):
                p = view["partitions"][0]
                standbys = p.get("standbys", [])
                if p.get("owner") and len(standbys) == len(c.ports) - 1 and \
                        all(s.get("lag_records", 1) == 0 and not s.get("bootstrapping") for s in standbys):
                    return p["owner"]
            time.sleep(0.25)
        raise RuntimeError("the cluster did not settle within %d s: %s" % (timeout, c.client_json(["status"])))

    def member_view(self, member):
        """`claimsched status` asked of one member's gateway."""
        out = subprocess.run([self.cluster.bin, "status", "--json", "--server",
                              "127.0.0.1:%d" % self.cluster.ports[member]], capture_output=True, text=True)
        try:
            return json.loads(out.stdout) if out.returncode == 0 else None
        except ValueError:
            return None

    def fill(self):
        c = self.cluster
        per_job = self.args.allocations // self.args.fill_jobs
        code, out = c.client(["submit", "--repeat", str(self.args.fill_jobs), "--pool", "p1", "--count", str(per_job),
                              "--duration", "100000s", "--", "/bin/true"], timeout=600)
        if code != 0:
            raise RuntimeError("filling failed: " + out)
        deadline = time.time() + 600
        while time.time() < deadline:
            running = self.running_tasks()
            if running >= per_job * self.args.fill_jobs:
                return running
            time.sleep(1)
        raise RuntimeError("the fill did not run within 600 s (%d running)" % self.running_tasks())

    def running_tasks(self):
        queue = self.cluster.client_json(["queue", "--limit", "0", "--timeout", "60s"]) or []
        return sum(j.get("tasks_by_state", {}).get("running", 0) for j in queue)

    def probe(self, kill_ns, result):
        """Submits a one-task job and waits until it was placed."""
        c = self.cluster
        code, out = c.client(["submit", "--json", "--pool", "p1", "--duration", "10ms", "--", "/bin/true"], timeout=60)
        if code != 0:
            result["error"] = "probe submit failed: " + out
            return
        job = json.loads(out)["job"]
        result["job"] = job
        deadline = time.time() + 60
        while time.time() < deadline:
            s = c.client_json(["status", str(job)])
            if s and s.get("started_at_ns"):
                result["failover_ms"] = round((s["started_at_ns"] - kill_ns) / 1e6, 1)
                # When the new owner's gateway took the probe (the client
                # retried until then), and when it was placed after that.
                if s.get("submitted_at_ns"):
                    result["accepted_ms"] = round((s["submitted_at_ns"] - kill_ns) / 1e6, 1)
                return
            time.sleep(0.05)
        result["error"] = "probe %d was not placed within 60 s" % job

    def run(self):
        args = self.args
        bin = ha_harness.binary()
        self.single = SingleServer(bin, self.dir)
        self.cluster = c = ha_harness.Cluster(dir=os.path.join(self.dir, "ha"), partitions=1, members=3,
                                              etcd_members=args.etcd_members, ack="one",
                                              timeouts={"node_grace": "10s", "recovery_grace": "30s",
                                                        "claim_ttl": "10s"})
        for m in sorted(c.ports):
            c.start_member(m)
        owner = c.wait_for_owners()[1]
        c.start_agent("sim", "p1", "cpu=%d,memory=%dGi" % (args.slots, args.slots), simulate=args.nodes)
        deadline = time.time() + 120
        while c.alive_nodes() < args.nodes:
            if time.time() > deadline:
                raise RuntimeError("the simulated nodes did not register within 120 s")
            time.sleep(0.5)
        owner = self.settle()
        owner_address = "127.0.0.1:%d" % c.ports[owner]
        single, replicated = submit_rates(bin, self.single.address, owner_address, args.submit_jobs, 1)
        single_n, replicated_n = submit_rates(bin, self.single.address, owner_address, args.submit_jobs,
                                              args.submit_clients, rounds=1)
        self.single.stop()
        self.single = None
        filled = self.fill()
        owner = self.settle()
        acked_probes, times, errors, accepted = [], [], [], []
        for k in range(args.kills):
            owner = self.settle()
            result = {}
            kill_ns = time.time_ns()
            c.members[owner].kill()
            prober = threading.Thread(target=self.probe, args=(kill_ns, result))
            prober.start()
            prober.join()
            if "job" in result:
                acked_probes.append(result["job"])
            if "failover_ms" in result:
                times.append(result["failover_ms"])
                accepted.append(result.get("accepted_ms"))
            else:
                errors.append(result.get("error", "no result"))
            if not args.json:
                print("kill %d of %s: %s" % (k + 1, owner, result), file=sys.stderr)
            c.start_member(owner)
        self.settle()
        check = self.check(acked_probes)
        return {"kills": args.kills, "nodes": args.nodes, "allocations": filled,
                "failover_p50_ms": round(quantile(times, 0.5), 1), "failover_p99_ms": round(quantile(times, 0.99), 1),
                "failover_max_ms": round(max(times), 1) if times else 0.0, "failovers_measured": len(times),
                "errors": errors, **check,
                "single_submit_per_sec": round(single, 1), "replicated_submit_per_sec": round(replicated, 1),
                "replicated_submit_ratio": round(replicated / single, 3) if single else 0.0,
                "submit_clients": args.submit_clients,
                "single_submit_per_sec_clients": round(single_n, 1),
                "replicated_submit_per_sec_clients": round(replicated_n, 1),
                "replicated_submit_ratio_clients": round(replicated_n / single_n, 3) if single_n else 0.0,
                "failovers_ms": [round(t) for t in times], "accepted_ms": accepted}

    def check(self, probes):
        c = self.cluster
        queue = c.client_json(["queue", "--limit", "0", "--timeout", "60s"]) or []
        open_jobs = {j["job"]: j for j in queue}
        fill_running = sum(j.get("tasks_by_state", {}).get("running", 0) for j in queue)
        per_job = self.args.allocations // self.args.fill_jobs
        lost = sum(1 for j in queue if j.get("count") == per_job and
                   j.get("tasks_by_state", {}).get("running", 0) != per_job)
        lost += self.args.fill_jobs - sum(1 for j in queue if j.get("count") == per_job)
        for job in probes:
            s = c.client_json(["status", str(job)])
            if not s or s.get("state") not in ("succeeded", "running") and job not in open_jobs:
                lost += 1
        nodes = c.client_json(["nodes", "--timeout", "60s"])
        if nodes is None:
            raise RuntimeError("claimsched nodes failed at the end of the run")
        held = 0
        overcommits = 0
        def cpu(text):  # "cpu=110,memory=110Gi" -> 110 cores ("cpu=500m" -> 0.5)
            for part in text.split(","):
                if part.startswith("cpu="):
                    v = part[4:]
                    return float(v[:-1]) / 1000 if v.endswith("m") else float(v)
            return 0.0
        for n in nodes:
            cap, free = cpu(n["capacity"]), cpu(n["free"])
            held += round(cap - free)  # every task takes one core
            overcommits += free < 0
        return {"lost_acked_jobs": lost, "duplicate_runs": max(0, held - fill_running),
                "missing_allocations": max(0, fill_running - held), "overcommits": overcommits,
                "running_at_end": fill_running}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--allocations", type=int, default=100000)
    ap.add_argument("--fill-jobs", type=int, default=100)
    ap.add_argument("--slots", type=int, default=110, help="cpu slots per simulated node")
    ap.add_argument("--submit-jobs", type=int, default=4000, help="jobs per submit-rate measurement")
    ap.add_argument("--submit-clients", type=int, default=4, help="clients submitting at once in it")
    ap.add_argument("--etcd-members", type=int, default=1)
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bench = Bench(args)
    try:
        result = bench.run()
    except BaseException as e:
        result = {"error": "%s: %s" % (type(e).__name__, e)}
    if bench.single:
        bench.single.stop()
    if bench.cluster:
        keep = args.keep or args.dir is not None or "error" in result
        bench.cluster.stop(keep=keep)
    if not (args.keep or args.dir or "error" in result):
        subprocess.run(["rm", "-rf", bench.dir])
    else:
        result["dir"] = bench.dir
    print(json.dumps(result), flush=True)
    ok = "error" not in result and result["lost_acked_jobs"] == 0 and result["duplicate_runs"] == 0 and \
        result["overcommits"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
