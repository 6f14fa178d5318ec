// WHEP/WHIP signalling and the viewer's own measurements for cg's pages (served by
// cg-webrtc's router at /cg-webrtc.js).

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

// Every second: `show(stats)` with pc.getStats() as an array (and what `extra()`, if given,
// returns appended), and, when `report` is set, the whole array posted to the session's
// /stats (the server writes it to its reports file).
function cgPoll(pc, resource, report, show, extra) {
  setInterval(async () => {
    const all = [];
    (await pc.getStats()).forEach((s) => all.push(s));
    if (extra) all.push(...extra());
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

// The stamp `cg-send --stamp` draws into each picture's top-left corner: three rows of 32
// cells, each width/80 pixels, white for 1, most significant bit first — the frame number,
// the low 32 bits of the Unix time in ms when the picture was made, and a check word
// (frame ^ time ^ 0x5a5aa5a5). Returns { frame, wallMs } or null (no stamp, or misread).
function cgReadStamp(video, canvas) {
  const w = video.videoWidth, h = video.videoHeight;
  const cell = w / 80;
  if (!w || !h || cell < 2 || 3 * cell > h) return null;
  // The band scaled to 4 pixels a cell; each cell read at its middle 2 × 2.
  canvas.width = 128;
  canvas.height = 12;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.drawImage(video, 0, 0, 32 * cell, 3 * cell, 0, 0, 128, 12);
  const px = ctx.getImageData(0, 0, 128, 12).data;
  const words = [0, 0, 0];
  for (let r = 0; r < 3; r++) {
    for (let b = 0; b < 32; b++) {
      let sum = 0;
      for (const [dx, dy] of [[1, 1], [2, 1], [1, 2], [2, 2]]) {
        const i = ((r * 4 + dy) * 128 + b * 4 + dx) * 4;
        sum += px[i] + px[i + 1] + px[i + 2];
      }
      words[r] = ((words[r] << 1) | (sum > 4 * 3 * 128 ? 1 : 0)) >>> 0;
    }
  }
  if (((words[0] ^ words[1] ^ 0x5a5aa5a5) >>> 0) !== words[2]) return null;
  return { frame: words[0], wallMs: words[1] };
}

// Glass to glass on the page: for each picture shown, the time from its making (the stamp's
// wall clock) to its expected display (requestVideoFrameCallback), on this host's clock.
// Returns a function giving, once a second, a "cg-stamp" record of the pictures since the
// last call: how many were stamped, the latency's median and maximum (ms), and how many
// pictures showed no readable stamp.
function cgStampClock(video) {
  const canvas = document.createElement("canvas");
  let ages = [], unread = 0, last = -1;
  const onFrame = (_now, meta) => {
    const s = cgReadStamp(video, canvas);
    if (!s) {
      unread++;
    } else if (s.frame !== last) {
      last = s.frame;
      const shown = Math.floor(performance.timeOrigin + meta.expectedDisplayTime) >>> 0;
      const age = (shown - s.wallMs) >>> 0;
      if (age < 60000) ages.push(age);
    }
    video.requestVideoFrameCallback(onFrame);
  };
  if ("requestVideoFrameCallback" in HTMLVideoElement.prototype) {
    video.requestVideoFrameCallback(onFrame);
  }
  return () => {
    ages.sort((a, b) => a - b);
    const rec = {
      type: "cg-stamp", id: "cg-stamp", frames: ages.length, unread,
      g2gMs: ages.length ? ages[Math.floor(ages.length / 2)] : null,
      g2gMaxMs: ages.length ? ages[ages.length - 1] : null,
    };
    ages = [];
    unread = 0;
    return [rec];
  };
}

// Picture quality on the page: up to `perSecond` times a second, the picture just shown
// (requestVideoFrameCallback) is drawn at its decoded size, turned back into luma and posted
// to the session's /picture; the sender reads its stamp and scores it against the source
// picture the stamp names (PSNR, dB). The luma undoes the browser's YUV → RGB conversion with
// BT.601's limited-range weights, the matrix a WebRTC stream without colour information is
// shown with. Returns a function giving, once a second, a "cg-quality" record: the scores
// that came back since the last call, the pictures the sender could not score (no readable
// stamp) and those skipped (a post still out, or the sender busy). Stops posting when the
// sender does not score pictures (404).
function cgPictureScorer(video, resource, perSecond) {
  const canvas = document.createElement("canvas");
  let scores = [], unread = 0, skipped = 0, inFlight = false, off = !(perSecond > 0), last = -1e9;
  const post = (w, h) => {
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    canvas.width = w;
    canvas.height = h;
    ctx.drawImage(video, 0, 0, w, h);
    const px = ctx.getImageData(0, 0, w, h).data;
    const luma = new Uint8Array(w * h);
    for (let i = 0, j = 0; j < luma.length; i += 4, j++) {
      luma[j] = (16.5 + (65.481 * px[i] + 128.553 * px[i + 1] + 24.966 * px[i + 2]) / 255) | 0;
    }
    inFlight = true;
    fetch(`${resource}/picture?width=${w}&height=${h}`, {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream" },
      body: luma,
    }).then(async (res) => {
      if (res.ok) scores.push((await res.json()).psnr_db);
      else if (res.status === 404) off = true;
      else if (res.status === 422) unread++;
      else skipped++;
    }).catch(() => { skipped++; }).finally(() => { inFlight = false; });
  };
  const onFrame = (now) => {
    if (!off && now - last >= 1000 / perSecond && video.videoWidth && video.videoHeight) {
      last = now;
      if (inFlight) skipped++;
      else post(video.videoWidth, video.videoHeight);
    }
    video.requestVideoFrameCallback(onFrame);
  };
  if (!off && "requestVideoFrameCallback" in HTMLVideoElement.prototype) {
    video.requestVideoFrameCallback(onFrame);
  }
  return () => {
    const rec = { type: "cg-quality", id: "cg-quality", scores, unread, skipped };
    scores = [];
    unread = 0;
    skipped = 0;
    return [rec];
  };
}

// Rows of name → value into `table`.
function cgTable(table, rows) {
  table.innerHTML = Object.entries(rows).map(([k, v]) => `<tr><td>${k}</td><td>${v ?? ""}</td></tr>`).join("");
}
