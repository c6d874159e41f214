#!/usr/bin/env python3
"""The dashboard in a real browser: Debian's headless Chromium, driven over
WebDriver (chromium-driver) with nothing but the standard library.

It starts a local cluster (a server with [http] and the fair-share policy,
one agent with 4 task slots) and a known workload: alice's 4 tasks fill the
node, bob's 4 wait. Equal shares over a class's users then give each user
50% of the pool, and bob's job waits for room. It checks that the overview
counts the one node up, the pool page shows both users' 50% fair share, the
queue shows why bob's job waits (the API's words), and the job and node pages
draw; it saves a screenshot of each page under --out.

Exit status: 0 passed, 1 failed, 77 skipped (CTest's SKIP_RETURN_CODE) only
when Chromium or its driver is missing or cannot start at all.
"""

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
CHECK_TIMEOUT_S = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, json.loads(res.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_for(what, check, timeout=CHECK_TIMEOUT_S):
    """Polls check() until it returns a true value; fails naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # a page half drawn: try again
            last = e
        time.sleep(0.25)
    raise AssertionError(f"{what}: not seen within {timeout} s (last: {last!r})")


class Browser:
    """One headless Chromium session through chromedriver."""

    def __init__(self, chromium, driver, log_dir):
        self.port = free_port()
        self.log = open(os.path.join(log_dir, "chromedriver.log"), "w")
        self.proc = subprocess.Popen([driver, f"--port={self.port}"], stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        wait_for("chromedriver answering", lambda: self._ready(), timeout=10)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run", "--no-default-browser-check"]}}}}
        status, answer = http("POST", self.base + "/session", caps, timeout=60)
        if status != 200:
            raise RuntimeError(f"chromedriver could not start Chromium: {answer}")
        self.session = self.base + "/session/" + answer["value"]["sessionId"]

    def _ready(self):
        try:
            return http("GET", self.base + "/status", timeout=2)[1]["value"]["ready"]
        except (OSError, ValueError):
            return False

    def go(self, url):
        status, answer = http("POST", self.session + "/url", {"url": url})
        assert status == 200, answer

    def run(self, script, *args):
        status, answer = http("POST", self.session + "/execute/sync", {"script": script, "args": list(args)})
        assert status == 200, answer
        return answer["value"]

    def text(self, selector):
        return self.run("const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;",
                        selector)

    def screenshot(self, path):
        status, answer = http("GET", self.session + "/screenshot")
        assert status == 200, answer
        with open(path, "wb") as f:
            f.write(base64.b64decode(answer["value"]))
        print(f"dashboard_test: screenshot {path}")

    def close(self):
        try:
            http("DELETE", self.session, timeout=10)
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class Cluster:
    """A server and one agent on 127.0.0.1, stopped by PID."""

    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        config = os.path.join(work, "cluster.toml")
        with open(config, "w") as f:
            f.write('cluster_id = "dashboard"\n[listen]\nhost = "127.0.0.1"\nport = 0\n'
                    f'[storage]\ndata_dir = "{work}/server"\n'
                    '[timeouts]\nheartbeat_interval = "200ms"\nnode_grace = "2s"\n'
                    '[http]\nlisten = "127.0.0.1:0"\n'
                    '[policy]\nenabled = true\ninterval = "200ms"\n'
                    # Nobody starves within the test: the shares stay as submitted.
                    '[preemption]\nfair_share_starvation_timeout = "10m"\n')
        self.procs = []
        self.jobs = []
        log = os.path.join(work, "server.log")
        self.procs.append(self._start([binary, "server", "--config", config], log))
        text = wait_for("the server's addresses", lambda: self._addresses(log), timeout=15)
        self.address, self.http = text
        self.procs.append(self._start([binary, "agent", "--server", self.address, "--name", "n1",
                                       "--resources", "cpu=4,memory=4Gi", "--state-dir", work + "/n1"],
                                      os.path.join(work, "n1.log")))

    def _start(self, argv, log):
        return subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)

    def _addresses(self, log):
        if self.procs[0].poll() is not None:
            raise RuntimeError("the server exited:\n" + open(log).read())
        text = open(log).read()
        found = []
        for said in ("claimsched server listening on ", "claimsched server http on "):
            at = text.find(said)
            if at < 0:
                return None
            found.append(text[at + len(said):].split()[0])
        return found

    def client(self, *args):
        # The server goes before a command's `--`.
        r = subprocess.run([self.binary, args[0], "--server", self.address, *args[1:]], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise AssertionError(f"claimsched {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
        return r.stdout

    def api(self, path):
        status, body = http("GET", f"http://{self.http}{path}")
        assert status == 200, (path, status, body)
        return body

    def submit(self, *args):
        job = json.loads(self.client("submit", "--json", *args))["job"]
        self.jobs.append(job)
        return job

    def stop(self):
        # An agent stopped leaves its tasks running for its next start: end
        # them first, whether the test passed or not.
        for job in self.jobs:
            subprocess.run([self.binary, "cancel", str(job), "--server", self.address], capture_output=True, timeout=30)
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def chromium_problem(chromium, driver):
    """Why Chromium cannot run here (None if it can)."""
    if not chromium or not driver:
        return "chromium and chromium-driver are not installed (scripts/bootstrap.sh installs them)"
    try:
        r = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--dump-dom", "about:blank"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{chromium} does not start: {e}"
    if r.returncode != 0 or "<html" not in r.stdout:
        return f"{chromium} --headless cannot open a page (exit {r.returncode}): {r.stderr.strip()[-400:]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--claimsched", required=True)
    ap.add_argument("--out", required=True, help="where the screenshots go")
    o = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    problem = chromium_problem(chromium, driver)
    if problem:
        print(f"dashboard_test: SKIPPED: {problem}")
        return SKIP
    os.makedirs(o.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="claimsched-dashboard-")
    started = time.monotonic()
    cluster = browser = None
    passed = False
    try:
        cluster = Cluster(o.claimsched, work)
        wait_for("the agent's node up", lambda: any(n["alive"] for n in cluster.api("/api/v1/nodes")))
        alice = cluster.submit("--user", "alice", "--count", "4", "--", "/bin/sleep", "30")
        wait_for("alice's 4 tasks running",
                 lambda: cluster.api(f"/api/v1/jobs/{alice}")["tasks_by_state"].get("running") == 4)
        bob = cluster.submit("--user", "bob", "--count", "4", "--", "/bin/sleep", "30")
        reason = wait_for("bob's job waiting with a reason", lambda: cluster.api(f"/api/v1/jobs/{bob}")["waiting"])

        browser = Browser(chromium, driver, work)
        base = f"http://{cluster.http}/"
        browser.go(base + "#/")
        wait_for("the overview counting 1 node, 1 up",
                 lambda: browser.text("#nodes-total") == "1" and browser.text("#nodes-up") == "1")
        wait_for("the overview naming the partition's owner", lambda: browser.text("#partitions tbody td"))
        browser.screenshot(os.path.join(o.out, "overview.png"))

        browser.go(base + "#/pools")
        for user in ("alice", "bob"):
            wait_for(f"{user}'s fair share of 50.0% on the pool page",
                     lambda: browser.text(f'tr.user[data-user="{user}"] td.fair-share') == "50.0%")
        wait_for("alice's usage of 100.0% of the pool",
                 lambda: browser.text('tr.user[data-user="alice"] td.usage') == "100.0%")
        browser.screenshot(os.path.join(o.out, "pools.png"))

        browser.go(base + "#/queue")
        shown = wait_for("bob's job in the queue with why it waits",
                         lambda: browser.text(f'tr[data-job="{bob}"] td.reason'))
        assert shown == reason, f"the queue says {shown!r}, the API {reason!r}"
        # The policy's words too: bob is below his fair share.
        wait_for("the policy's reason for bob's job",
                 lambda: "below its fair share" in (browser.text(f'tr[data-job="{bob}"] td.policy') or ""))
        browser.screenshot(os.path.join(o.out, "queue.png"))

        browser.go(base + f"#/job/{alice}")
        wait_for("alice's job page with its 4 tasks running",
                 lambda: browser.run("return document.querySelectorAll('#tasks tbody tr').length") == 4
                 and browser.text("#job-state") == "running")
        browser.screenshot(os.path.join(o.out, "job.png"))

        browser.go(base + "#/node/n1")
        wait_for("node n1's page saying up, with alice's 4 tasks",
                 lambda: browser.text("#node-state") == "up"
                 and browser.run("return document.querySelectorAll('#node-tasks tbody tr').length") == 4)
        browser.screenshot(os.path.join(o.out, "node.png"))

        print(f"dashboard_test: passed in {time.monotonic() - started:.1f} s; screenshots in {o.out}")
        passed = True
        return 0
    except AssertionError as e:
        print(f"dashboard_test: FAILED: {e}\n(logs in {work})")
        return 1
    finally:
        if browser:
            browser.close()
        if cluster:
            cluster.stop()
        if passed:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
