"use strict";
(async () => {
  const body = document.querySelector("#sessions tbody");
  const status = document.getElementById("status");
  const r = await fetch("/api/sessions");
  const data = await r.json();
  for (const s of data.sessions) {
    const tr = document.createElement("tr");
    const a = document.createElement("a");
    a.href = "/s/" + encodeURIComponent(s.id);
    a.textContent = s.id;
    const cells = [a, s.error ? "unreadable: " + s.error : (s.title || ""), s.events ?? "",
      !s.aggregated ? "open the session to see it" : s.rate === null ? "unknown" : Math.round(s.rate * 100) + "%"];
    for (const c of cells) {
      const td = document.createElement("td");
      if (c instanceof Node) td.appendChild(c); else td.textContent = String(c);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  status.textContent = data.sessions.length ? "" : "no sessions yet";
  document.body.dataset.ready = "1";
})();
