"use strict";
// The session page: totals, the per-request chart, a request's window, and the transcript.
// Everything shown comes from the console's read-only JSON routes; text is set with textContent.
(() => {
  const sid = document.body.dataset.session;
  const api = "/api/s/" + encodeURIComponent(sid);
  const POLL_MS = 1000;
  const rows = new Map(); // llm.req seq -> row
  const verdicts = new Map(); // llm.req seq -> diagnosis (once every request was replayed)
  let lastSeq = 0;
  let firstShown = null; // lowest seq in the transcript

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  };
  const pct = (x) => (x === null || x === undefined ? "unknown" : Math.round(x * 100) + "%");
  const num = (x) => (x === null || x === undefined ? "—" : Number(x).toLocaleString("en-US"));
  // a cost: "unknown" when no reply has a price, a lower bound when some lack one
  const usd = (x, unknown, replies) => replies && unknown >= replies ? "unknown" :
    (unknown ? "at least " : "") + "$" + Number(x).toFixed(4) + (unknown ? ` (${unknown} without a price or count)` : "");

  // A diagnosis in words (the server sends data: kind, causes, tokens; `nodwyn cache` words it alike).
  const MIN_CACHEABLE = 1024;
  const IDLE_WORTH_SAYING = 60; // seconds; stats.diagnosis.IDLE_WORTH_SAYING (docs/adr/0297)
  // "6 min 12 s" from seconds (`nodwyn cache` words it alike: cli.stats.duration)
  const duration = (seconds) => {
    const s = Math.floor(seconds);
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min` + (s % 60 ? ` ${s % 60} s` : "");
    const m = Math.floor((s % 3600) / 60);
    return `${Math.floor(s / 3600)} h` + (m ? ` ${m} min` : "");
  };
  const lifetime = (s) => s % 3600 === 0 ? `${s / 3600}-hour` : s % 60 === 0 ? `${s / 60}-minute` : `${s}-second`;
  const idleWords = (d) => {
    if (d.idle_seconds === null || d.idle_seconds === undefined || d.idle_seconds < IDLE_WORTH_SAYING) return "";
    let text = `after ${duration(d.idle_seconds)} idle`;
    if (d.past_lifetime && d.lifetime_seconds !== null && d.lifetime_seconds !== undefined) {
      text += `, past the ${lifetime(d.lifetime_seconds)} lifetime asked for`;
    }
    return text;
  };
  // The provider's own diagnosis beside ours (docs/adr/0312; `nodwyn cache` words it alike).
  const providerWords = (d) => {
    if (!d.provider_asked) return "";
    let said = d.provider_reason || "no divergence";
    if (d.provider_missed !== null && d.provider_missed !== undefined) {
      said += ` (~${Number(d.provider_missed).toLocaleString("en-US")} tokens missed)`;
    }
    return `; provider: ${said}` + (d.disagrees ? "; DISAGREES with the provider" : "");
  };
  function describe(d) {
    return ours(d) + providerWords(d);
  }
  function ours(d) {
    const n = (x) => Number(x || 0).toLocaleString("en-US");
    const read = (cached, prompt, expected) => {
      if (prompt === null || prompt === undefined) return "; no usage reported";
      if (cached === null || cached === undefined) return `; ${n(prompt)} prompt tokens, the provider reports no cache reads`;
      return `; read ${n(cached)} of ${n(prompt)} prompt tokens from the cache` +
        (expected !== null && expected !== undefined ? ` (~${n(expected)} expected)` : "");
    };
    const short = () => `read ${n(d.cached_tokens)} of ~${n(d.expected)} cached tokens (shortfall ${n(d.shortfall)})`;
    if (d.kind === "unverified") return `${d.unrebuilt === d.seq ? "request" : "predecessor"} ${d.unrebuilt}: ${d.error}`;
    if (d.kind === "first") return `first request of context '${d.ctx}'` + read(d.cached_tokens, d.prompt_tokens);
    if (d.kind === "moved") {
      const why = d.causes.length ? d.causes.map((c) => `${c.kind} at seq ${c.seq}`).join(", ") : "no cause recorded (a window bug)";
      let text = `moved by us: ${why}; first difference at ${d.first_difference}`;
      if (d.held) text += " (the prompt held, but each model has its own cache)";
      else if (d.expected !== null && d.expected !== undefined) text += `; ~${n(d.expected)} tokens in common`;
      if (d.shortfall !== null && d.shortfall !== undefined) text += "; and " + short();
      return text;
    }
    const head = `request ${d.predecessor} + ${d.appended} message${d.appended !== 1 ? "s" : ""}`;
    if (d.kind === "appended") {
      return `appended: ${head}` + read(d.cached_tokens, d.prompt_tokens, d.expected) +
        (d.uncacheable ? `; a prefix under ${n(MIN_CACHEABLE)} tokens is not cached by most providers` : "");
    }
    if (d.kind === "no cache ask") {
      return `no cache ask: our prefix held (${head}) but ${short()}, and the provider wrote nothing to its cache: ` +
        "the request asked for no caching, and a server that caches only when asked (Anthropic's) caches nothing " +
        `then; set cache_control = "ephemeral" in [models.${d.model}]`;
    }
    let text = `server miss: our prefix held (${head}) but ${short()}`;
    if (d.matched !== null && d.matched !== undefined) text += `; the hit matched request ${d.matched}'s prompt (a replica that served it)`;
    const idle = idleWords(d);
    if (idle) text += "; " + idle;
    const resumed = d.causes.filter((c) => c.kind === "resume");
    if (resumed.length) text += `; after the resume at seq ${resumed[resumed.length - 1].seq} (the provider's cache may have expired)`;
    return text;
  }

  async function getJSON(url) {
    const r = await fetch(url);
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
    return body;
  }

  // -- totals ------------------------------------------------------------------------------
  function renderTotals(t) {
    const a = t.all;
    const tbody = $("totals").querySelector("tbody");
    tbody.replaceChildren();
    const add = (key, label, value, note) => {
      const tr = el("tr");
      tr.dataset.row = key;
      tr.append(el("th", null, label), el("td", "value", value), el("td", "muted", note || ""));
      tbody.append(tr);
    };
    add("rate", "Token cache rate", pct(a.rate),
      a.rate === null ? "no reply reported a cache read with a positive prompt" :
        `${num(a.rate_cached)} of ${num(a.rate_prompt)} prompt tokens over ${a.rate_replies} replies`);
    add("last-rate", "Last request cache rate", pct(t.last_rate), t.last_reply ? `reply at seq ${t.last_reply}` : "");
    add("requests", "Requests / replies", `${num(a.requests)} / ${num(a.replies)}`, `${t.turns} turn${t.turns === 1 ? "" : "s"}`);
    add("prompt", "Prompt tokens", num(a.prompt_tokens), a.no_usage ? `${a.no_usage} replies reported no usage` : "");
    add("cached", "Cached tokens", num(a.cached_tokens), "");
    add("uncached", "Uncached prefill tokens", num(a.uncached_tokens), "prompt − cached, where both are reported");
    add("writes", "Cache writes", num(a.cache_write_tokens), a.writes_reported ? `${a.writes_reported} replies reported writes` : "not reported");
    add("output", "Output tokens", num(a.output_tokens), a.reasoning_tokens ? `${num(a.reasoning_tokens)} reasoning` : "");
    add("cost", "Cost", usd(a.cost_usd, a.cost_unknown, a.replies),
      t.prices_from === "recipe" ? "at the prices recorded in the session's recipe" :
        "at config.toml's prices (this session's recipe records none)");
    const fill = (id, items, key) => {
      const body = $(id).querySelector("tbody");
      body.replaceChildren();
      for (const s of items) {
        const tr = el("tr");
        for (const v of [s[key], num(s.requests), num(s.prompt_tokens), num(s.cached_tokens), pct(s.rate), usd(s.cost_usd, s.cost_unknown, s.replies)])
          tr.append(el("td", null, v));
        body.append(tr);
      }
    };
    fill("by-model", t.by_model, "model");
    fill("by-turn", t.by_turn, "turn");
    const problems = $("problems");
    problems.replaceChildren(...t.problems.map((p) => el("li", null, p)));
  }

  // -- chart -------------------------------------------------------------------------------
  const SVG = "http://www.w3.org/2000/svg";
  const svg = (tag, attrs) => {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  };
  const pad2 = (n) => String(n).padStart(2, "0");
  const clock = (d) => `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  const day = (d) => `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  function niceStep(max, count) {
    const raw = max / Math.max(count, 1);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
    return 10 * mag;
  }
  const short = (n) => n >= 1e6 ? +(n / 1e6).toFixed(1) + "M" : n >= 1e3 ? +(n / 1e3).toFixed(1) + "k" : String(n);
  let selected = null; // the request whose window is shown
  function renderChart() {
    const list = [...rows.values()].sort((x, y) => x.seq - y.seq);
    const box = $("chart");
    const W = Math.max(320, box.clientWidth - 12); // the panel's inner width
    const H = 200, top = 16, left = 48, right = 8, bottom = 34;
    const plotW = W - left - right;
    const peak = Math.max(1, ...list.map((r) => (r.usage && r.usage.prompt_tokens) || 0));
    const step = niceStep(peak, 4);
    const max = Math.ceil(peak / step) * step;
    const slot = plotW / Math.max(list.length, 1);
    const gap = slot > 8 ? Math.min(4, slot * 0.2) : slot > 3 ? 1 : 0;
    const bar = Math.max(1, Math.min(48, slot - gap));
    const root = svg("svg", { width: W, height: top + H + bottom, viewBox: `0 0 ${W} ${top + H + bottom}`,
      role: "img", "aria-label": "cached and uncached prompt tokens per request, over time" });
    const y = (v) => top + H - (v / max) * H;
    for (let v = 0; v <= max + 1e-9; v += step) {  // the token axis: ticks and grid lines
      root.append(svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), class: v ? "grid" : "axis" }));
      const label = svg("text", { x: left - 5, y: y(v) + 3, class: "tick y" });
      label.textContent = short(v);
      root.append(label);
    }
    root.append(svg("line", { x1: left, x2: left, y1: top, y2: top + H, class: "axis" }));
    // the time axis: a tick every ~110 px at the request under it, labelled with its clock time
    // (and the date when it changes); bars stay one per request so each can be clicked
    const every = Math.max(1, Math.round(110 / slot));
    let lastDay = null, lastLabel = null;
    list.forEach((r, i) => {
      if (i % every || !r.t) return;
      const d = new Date(r.t);
      if (isNaN(d) || clock(d) === lastLabel) return; // requests within one second share a tick
      lastLabel = clock(d);
      const cx = left + i * slot + slot / 2;
      const g = svg("g", { class: "xtick", "data-seq": r.seq, "data-t": r.t });
      g.append(svg("line", { x1: cx, x2: cx, y1: top + H, y2: top + H + 4, class: "axis" }));
      const label = svg("text", { x: cx, y: top + H + 15, class: "tick x" });
      label.textContent = clock(d);
      g.append(label);
      if (day(d) !== lastDay) {
        const dl = svg("text", { x: cx, y: top + H + 27, class: "tick x date" });
        dl.textContent = day(d);
        g.append(dl);
        lastDay = day(d);
      }
      root.append(g);
    });
    list.forEach((r, i) => {
      const x = left + i * slot + (slot - bar) / 2;
      const g = svg("g", { class: "bar" + (r.seq === selected ? " selected" : ""), "data-seq": r.seq });
      const u = r.usage || {};
      const prompt = u.prompt_tokens || 0;
      const h = (prompt / max) * H;
      const v = verdicts.get(r.seq);
      // markers come from the diagnosis (exact replay), never from a guess: until a request's
      // verdict is in, a cache drop shows as a suspected miss and a recorded cause as pending
      const miss = v ? v.kind === "server miss" || v.kind === "no cache ask" : r.drop;
      const moved = v ? v.kind === "moved" && !r.trim : false;
      const pending = !v && !r.drop && r.causes.length && !r.trim;
      const title = svg("title");
      const when = r.t ? new Date(r.t) : null;
      title.textContent = `request ${r.seq} (${r.ctx}, ${r.model})` + (when && !isNaN(when) ? ` at ${clock(when)}` : "") + ": " +
        (u.prompt_tokens === null || u.prompt_tokens === undefined ? "no usage" :
          `${num(u.cached_tokens)} cached of ${num(u.prompt_tokens)} prompt tokens (${pct(r.rate)})`) +
        (r.trim ? "; trim point" : "") + (r.causes.length ? "; causes: " + r.causes.map((c) => `${c.kind} at ${c.seq}`).join(", ") : "") +
        (v ? "\n" + describe(v) : r.drop ? "; suspected server miss (not yet diagnosed)" : pending ? "; not yet diagnosed" : "");
      g.append(title);
      g.append(svg("rect", { x: left + i * slot, y: top, width: slot, height: H, class: "hit" }));
      if (u.cached_tokens === null || u.cached_tokens === undefined) {
        g.append(svg("rect", { x, y: top + H - h, width: bar, height: h, class: "unknown" }));
      } else {
        const c = (Math.min(u.cached_tokens, prompt) / max) * H;
        g.append(svg("rect", { x, y: top + H - h, width: bar, height: h - c, class: "uncached" }));
        g.append(svg("rect", { x, y: top + H - c, width: bar, height: c, class: "cached" }));
      }
      if (r.trim) g.append(svg("line", { x1: left + i * slot, x2: left + i * slot, y1: top - 12, y2: top + H, class: "trim" }));
      else if (moved) {
        const m = svg("text", { x: x + bar / 2, y: top - 3, class: "moved" });
        m.textContent = "◆";
        g.append(m);
      } else if (pending) {
        const m = svg("text", { x: x + bar / 2, y: top - 3, class: "pending" });
        m.textContent = "…";
        g.append(m);
      }
      const mw = Math.max(Math.min(bar, 12), 6);
      if (miss) g.append(svg("path", { d: `M${x + bar / 2 - mw / 2} ${top - 12} h${mw} l-${mw / 2} 9 z`, class: "miss" + (v ? "" : " suspected") }));
      g.addEventListener("click", () => openWindow(r.seq, true));
      root.append(g);
    });
    $("chart-scale").textContent = list.length ? `bar height: prompt tokens (tallest ${num(peak)}); one bar per request, in the order sent` : "no requests yet";
    box.replaceChildren(root);
    renderTable();
    box.dataset.bars = String(list.length);
  }

  // -- the request table (built only while it is open) --------------------------------------
  function renderTable() {
    if (!$("requests-details").open) return;
    const body = $("requests").querySelector("tbody");
    const list = [...rows.values()].sort((x, y) => x.seq - y.seq);
    body.replaceChildren(...list.map((r) => {
      const u = r.usage || {};
      const v = verdicts.get(r.seq);
      const notes = v && ((v.kind !== "appended" && v.kind !== "first") || v.provider_asked) ? describe(v) :
        [r.trim ? "trim" : "", ...r.causes.filter((c) => c.kind !== "trim").map((c) => `${c.kind} at ${c.seq}`),
          r.drop ? "suspected server miss" : ""].filter(Boolean).join("; ");
      const tr = el("tr", "clickable");
      tr.dataset.seq = r.seq;
      for (const c of [r.seq, r.ctx, r.model, r.turn, num(u.prompt_tokens), num(u.cached_tokens), pct(r.rate),
        num(u.cache_write_tokens), num(u.output_tokens), notes]) tr.append(el("td", null, c));
      if (v && v.disagrees) tr.classList.add("disagrees"); // the provider says otherwise (ADR 0312)
      tr.addEventListener("click", () => openWindow(r.seq, true));
      return tr;
    }));
  }

  // -- window ------------------------------------------------------------------------------
  function setAddress(seq, push) {
    const url = new URL(location.href);
    if (seq === null) url.searchParams.delete("request"); else url.searchParams.set("request", String(seq));
    if (url.href === location.href) return;
    if (push) history.pushState({ request: seq }, "", url); else history.replaceState({ request: seq }, "", url);
  }
  async function openWindow(seq, push) {
    selected = seq;
    setAddress(seq, push);
    for (const g of document.querySelectorAll("#chart g.bar")) g.classList.toggle("selected", Number(g.dataset.seq) === seq);
    const section = $("window-section");
    section.hidden = false;
    $("window-seq").textContent = String(seq);
    $("window-verify").textContent = "replaying…";
    $("window-diagnosis").textContent = "";
    $("window-body").replaceChildren();
    let w;
    try {
      w = await getJSON(`${api}/window/${seq}`);
    } catch (e) {
      $("window-verify").className = "bad";
      $("window-verify").textContent = "error: " + e.message;
      return;
    }
    const v = $("window-verify");
    v.className = w.verified ? "ok" : "bad";
    v.textContent = w.verified ? `verified: rebuilt from the log, digest ${w.digest} matches the recorded one` :
      `not verified: ${w.error}`;
    $("window-diagnosis").textContent = describe(w.diagnosis);
    $("window-diagnosis").dataset.kind = w.diagnosis.kind;
    if (!w.request) return;
    const body = $("window-body");
    const sys = el("details", "msg system");
    const chars = w.request.system.text.length + (w.request.system.more || 0);
    sys.append(el("summary", "role", `system prompt (${num(chars)} characters)`),
      el("pre", null, w.request.system.text + more(w.request.system)));
    body.append(sys, el("div", "msg tools role", "tools: " + (w.request.tools.join(", ") || "none")));
    w.request.messages.forEach((m, i) => body.append(message(m, i)));
    section.scrollIntoView({ block: "start" });
  }
  const more = (c) => (c.more ? `\n… ${num(c.more)} more characters` : "");
  function message(m, i) {
    const d = el("div", "msg " + m.role);
    d.append(el("div", "role", `${i} · ${m.role}${m.name ? " · " + m.name : ""}`));
    if (m.thinking && m.thinking.text) d.append(thinking(m.thinking));
    if (m.text) d.append(el("pre", null, m.text + more(m)));
    for (const c of m.calls || []) d.append(el("pre", "call", `→ ${c.name}(${c.text}${more(c)})`));
    if (m.blocks) d.append(el("div", "muted", `${m.blocks} reasoning block(s) sent back, not shown`));
    if (m.images) d.append(el("div", "muted", `${m.images} image(s)`));
    return d;
  }
  function thinking(t) {
    const det = el("details", "thinking");
    det.append(el("summary", null, "thinking"), el("pre", null, t.text + more(t)));
    return det;
  }

  // -- diagnosis of every request ---------------------------------------------------------
  const AUTO_DIAGNOSE = 300; // sessions up to this many requests are diagnosed on open
  const KIND_LABEL = { "moved": "moved by us", "server miss": "server miss", "no cache ask": "no cache ask", "unverified": "unverified" };
  let diagnosedUpTo = null; // seq up to which every answered request has its verdict
  // "· the provider disagrees on N" when any verdict carries the provider's own diagnosis (ADR 0312)
  const disagreements = () => {
    const asked = [...verdicts.values()].filter((v) => v.provider_asked);
    return asked.length ? ` · the provider disagrees on ${asked.filter((v) => v.disagrees).length}` : "";
  };
  function renderDiagnosis() {
    const order = ["first", "appended", "moved", "server miss", "no cache ask", "unverified"];
    const counts = {};
    for (const v of verdicts.values()) counts[v.kind] = (counts[v.kind] || 0) + 1;
    $("diagnosis-summary").textContent = order.filter((k) => counts[k])
      .map((k) => `${counts[k]} ${KIND_LABEL[k] || k}`).join(" · ") + disagreements() + (diagnosedUpTo ? ` (as of seq ${diagnosedUpTo}, updated live)` : "");
    const list = $("diagnosis");
    list.replaceChildren();
    for (const x of [...verdicts.values()].sort((a, b) => a.seq - b.seq)) {
      if ((x.kind === "first" || x.kind === "appended") && !x.disagrees) continue;
      const li = el("li", "diag " + x.kind.replace(/ /g, "-") + (x.disagrees ? " disagrees" : ""));
      li.dataset.seq = x.seq;
      li.append(el("span", "seq", `request ${x.seq}`), document.createTextNode(" "), el("span", null, describe(x)));
      li.addEventListener("click", () => openWindow(x.seq, true));
      list.append(li);
    }
    if (!list.childElementCount && verdicts.size) list.append(el("li", "muted", "every request extended its predecessor and was served from the cache"));
  }
  async function diagnoseAll() {
    $("diagnose").disabled = true;
    $("diagnosis-summary").textContent = "replaying every request…";
    let d;
    try {
      d = await getJSON(`${api}/diagnosis`);
    } catch (e) {
      $("diagnosis-summary").textContent = "error: " + e.message;
      $("diagnose").disabled = false;
      return;
    }
    for (const x of d.requests) verdicts.set(x.seq, x);
    diagnosedUpTo = Math.max(diagnosedUpTo || 0, d.last_seq);
    renderChart();
    renderDiagnosis();
    $("diagnose").disabled = false;
    document.body.dataset.diagnosed = String(diagnosedUpTo);
  }
  let diagnosing = false;
  async function diagnoseNew() {
    // requests answered since the last verdicts: each replayed with its predecessor on the server
    if (diagnosedUpTo === null || diagnosing || lastSeq <= diagnosedUpTo) return;
    diagnosing = true;
    try {
      const d = await getJSON(`${api}/diagnosis?after=${diagnosedUpTo}`);
      for (const x of d.requests) verdicts.set(x.seq, x);
      diagnosedUpTo = d.last_seq;
      if (d.requests.length) { renderChart(); renderDiagnosis(); }
      document.body.dataset.diagnosed = String(diagnosedUpTo);
    } finally {
      diagnosing = false;
    }
  }

  // -- transcript --------------------------------------------------------------------------
  function entry(e) {
    const d = el("div", "ev " + e.kind.replace(".", "-"));
    d.dataset.seq = e.seq;
    const when = e.t ? new Date(e.t) : null;
    d.append(el("div", "head", `${e.seq} · ${e.label || e.kind}${e.ctx !== "main" ? " · " + e.ctx : ""}${e.name ? " · " + e.name : ""}` +
      `${e.sandbox ? " · sandbox " + e.sandbox : ""}` +
      (when && !isNaN(when) ? " · " + clock(when) : "")));
    if (e.sentence) d.append(el("div", "sentence", e.sentence));
    if (e.kind === "llm.resp") {
      if (e.thinking && e.thinking.text) d.append(thinking(e.thinking));
      if (e.text) d.append(el("pre", "reply", e.text + more(e)));
      for (const c of e.calls) d.append(el("pre", "call", `→ ${c.name}(${c.text}${more(c)})`));
      if (e.blocks) d.append(el("div", "muted", `${e.blocks} reasoning block(s) kept in the log, not shown`));
      const u = e.usage;
      if (u) d.append(el("div", "muted", `prompt ${num(u.prompt_tokens)} · cached ${num(u.cached_tokens)} · output ${num(u.output_tokens)}`));
    } else if (e.kind === "llm.req") {
      d.append(el("div", "muted", `request to ${e.model}, ~${num(e.estimate)} tokens${e.trim ? " · trim point" : ""}${e.elided ? ` · ${e.elided} elided` : ""}`));
      d.classList.add("clickable");
      d.addEventListener("click", () => openWindow(e.seq, true));
    } else if (e.text !== undefined && e.text !== null) {
      d.append(el("pre", null, e.text + more(e)));
    }
    return d;
  }
  async function loadOlder() {
    if (firstShown === null || firstShown <= 1) return;
    const page = await getJSON(`${api}/events?before=${firstShown}`);
    const t = $("transcript");
    t.prepend(...page.events.map(entry));
    firstShown = page.first;
    $("older").hidden = firstShown <= 1;
  }
  async function loadTail() {
    const page = await getJSON(`${api}/events`);
    $("transcript").replaceChildren(...page.events.map(entry));
    firstShown = page.events.length ? page.first : page.last_seq + 1;
    $("older").hidden = firstShown <= 1;
  }

  // -- polling -----------------------------------------------------------------------------
  async function poll() {
    const s = await getJSON(`${api}/poll?after=${lastSeq}`);
    const first = lastSeq === 0;
    for (const r of s.rows) rows.set(r.seq, r);
    if (first || s.rows.length) renderChart();
    if (first || s.last_seq !== lastSeq) renderTotals(s.totals);
    if (!first && s.reload_transcript) await loadTail();
    else if (s.events.length) {
      const t = $("transcript");
      const stick = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
      t.append(...s.events.map(entry));
      if (stick) window.scrollTo(0, document.body.scrollHeight);
    }
    $("subtitle").textContent = [s.title, s.model ? "model " + s.model : ""].filter(Boolean).join(" · ");
    lastSeq = s.last_seq;
    $("live").textContent = `${num(lastSeq)} events · updated live`;
    document.body.dataset.lastSeq = String(lastSeq);
    if (!first && s.rows.some((r) => r.resp !== null)) await diagnoseNew();
  }
  async function loop() {
    try {
      await poll();
    } catch (e) {
      $("live").textContent = "not updating: " + e.message;
    }
    setTimeout(loop, POLL_MS);
  }

  $("older").addEventListener("click", loadOlder);
  $("diagnose").addEventListener("click", diagnoseAll);
  $("requests-details").addEventListener("toggle", renderTable);
  const wanted = () => {
    const raw = new URL(location.href).searchParams.get("request");
    return raw !== null && /^\d+$/.test(raw) ? Number(raw) : null;
  };
  window.addEventListener("popstate", () => {
    const seq = wanted();
    if (seq === null) { selected = null; $("window-section").hidden = true; renderChart(); }
    else openWindow(seq, false);
  });
  let resizing = null;
  new ResizeObserver(() => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { if (rows.size) renderChart(); }, 60);
  }).observe($("chart"));
  (async () => {
    try {
      await Promise.all([poll(), loadTail()]);
      document.body.dataset.ready = "1";
      const seq = wanted();
      if (seq !== null) openWindow(seq, false);
      if (rows.size && rows.size <= AUTO_DIAGNOSE) await diagnoseAll();
      else diagnosedUpTo = lastSeq; // the backlog waits for the button; new requests are diagnosed as they come
    } catch (e) {
      $("live").textContent = "error: " + e.message;
      document.body.dataset.ready = "error";
    }
    setTimeout(loop, POLL_MS);
  })();
})();
