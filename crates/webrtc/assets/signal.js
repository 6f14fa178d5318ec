// WHEP/WHIP signalling for cg's pages (served by cg-webrtc's router at /cg-webrtc.js).

// Offers `pc`'s local description to `endpoint` (non-trickle: waits up to 2 s for the
// candidates), applies the answer, deletes the session when the page goes away, and returns
// the session's resource URL. Throws with the server's status and reason if refused.
async function cgSignal(pc, endpoint) {
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") return resolve();
    pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") resolve(); };
    setTimeout(resolve, 2000);
  });
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/sdp" },
    body: pc.localDescription.sdp,
  });
  if (res.status !== 201) {
    throw new Error("refused: " + res.status + " " + (await res.text()));
  }
  const resource = new URL(res.headers.get("Location"), new URL(endpoint, location.href)).href;
  await pc.setRemoteDescription({ type: "answer", sdp: await res.text() });
  window.addEventListener("pagehide", () => { fetch(resource, { method: "DELETE", keepalive: true }); });
  return resource;
}

// Every second: `show(stats)` with pc.getStats() as an array, and, when `report` is set, the
// whole array posted to the session's /stats (the server writes it to its reports file).
function cgPoll(pc, resource, report, show) {
  setInterval(async () => {
    const all = [];
    (await pc.getStats()).forEach((s) => all.push(s));
    show(all);
    if (report) {
      fetch(resource + "/stats", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ state: pc.connectionState, stats: all }),
      }).catch(() => {});
    }
  }, 1000);
}

// Rows of name → value into `table`.
function cgTable(table, rows) {
  table.innerHTML = Object.entries(rows).map(([k, v]) => `<tr><td>${k}</td><td>${v ?? ""}</td></tr>`).join("");
}
