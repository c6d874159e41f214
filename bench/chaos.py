"""A fault test in the manner of Jepsen (see bench/chaos.sh for usage).

Starts 3 etcd members, 3 `claimsched server` members ([ha], ack "one") and 4
agents on loopback; submits jobs whose tasks append a start and an end line
(job, task, node, time) to one file; and at seeded random times kills -9,
pauses and resumes server members, agents and one etcd member, one fault at a
time. Then it lets every acknowledged job finish and checks, from the tasks'
own lines and the fault log:

  lost_acked_jobs   acknowledged jobs with a task that never completed and
                    that the cluster no longer holds (unfinished_acked_jobs:
                    still held, not done by the end of the drain - a
                    failure too, named apart)
  duplicate_runs    task completions beyond the first (a task ran to
                    completion twice)
  overlapping_runs  two runs of one task at the same time (ran under two
                    owners / epochs at once)
  overcommits       moments a node ran more tasks than it has slots (every
                    task takes 1 cpu of a cpu=4 node); a run whose end line is
                    missing ended when its agent was killed

It prints one JSON line and exits 0 only if all four are 0 (and something was
acknowledged and faults were injected: a run that tested nothing fails).
"""

import argparse
import collections
import json
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness  # noqa: E402

SLOTS = 4
AGENTS = {"a1": "p1", "a2": "p2", "a3": "p3", "a4": "p1"}
# Jobs go to pools by their share of the slots, and wait while the tasks
# acknowledged and not yet done exceed this many per slot: the load keeps the
# cluster busy without piling up more than it can finish.
POOLS = sorted(set(AGENTS.values()))
POOL_WEIGHTS = [sum(1 for p in AGENTS.values() if p == pool) for pool in POOLS]
BACKLOG_PER_SLOT = 2


def task_command(runs, seconds):
    # The shell's pid ($$) names the run: a start and an end with the same
    # pid on the same node are one run.
    line = '$CLAIMSCHED_JOB_ID $CLAIMSCHED_TASK_INDEX $CLAIMSCHED_NODE $$ $EPOCHREALTIME'
    return ["/bin/bash", "-c", 'echo "start %s" >> %s; sleep %.2f; echo "end %s" >> %s' % (line, runs, seconds, line, runs)]


def check_runs(lines, acked, events, finished_at):
    """The checker (see the module comment): `lines` are the tasks' (kind,
    job, index, (node, pid), time) in time order, `acked` job -> task count,
    `events` the fault log (time, kind, target)."""
    kills = collections.defaultdict(list)
    starts = collections.defaultdict(list)
    for t, kind, target in events:
        if kind == "kill":
            kills[target].append(t)
        elif kind == "start":
            starts[target].append(t)

    def orphan(node, s):
        # Started while its agent was dead (after a kill, before the agent's
        # next start): a keeper launched just before the kill ran it, and
        # kills it as soon as it sees its agent gone.
        before = [k for k in kills.get(node, []) if k <= s]
        return bool(before) and not any(before[-1] <= a <= s for a in starts.get(node, []))
    # Runs: a start and an end of one shell (node, pid) are one run; a
    # run without an end ended when its agent was killed (its shell dies
    # with the agent), or is still running.
    started = {}
    runs = collections.defaultdict(list)  # task -> [(start, end, node)]
    for kind, job, index, (node, pid), t in lines:
        key = (job, index, node, pid)
        if kind == "start":
            started[key] = t
        elif key in started:
            runs[(job, index)].append((started.pop(key), t, node))
    for (job, index, node, pid), s in started.items():
        killed = [k for k in kills.get(node, []) if k >= s]
        end = s if orphan(node, s) else (min(killed) if killed else finished_at)
        runs[(job, index)].append((s, end, node))
    completions = collections.Counter((j, i) for kind, j, i, _, _ in lines if kind == "end")
    lost = sum(1 for job, count in acked.items() if any(completions[(job, i)] == 0 for i in range(count)))
    duplicates = sum(n - 1 for n in completions.values() if n > 1)
    overlapping = 0
    for task, rs in runs.items():
        rs.sort()
        overlapping += sum(1 for a, b in zip(rs, rs[1:]) if b[0] < a[1])
    overcommits = 0
    by_node = collections.defaultdict(list)
    for rs in runs.values():
        for s, e, node in rs:
            by_node[node] += [(s, 1), (e, -1)]
    for node, changes in by_node.items():
        changes.sort(key=lambda c: (c[0], c[1]))  # an end before a start at the same instant
        running = 0
        for _, d in changes:
            running += d
            if d > 0 and running > SLOTS:
                overcommits += 1
    reruns = sum(len(rs) - 1 for rs in runs.values() if len(rs) > 1)
    return {"lost_acked_jobs": lost, "duplicate_runs": duplicates, "overlapping_runs": overlapping,
            "overcommits": overcommits, "tasks_completed": len(completions), "task_runs": sum(map(len, runs.values())),
            "reruns_after_agent_loss": reruns}


class Chaos:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.cluster = ha_harness.Cluster(dir=args.dir, partitions=3, members=3, etcd_members=3, ack="one")
        self.runs = os.path.join(self.cluster.dir, "runs.log")
        self.events = []  # (wall time, kind, target)
        self.acked = {}  # job id -> task count
        self.unacked = 0
        self.lock = threading.Lock()
        self.stop_submitting = threading.Event()
        self.faults = collections.Counter()
        self.runs_size = -1
        self.completed = set()
        self.submitters = []

    def event(self, kind, target):
        with self.lock:
            self.events.append((time.time(), kind, target))

    # -- the cluster ---------------------------------------------------------

    def start(self):
        c = self.cluster
        for m in sorted(c.ports):
            c.start_member(m)
        c.wait_for_owners()
        for name, pool in AGENTS.items():
            c.start_agent(name, pool, "cpu=%d,memory=%dGi" % (SLOTS, SLOTS))
        deadline = time.time() + 30
        while c.alive_nodes() < len(AGENTS):
            if time.time() > deadline:
                raise RuntimeError("agents did not come up (logs in %s)" % c.dir)
            time.sleep(0.2)

    # -- load ----------------------------------------------------------------

    def outstanding(self):
        """Tasks of acknowledged jobs that have not completed yet."""
        size = os.path.getsize(self.runs) if os.path.exists(self.runs) else 0
        if size != self.runs_size:
            self.runs_size = size
            self.completed = {(j, i) for kind, j, i, _, _ in self.read_runs() if kind == "end"}
        with self.lock:
            acked = list(self.acked.items())
        return sum(1 for job, count in acked for i in range(count) if (job, i) not in self.completed)

    def submitter(self, rng):
        while not self.stop_submitting.is_set():
            if self.outstanding() > BACKLOG_PER_SLOT * SLOTS * len(AGENTS):
                time.sleep(0.2)
                continue
            pool = rng.choices(POOLS, POOL_WEIGHTS)[0]
            count = rng.randint(1, 3)
            seconds = rng.uniform(0.5, 3.0)
            try:
                code, out = self.cluster.client(["submit", "--json", "--pool", pool, "--count", str(count), "--"] +
                                                task_command(self.runs, seconds), timeout=30)
            except Exception:  # a hung client counts as not acknowledged
                code, out = -1, ""
            with self.lock:
                if code == 0:
                    self.acked[json.loads(out)["job"]] = count
                else:
                    self.unacked += 1
            time.sleep(rng.uniform(0.1, 0.6))

    # -- faults --------------------------------------------------------------

    def inject(self, end):
        rng = self.rng
        c = self.cluster
        kinds = [("member_kill", 3), ("member_pause", 3), ("agent_kill", 2), ("agent_pause", 2),
                 ("etcd_kill", 1), ("etcd_pause", 1)]
        while True:
            time.sleep(rng.uniform(2.0, 5.0))
            if time.time() >= end:
                return
            kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
            self.faults[kind] += 1
            if kind.startswith("member"):
                name = rng.choice(sorted(c.members))
                if kind == "member_kill":
                    self.kill_and_restart(name, c.members[name], (0.5, 3.0), lambda: c.start_member(name))
                else:
                    self.pause_and_resume(name, c.members[name], (0.3, 2.5))
            elif kind.startswith("agent"):
                name = rng.choice(sorted(c.agents))
                if kind == "agent_kill":
                    self.kill_and_restart(name, c.agents[name], (0.5, 2.0), lambda: c.restart_agent(name))
                else:
                    # Shorter than node_grace: a paused agent's tasks keep
                    # running, and must not be run elsewhere meanwhile.
                    self.pause_and_resume(name, c.agents[name], (0.3, 2.0))
            elif kind == "etcd_kill":
                self.kill_and_restart("etcd-e1", c.etcd.procs[0], (0.5, 3.0), lambda: c.etcd.start(0))
            else:
                self.pause_and_resume("etcd-e1", c.etcd.procs[0], (0.3, 2.5))

    def kill_and_restart(self, name, proc, down, restart):
        self.event("kill", name)
        proc.kill()
        time.sleep(self.rng.uniform(*down))
        restart()
        self.event("start", name)

    def pause_and_resume(self, name, proc, paused):
        self.event("pause", name)
        proc.signal(signal.SIGSTOP)
        time.sleep(self.rng.uniform(*paused))
        proc.signal(signal.SIGCONT)
        self.event("resume", name)

    # -- the check -------------------------------------------------------------

    def read_runs(self):
        lines = []
        if os.path.exists(self.runs):
            with open(self.runs) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 6 and parts[0] in ("start", "end"):
                        lines.append((parts[0], int(parts[1]), int(parts[2]), (parts[3], parts[4]), float(parts[5])))
        return lines

    def incomplete_jobs(self):
        ends = collections.Counter((j, i) for kind, j, i, _, _ in self.read_runs() if kind == "end")
        return [job for job, count in self.acked.items() if any(ends[(job, i)] == 0 for i in range(count))]

    def all_acked_done(self):
        ends = collections.Counter((j, i) for kind, j, i, _, _ in self.read_runs() if kind == "end")
        return all(ends[(job, i)] > 0 for job, count in self.acked.items() for i in range(count))

    def check(self, finished_at):
        return check_runs(sorted(self.read_runs(), key=lambda l: l[4]), self.acked, self.events, finished_at)

    # -- the run ---------------------------------------------------------------

    def run(self):
        started = time.time()
        self.start()
        end = time.time() + self.args.minutes * 60
        self.submitters = [threading.Thread(target=self.submitter, args=(random.Random(self.args.seed * 1000 + i),))
                           for i in range(2)]
        for t in self.submitters:
            t.start()
        self.inject(end)
        self.stop_submitting.set()
        for t in self.submitters:
            t.join()
        # Heal everything, then let every acknowledged job finish.
        c = self.cluster
        for p in list(c.members.values()) + list(c.agents.values()) + c.etcd.procs:
            p.signal(signal.SIGCONT)
        drain_started = time.time()
        while not self.all_acked_done() and time.time() - drain_started < self.args.drain:
            time.sleep(1)
        finished_at = time.time()
        result = {"seed": self.args.seed, "minutes": self.args.minutes,
                  "faults_injected": sum(self.faults.values()), "faults": dict(self.faults),
                  "jobs_acknowledged": len(self.acked), "jobs_unacknowledged": self.unacked}
        result.update(self.check(finished_at))
        # An acknowledged job that did not complete is lost only if the
        # cluster does not hold it any more; one still queued or running
        # did not finish in time (also a failure, named apart).
        if result["lost_acked_jobs"]:
            queue = self.cluster.client_json(["queue", "--limit", "0", "--timeout", "30s"])
            held = {j["job"] for j in queue} if queue is not None else set()
            incomplete = self.incomplete_jobs()
            result["unfinished_acked_jobs"] = sum(1 for job in incomplete if job in held)
            result["lost_acked_jobs"] = sum(1 for job in incomplete if job not in held)
            result["incomplete_jobs"] = sorted(incomplete)[:20]
        result["drain_s"] = round(finished_at - drain_started, 1)
        with open(os.path.join(self.cluster.dir, "faults.log"), "w") as f:
            for t, kind, target in self.events:
                f.write("%.6f %s %s\n" % (t, kind, target))
        with open(os.path.join(self.cluster.dir, "acknowledged.log"), "w") as f:
            for job, count in sorted(self.acked.items()):
                f.write("%d %d\n" % (job, count))
        result["elapsed_s"] = round(finished_at - started, 1)
        result["passed"] = (result["lost_acked_jobs"] == 0 and result.get("unfinished_acked_jobs", 0) == 0 and
                            result["duplicate_runs"] == 0 and
                            result["overcommits"] == 0 and result["overlapping_runs"] == 0 and
                            result["jobs_acknowledged"] > 0 and result["faults_injected"] > 0)
        return result



def self_test():
    """The checker finds what it should: each violation once, and nothing in
    a clean history (so a passing run is not a vacuous one)."""
    def start(job, i, node, pid, t):
        return ("start", job, i, (node, pid), t)

    def end(job, i, node, pid, t):
        return ("end", job, i, (node, pid), t)

    clean = [start(1, 0, "a1", 10, 1.0), end(1, 0, "a1", 10, 2.0),
             # killed with its agent at 3.5, run again elsewhere: one completion
             start(2, 0, "a1", 11, 3.0), start(2, 0, "a2", 20, 4.0), end(2, 0, "a2", 20, 5.0)]
    events = [(3.5, "kill", "a1"), (3.8, "start", "a1")]
    r = check_runs(clean, {1: 1, 2: 1}, events, 10.0)
    assert (r["lost_acked_jobs"], r["duplicate_runs"], r["overlapping_runs"], r["overcommits"]) == (0, 0, 0, 0), r
    assert r["reruns_after_agent_loss"] == 1, r
    lost = check_runs(clean, {1: 1, 2: 1, 3: 2}, events, 10.0)
    assert lost["lost_acked_jobs"] == 1, lost
    twice = clean + [start(1, 0, "a2", 21, 6.0), end(1, 0, "a2", 21, 7.0)]
    r = check_runs(sorted(twice, key=lambda l: l[4]), {1: 1, 2: 1}, events, 10.0)
    assert r["duplicate_runs"] == 1 and r["overlapping_runs"] == 0, r
    both = clean + [start(1, 0, "a2", 22, 1.5), end(1, 0, "a2", 22, 2.5)]
    r = check_runs(sorted(both, key=lambda l: l[4]), {1: 1, 2: 1}, events, 10.0)
    assert r["overlapping_runs"] == 1 and r["duplicate_runs"] == 1, r
    # Started by a keeper 40 ms after its agent was killed: killed at once,
    # not running until the agent's next kill.
    late = clean + [start(3, 0, "a1", 12, 3.54), start(3, 0, "a2", 23, 4.5), end(3, 0, "a2", 23, 5.5)]
    late += [start(4, i, "a1", 30 + i, 6.0 + i / 10) for i in range(SLOTS)]
    late += [end(4, i, "a1", 30 + i, 7.0) for i in range(SLOTS)]
    r = check_runs(sorted(late, key=lambda l: l[4]), {1: 1, 2: 1, 3: 1, 4: SLOTS}, events + [(9.0, "kill", "a1")], 10.0)
    assert (r["overcommits"], r["overlapping_runs"], r["duplicate_runs"]) == (0, 0, 0), r
    crowded = [start(9, i, "a3", 100 + i, 1.0 + i / 10) for i in range(SLOTS + 1)]
    crowded += [end(9, i, "a3", 100 + i, 5.0) for i in range(SLOTS + 1)]
    r = check_runs(sorted(crowded, key=lambda l: l[4]), {9: SLOTS + 1}, [], 10.0)
    assert r["overcommits"] == 1 and r["lost_acked_jobs"] == 0, r
    return "checker self-test passed"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--json", action="store_true", help="print only the JSON line")
    ap.add_argument("--dir", help="keep everything here (default: a temporary directory, removed if the run passed)")
    ap.add_argument("--keep", action="store_true", help="keep the directory even if the run passed")
    ap.add_argument("--drain", type=float, default=120, help="seconds to wait for acknowledged jobs at the end")
    ap.add_argument("--self-test", action="store_true", help="check the checker on made-up histories, then exit")
    args = ap.parse_args()
    if args.self_test:
        print(self_test())
        return 0
    chaos = None
    try:
        chaos = Chaos(args)
        result = chaos.run()
    except BaseException as e:  # setup failed, or interrupted: say so, as JSON too
        result = {"seed": args.seed, "minutes": args.minutes, "error": "%s: %s" % (type(e).__name__, e),
                  "passed": False}
        if chaos:
            chaos.stop_submitting.set()
            for t in chaos.submitters:
                t.join()
    if chaos:
        keep = args.keep or args.dir is not None or not result.get("passed")
        chaos.cluster.stop(keep=keep)
        if keep:
            result["dir"] = chaos.cluster.dir
    if not args.json:
        print("chaos: seed %s, %s minute(s)" % (args.seed, args.minutes), file=sys.stderr)
    print(json.dumps(result), flush=True)
    return 0 if result.get("passed") else 1


if __name__ == "__main__":
    sys.exit(main())
