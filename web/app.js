// The claimsched dashboard: one page, views chosen by the URL's #fragment,
// each redrawn from the JSON API (/api/v1/) every few seconds. No
// libraries: it must work with no internet and nothing installed.
"use strict";

const POLL_MS = 2000;
const view = document.getElementById("view");
let placementsBefore = null; // {total, at}: for placements/s between two polls
let busy = false;

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

/// With [auth] on, the API wants a token: asked once, kept for this tab
/// (sessionStorage) and sent as a bearer token; a refused one is asked again.
async function fetchApi(path) {
  const headers = {Accept: "application/json"};
  const token = sessionStorage.getItem("claimsched-token");
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(path, {headers});
  if (res.status !== 401 || busyAsking) return res;
  busyAsking = true;
  const given = window.prompt("This cluster asks for a token (the one your claimsched client uses):");
  busyAsking = false;
  if (!given) return res;
  sessionStorage.setItem("claimsched-token", given.trim());
  return fetchApi(path);
}
let busyAsking = false;

async function api(path) {
  const res = await fetchApi(path);
  const text = await res.text();
  let body = null;
  try { body = JSON.parse(text); } catch (e) { /* not JSON: said below */ }
  if (!res.ok) throw new Error((body && body.error && body.error.message) || `${path}: HTTP ${res.status}`);
  if (body === null) throw new Error(`${path}: the answer is not JSON`);
  return {body, headers: res.headers};
}

/// An ISO 8601 UTC time as "2026-01-02 12:00:03Z" (null: "–").
function when(iso) { return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "–"; }
function share(v) { return typeof v === "number" ? (100 * v).toFixed(1) + "%" : "–"; }
function cls(prefix, v) { return `${prefix}-${esc(String(v || "").split(/[ (]/)[0])}`; }
function table(headers, rows, id) {
  const head = headers.map(h => h.startsWith("#") ? `<th class="num">${esc(h.slice(1))}</th>` : `<th>${esc(h)}</th>`);
  return `<table${id ? ` id="${id}"` : ""}><thead><tr>${head.join("")}</tr></thead><tbody>` +
    (rows.length ? rows.join("") : `<tr><td colspan="${headers.length}" class="muted">none</td></tr>`) + "</tbody></table>";
}
function card(id, value, label) {
  return `<div class="card"><div class="value" id="${id}">${esc(value)}</div><div class="label">${esc(label)}</div></div>`;
}

/// CPU in cores from a resources string such as "cpu=4,memory=4Gi" or "cpu=500m".
function cpuOf(resources) {
  const m = /(?:^|,)cpu=([0-9.]+)(m?)/.exec(resources || "");
  if (!m) return 0;
  return parseFloat(m[1]) / (m[2] ? 1000 : 1);
}

/// A node's state as the CLI's table says it: "silent" when up but unheard.
function nodeState(n) { return !n.alive && n.state === "up" ? "silent" : n.state; }

function jobLink(id) { return `<a href="#/job/${esc(id)}">${esc(id)}</a>`; }
function nodeLink(name) { return name ? `<a href="#/node/${encodeURIComponent(name)}">${esc(name)}</a>` : "–"; }
function taskCounts(j) {
  return Object.entries(j.tasks_by_state || {}).map(([s, n]) => `${n} ${s}`).join(", ") || "–";
}

function sumMetric(text, name) {
  let total = 0;
  for (const line of text.split("\n"))
    if (line.startsWith(name + "{") || line.startsWith(name + " ")) total += parseFloat(line.slice(line.lastIndexOf(" ") + 1)) || 0;
  return total;
}

async function overview() {
  const [partitions, nodes, metrics] = await Promise.all([
    api("/api/v1/partitions"), api("/api/v1/nodes"),
    fetch("/metrics").then(r => r.ok ? r.text() : "")]);
  const list = nodes.body;
  const count = s => list.filter(n => nodeState(n) === s).length;
  const up = count("up"), draining = count("draining");
  const down = list.length - up - draining;
  let cap = 0, free = 0;
  for (const n of list) if (n.alive) { cap += cpuOf(n.capacity); free += cpuOf(n.free); }
  const used = cap > 0 ? (100 * (cap - free) / cap).toFixed(0) + "%" : "–";
  const total = sumMetric(metrics, "claimsched_placements_total");
  const now = performance.now();
  let rate = "–";
  if (placementsBefore && now > placementsBefore.at) rate = ((total - placementsBefore.total) * 1000 / (now - placementsBefore.at)).toFixed(1);
  placementsBefore = {total, at: now};
  const rows = (partitions.body.partitions || []).map(p =>
    `<tr><td class="num">${esc(p.partition)}</td><td>${esc((p.pools || []).join(", "))}</td>` +
    `<td>${esc(p.owner || "(none)")}</td><td class="num">${esc(p.epoch)}</td>` +
    `<td>${esc((p.standbys || []).map(s => s.name).join(", ") || "–")}</td></tr>`);
  return `<h1>Overview</h1><div class="cards">` +
    card("nodes-total", list.length, "nodes") + card("nodes-up", up, "up") +
    card("nodes-draining", draining, "draining") + card("nodes-down", down, "down or silent") +
    card("utilisation", used, `CPU in use (${(cap - free).toFixed(1)} of ${cap.toFixed(1)} cores)`) +
    card("placements-rate", rate, "placements/s") + `</div>` +
    `<h2>Partitions <span class="muted">(${esc(partitions.body.mode === "ha" ? "HA, asked " + partitions.body.member : "single server")})</span></h2>` +
    table(["#Partition", "Pools", "Owner", "#Epoch", "Standbys"], rows, "partitions");
}

/// Usage (blue) against the fair share (the black mark), as fractions of the pool.
function shareBar(e) {
  const fair = e.fair_share_share, use = e.usage_share;
  return `<div class="bar" title="usage ${share(use)} / fair share ${share(fair)}">` +
    `<div class="use" style="width:${Math.min(100, 100 * (use || 0))}%"></div>` +
    `<div class="fair" style="left:${Math.min(100, 100 * (fair || 0))}%"></div></div>`;
}

function poolRows(pool, depth, out) {
  const fair = pool.fair_share_share, use = pool.usage_share;
  const bar = shareBar(pool);
  out.push(`<tr class="pool" data-pool="${esc(pool.name)}"><td style="padding-left:${10 + 18 * depth}px">${esc(pool.name)}</td>` +
    `<td class="num">${esc(pool.nodes)}</td><td>${esc(pool.capacity)}</td><td class="num">${share(pool.demand_share)}</td>` +
    `<td class="num fair-share">${share(fair)}</td><td class="num usage">${share(use)}</td><td>${bar}</td>` +
    `<td class="${cls("status", pool.status)}">${esc(pool.status)}</td><td>${esc(pool.starvation || "–")}</td></tr>`);
  for (const c of pool.classes || []) {
    out.push(`<tr class="class" data-pool="${esc(pool.name)}" data-class="${esc(c.name)}"><td style="padding-left:${28 + 18 * depth}px">class ${esc(c.name)}` +
      ` <span class="muted">(${esc(c.policy)}, weight ${esc(c.weight)})</span></td><td></td><td></td>` +
      `<td class="num">${share(c.demand_share)}</td><td class="num fair-share">${share(c.fair_share_share)}</td>` +
      `<td class="num usage">${share(c.usage_share)}</td><td>${shareBar(c)}</td><td class="${cls("status", c.status)}">${esc(c.status)}</td><td></td></tr>`);
    for (const u of c.users || [])
      out.push(`<tr class="user" data-user="${esc(u.name)}"><td style="padding-left:${46 + 18 * depth}px">user ${esc(u.name)}</td><td></td><td></td>` +
        `<td class="num">${share(u.demand_share)}</td><td class="num fair-share">${share(u.fair_share_share)}</td>` +
        `<td class="num usage">${share(u.usage_share)}</td><td>${shareBar(u)}</td><td class="${cls("status", u.status)}">${esc(u.status)}</td><td></td></tr>`);
  }
  for (const sub of pool.pools || []) poolRows(sub, depth + 1, out);
}

async function pools() {
  const {body} = await api("/api/v1/pools");
  let html = `<h1>Pools</h1><div class="legend">Shares are fractions of the pool subtree. ` +
    `Bar: blue is usage, the black mark the fair share.</div>`;
  for (const p of body.partitions || []) {
    if (!p.policy_enabled) {
      html += `<h2>Partition ${esc(p.partition)}</h2><p class="muted">The fair-share policy is off ([policy] enabled = false): no shares to show.</p>`;
      continue;
    }
    const rows = [];
    for (const pool of p.pools || []) poolRows(pool, 0, rows);
    html += `<h2>Partition ${esc(p.partition)}</h2>` +
      table(["Pool / class / user", "#Nodes", "Capacity", "#Demand", "#Fair share", "#Usage", "Usage vs fair", "Status", "Starvation"], rows, "pool-tree");
  }
  return html;
}

/// `policy` (job id -> the fair-share policy's view of it) adds its columns.
function jobRows(list, policy) {
  return list.map(j => {
    const p = policy && policy.get(j.job);
    const fair = p ? `<td class="policy">${esc(p.pending_reason || p.status)}</td>` : policy ? `<td class="policy">–</td>` : "";
    return `<tr data-job="${esc(j.job)}"><td class="num">${jobLink(j.job)}</td><td>${esc(j.name || "–")}</td>` +
      `<td>${esc(j.user)}</td><td>${esc(j.class)}</td><td>${esc(j.pool)}</td>` +
      `<td class="${cls("state", j.state)}">${esc(j.state)}</td><td>${esc(taskCounts(j))}</td>` +
      `<td>${esc(when(j.submitted_at))}</td>` + (policy ? `<td class="reason">${esc(j.waiting || "–")}</td>` + fair : "") + `</tr>`;
  });
}

/// Every job the policy's last cycle saw, by id (pools --json's JOB objects).
function policyJobs(pools) {
  const byId = new Map();
  const walk = pool => {
    for (const c of pool.classes || []) for (const u of c.users || []) for (const j of u.jobs || []) byId.set(j.job, j);
    for (const sub of pool.pools || []) walk(sub);
  };
  for (const p of pools.partitions || []) for (const pool of p.pools || []) walk(pool);
  return byId;
}

async function queue() {
  const [{body}, pools] = await Promise.all([api("/api/v1/queue?limit=500"), api("/api/v1/pools")]);
  return `<h1>Queue <span class="muted">(${body.length} job${body.length === 1 ? "" : "s"} not ended)</span></h1>` +
    table(["#Job", "Name", "User", "Class", "Pool", "State", "Tasks", "Submitted", "Why it waits", "Fair share"],
      jobRows(body, policyJobs(pools.body)), "queue");
}

async function jobs(after) {
  const {body, headers} = await api("/api/v1/jobs?limit=100" + (after ? "&after=" + encodeURIComponent(after) : ""));
  const next = headers.get("X-Claimsched-Next-After");
  return `<h1>Jobs <span class="muted">(newest first${after ? ", older than " + esc(after) : ""})</span></h1>` +
    table(["#Job", "Name", "User", "Class", "Pool", "State", "Tasks", "Submitted"], jobRows(body, null), "jobs") +
    `<p>${after ? `<a href="#/jobs">newest</a> ` : ""}${next ? `<a href="#/jobs/after/${esc(next)}">older →</a>` : ""}</p>`;
}

async function job(id) {
  const [j, why] = await Promise.all([api(`/api/v1/jobs/${encodeURIComponent(id)}`),
    api(`/api/v1/jobs/${encodeURIComponent(id)}/explain`).catch(() => null)]);
  const v = j.body;
  const tasks = (v.tasks || []).map(t => `<tr><td class="num">${esc(t.index)}</td><td class="${cls("state", t.state)}">${esc(t.state)}</td>` +
    `<td>${nodeLink(t.node_name)}</td><td class="num">${esc(t.exit_code)}</td><td class="num">${esc(t.failures)}</td>` +
    `<td class="num">${esc(t.losses)}</td><td class="text">${esc(t.end ? t.end.text : "–")}</td></tr>`);
  const placement = why && why.body.placement;
  return `<h1>Job ${esc(v.job)}${v.name ? " (" + esc(v.name) + ")" : ""}: <span id="job-state" class="${cls("state", v.state)}">${esc(v.state)}</span></h1>` +
    table(["User", "Class", "Pool", "Tasks", "Resources per task", "Submitted", "Started", "Finished"],
      [`<tr><td>${esc(v.user)}</td><td>${esc(v.class)}</td><td>${esc(v.pool)}</td><td>${esc(taskCounts(v))} (of ${esc(v.count)})</td>` +
       `<td>${esc(v.resources)}</td><td>${esc(when(v.submitted_at))}</td><td>${esc(when(v.started_at))}</td><td>${esc(when(v.finished_at))}</td></tr>`]) +
    (v.waiting ? `<h2>Why it waits</h2><p id="job-waiting">${esc(v.waiting)}</p>` : "") +
    (placement ? `<p class="muted">${esc(placement.verdict)}: ${esc(placement.summary)}</p>` : "") +
    (v.last_removal ? `<p>Last taken away: ${esc(v.last_removal)}</p>` : "") +
    `<h2>Tasks</h2>` + table(["#Task", "State", "Node", "#Exit", "#Failures", "#Losses", "Ended"], tasks, "tasks") +
    `<p class="muted">Command: ${esc((v.command || []).join(" "))}</p>`;
}

async function nodes(name) {
  const {body} = await api("/api/v1/nodes");
  if (name) {
    const n = body.find(x => x.name === name);
    if (!n) return `<h1>Node ${esc(name)}</h1><p>No node of this name is registered.</p>`;
    const labels = Object.entries(n.labels || {}).map(([k, v]) => `${k}=${v}`).join(", ");
    // Its tasks: those of the running jobs (the newest 50) that run here.
    const running = (await api("/api/v1/queue?state=running&limit=50")).body;
    const views = await Promise.all(running.map(j => api(`/api/v1/jobs/${j.job}`).then(r => r.body).catch(() => null)));
    const tasks = [];
    for (const v of views) for (const t of (v && v.tasks) || [])
      if (t.node_name === n.name && t.state === "running")
        tasks.push(`<tr><td>${jobLink(v.job)}.${esc(t.index)}</td><td>${esc(v.user)}</td><td>${esc(v.class)}</td><td>${esc(v.resources)}</td></tr>`);
    return `<h1>Node ${esc(n.name)}: <span id="node-state" class="${cls("state", nodeState(n))}">${esc(nodeState(n))}</span></h1>` +
      table(["Id", "Pool", "Capacity", "Free", "Labels", "Last heard"],
        [`<tr><td>${esc(n.node)}</td><td>${esc(n.pool)}</td><td>${esc(n.capacity)}</td><td>${esc(n.free || "none")}</td>` +
         `<td>${esc(labels || "–")}</td><td>${(n.silent_ms / 1000).toFixed(1)} s ago</td></tr>`]) +
      `<h2>Running here <span class="muted">(${tasks.length} task${tasks.length === 1 ? "" : "s"})</span></h2>` +
      table(["Task", "User", "Class", "Resources"], tasks, "node-tasks");
  }
  const rows = body.map(n => `<tr><td>${nodeLink(n.name)}</td><td>${esc(n.pool)}</td>` +
    `<td class="${cls("state", nodeState(n))}">${esc(nodeState(n))}</td><td>${esc(n.capacity)}</td>` +
    `<td>${esc(n.free || "none")}</td><td class="num">${(n.silent_ms / 1000).toFixed(1)} s</td></tr>`);
  return `<h1>Nodes</h1>` + table(["Name", "Pool", "State", "Capacity", "Free", "#Last heard"], rows, "nodes");
}

/// The view the URL asks for: [name for the menu, function drawing it].
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  switch (parts[0]) {
    case "pools": return ["pools", pools];
    case "queue": return ["queue", queue];
    case "jobs": return ["jobs", () => jobs(parts[1] === "after" ? parts[2] : "")];
    case "job": return ["jobs", () => job(parts[1])];
    case "nodes": return ["nodes", () => nodes("")];
    case "node": return ["nodes", () => nodes(parts[1])];
    default: return ["overview", overview];
  }
}

async function refresh() {
  if (busy) return;
  busy = true;
  const hash = location.hash;
  const [name, draw] = route();
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.view === name);
  const problem = document.getElementById("problem");
  try {
    const html = await draw();
    // A click meanwhile asked for another view: that one draws next.
    if (location.hash === hash) view.innerHTML = html;
    problem.hidden = true;
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.ready = name;
  } catch (e) {
    problem.textContent = "Cannot read the cluster: " + e.message;
    problem.hidden = false;
  } finally {
    busy = false;
  }
}

window.addEventListener("hashchange", () => { placementsBefore = null; refresh(); });
refresh();
setInterval(refresh, POLL_MS);
