"use strict";
// The session list: newest first, searchable (the search is kept in the address as ?q=).
(async () => {
  const body = document.querySelector("#sessions tbody");
  const status = document.getElementById("status");
  const search = document.getElementById("search");
  const count = document.getElementById("count");
  const pad = (n) => String(n).padStart(2, "0");
  const date = (t) => {
    const d = t ? new Date(t) : null;
    if (!d || isNaN(d)) return "";
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  };
  const cost = (s) => {
    if (!s.aggregated) return "open to see";
    if (!s.replies) return "—";
    if (s.cost_unknown === s.replies) return "unknown";
    const usd = "$" + Number(s.cost_usd).toFixed(4);
    return s.cost_unknown ? `at least ${usd}` : usd;
  };
  const rate = (s) => !s.aggregated ? "open to see" : s.rate === null ? "unknown" : Math.round(s.rate * 100) + "%";
  const r = await fetch("/api/sessions");
  const data = await r.json();
  const rows = [];
  for (const s of data.sessions) {
    const tr = document.createElement("tr");
    tr.dataset.id = s.id;
    const a = document.createElement("a");
    a.href = "/s/" + encodeURIComponent(s.id);
    a.textContent = s.error ? s.id : (s.title || "(no message)");
    const link = document.createElement("a");
    link.href = a.href;
    link.textContent = s.id;
    link.className = "sid";
    const cells = [date(s.start), s.error ? "unreadable: " + s.error : a, s.model || "", s.requests ?? "",
      cost(s), rate(s), link];
    cells.forEach((c, i) => {
      const td = document.createElement("td");
      td.dataset.col = ["date", "title", "model", "requests", "cost", "rate", "id"][i];
      if (i >= 3 && i <= 5) td.className = "num";
      if (c instanceof Node) td.appendChild(c); else td.textContent = String(c);
      tr.appendChild(td);
    });
    if (s.start) tr.title = "started " + new Date(s.start).toString();
    const haystack = [s.id, s.title || "", s.model || "", date(s.start)].join("\n").toLowerCase();
    rows.push([tr, haystack]);
    body.appendChild(tr);
  }
  function filter() {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    for (const [tr, text] of rows) {
      const hit = !q || q.split(/\s+/).every((w) => text.includes(w));
      tr.hidden = !hit;
      if (hit) shown++;
    }
    count.textContent = q ? `${shown} of ${rows.length}` : "";
    status.textContent = !rows.length ? "no sessions yet" : !shown ? "no session matches" : "";
    const url = new URL(location.href);
    if (q) url.searchParams.set("q", search.value.trim()); else url.searchParams.delete("q");
    history.replaceState(null, "", url);
  }
  search.value = new URL(location.href).searchParams.get("q") || "";
  search.addEventListener("input", filter);
  filter();
  document.body.dataset.ready = "1";
})();
