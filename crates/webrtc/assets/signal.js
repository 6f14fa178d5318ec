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

// The pixel formats whose first plane is the decoded luma, as a VideoFrame gives them.
const CG_YUV = ["I420", "I420A", "I422", "I444", "NV12"];

// The luma of the picture `video` shows, or of its top-left `part(width, height)` ({ width,
// height }; the whole picture without it), as { luma (rows packed), w, h, width (the whole
// picture's), via }; null when nothing is shown. The luma is the decoded one itself where the
// browser hands the frame over in a YUV layout (WebCodecs: only the part is copied out, no
// colour conversion, `via` "yuv"); otherwise it is taken back from the RGB a canvas gives,
// with BT.601's limited-range weights (the matrix a WebRTC stream without colour information
// is shown with), which costs the RGB's rounding (`via` "rgb"). The frame is taken before
// the first await, so the picture read is the one shown when this is called.
async function cgLuma(video, canvas, part) {
  if (typeof VideoFrame === "function") {
    let frame = null;
    try {
      frame = new VideoFrame(video);
      const vr = frame.visibleRect;
      if (CG_YUV.includes(frame.format) && vr.x % 2 === 0 && vr.y % 2 === 0) {
        const want = part ? part(vr.width, vr.height) : vr;
        // Chroma is subsampled: the copied rectangle starts and ends on even pixels.
        const even = (v, max) => Math.min(2 * Math.ceil(v / 2), max - (max % 2));
        const rect = { x: vr.x, y: vr.y, width: even(want.width, vr.width), height: even(want.height, vr.height) };
        const buf = new Uint8Array(frame.allocationSize({ rect }));
        const [y] = await frame.copyTo(buf, { rect });
        const luma = new Uint8Array(rect.width * rect.height);
        for (let row = 0; row < rect.height; row++) {
          const from = y.offset + row * y.stride;
          luma.set(buf.subarray(from, from + rect.width), row * rect.width);
        }
        return { luma, w: rect.width, h: rect.height, width: vr.width, via: "yuv" };
      }
    } catch (e) {
      // No YUV frame from this browser or this picture: the canvas serves.
    } finally {
      if (frame) frame.close();
    }
  }
  const width = video.videoWidth, height = video.videoHeight;
  if (!width || !height) return null;
  const want = part ? part(width, height) : { width, height };
  const w = Math.min(Math.ceil(want.width), width), h = Math.min(Math.ceil(want.height), height);
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.drawImage(video, 0, 0, w, h, 0, 0, w, h);
  const px = ctx.getImageData(0, 0, w, h).data;
  const luma = new Uint8Array(w * h);
  for (let i = 0, j = 0; j < luma.length; i += 4, j++) {
    luma[j] = (16.5 + (65.481 * px[i] + 128.553 * px[i + 1] + 24.966 * px[i + 2]) / 255) | 0;
  }
  return { luma, w, h, width, via: "rgb" };
}

// The part of a `width` × `height` picture the stamp covers: three rows of 32 cells, each
// width/80 pixels.
function cgStampBand(width, height) {
  return { width: Math.min(32 * width / 80, width), height: Math.min(3 * width / 80, height) };
}

// The stamp `cg-send --stamp` draws into each picture's top-left corner, read from the luma
// `p` of its band (`cgLuma` with `cgStampBand`) as cg-media's `Stamp::read` reads it: three
// rows of 32 cells, each width/80 pixels, most significant bit first — the frame number, the
// low 32 bits of the Unix time in ms when the picture was made, and a check word (frame ^
// time ^ 0x5a5aa5a5); a cell is 1 where the mean of its middle half is above the midpoint of
// black (16) and white (235). Returns { frame, wallMs } or null (no stamp, or misread).
function cgDecodeStamp(p) {
  if (!p) return null;
  const cell = p.width / 80;
  if (cell < 2 || 3 * cell > p.h + 1) return null;
  const middle = (i) => {
    const start = Math.round((i + 0.25) * cell);
    return [start, Math.max(Math.round((i + 0.75) * cell), start + 1)];
  };
  const words = [0, 0, 0];
  for (let r = 0; r < 3; r++) {
    const [y0, y1] = middle(r);
    for (let b = 0; b < 32; b++) {
      const [x0, x1] = middle(b);
      let sum = 0, n = 0;
      for (let y = y0; y < Math.min(y1, p.h); y++) {
        for (let x = x0; x < Math.min(x1, p.w); x++) {
          sum += p.luma[y * p.w + x];
          n++;
        }
      }
      words[r] = ((words[r] << 1) | (n > 0 && sum > 125 * n ? 1 : 0)) >>> 0;
    }
  }
  if (((words[0] ^ words[1] ^ 0x5a5aa5a5) >>> 0) !== words[2]) return null;
  return { frame: words[0], wallMs: words[1] };
}

// Glass to glass on the page: for each picture shown, the time from its making (the stamp's
// wall clock) to its expected display (requestVideoFrameCallback), on this host's clock, and
// where the browser says its last packet arrived (`receiveTime`), the part before it (the
// sender's stages and the network) and after it (jitter buffer, decode, display).
// Returns a function giving, once a second, a "cg-stamp" record of the pictures since the
// last call: how many were stamped, the latency's median and maximum (ms), the medians of its
// two parts (null where the browser gives no receive time), how many pictures showed no
// readable stamp, and how the last stamp was read ("yuv" or "rgb", see `cgLuma`).
function cgStampClock(video) {
  const canvas = document.createElement("canvas");
  let ages = [], arrived = [], after = [], unread = 0, last = -1, via = null;
  const median = (v) => (v.sort((a, b) => a - b), v.length ? v[Math.floor(v.length / 2)] : null);
  const onFrame = (_now, meta) => {
    video.requestVideoFrameCallback(onFrame);
    cgLuma(video, canvas, cgStampBand).then((p) => {
      via = p ? p.via : via;
      const s = cgDecodeStamp(p);
      if (!s) {
        unread++;
      } else if (s.frame !== last) {
        last = s.frame;
        const wall = (t) => Math.floor(performance.timeOrigin + t) >>> 0;
        const shown = wall(meta.expectedDisplayTime);
        const age = (shown - s.wallMs) >>> 0;
        if (age < 60000) {
          ages.push(age);
          if (meta.receiveTime > 0) {
            const received = wall(meta.receiveTime);
            arrived.push(((received - s.wallMs) | 0));
            after.push(((shown - received) | 0));
          }
        }
      }
    });
  };
  if ("requestVideoFrameCallback" in HTMLVideoElement.prototype) {
    video.requestVideoFrameCallback(onFrame);
  }
  return () => {
    ages.sort((a, b) => a - b);
    const rec = {
      type: "cg-stamp", id: "cg-stamp", frames: ages.length, unread, via,
      g2gMs: ages.length ? ages[Math.floor(ages.length / 2)] : null,
      g2gMaxMs: ages.length ? ages[ages.length - 1] : null,
      arrivedMs: median(arrived), afterArrivalMs: median(after),
    };
    ages = [];
    arrived = [];
    after = [];
    unread = 0;
    return [rec];
  };
}

// Picture quality on the page: up to `perSecond` times a second, the picture just shown
// (requestVideoFrameCallback) is posted as its luma plane (`cgLuma`), at its decoded size,
// to the session's /picture; the sender reads its stamp and scores it against the source
// picture the stamp names (PSNR, dB). Returns a function giving, once a second, a
// "cg-quality" record: the scores that came back since the last call, the pictures the
// sender could not score (no readable stamp), those skipped (a post still out, or the sender
// busy), and how the last luma was taken ("yuv" or "rgb"). Stops posting when the sender does
// not score pictures (404).
function cgPictureScorer(video, resource, perSecond) {
  const canvas = document.createElement("canvas");
  let scores = [], unread = 0, skipped = 0, inFlight = false, off = !(perSecond > 0), last = -1e9;
  let via = null;
  const post = async () => {
    inFlight = true;
    try {
      const p = await cgLuma(video, canvas);
      if (!p) return;
      via = p.via;
      const res = await fetch(`${resource}/picture?width=${p.w}&height=${p.h}`, {
        method: "POST",
        headers: { "Content-Type": "application/octet-stream" },
        body: p.luma,
      });
      if (res.ok) scores.push((await res.json()).psnr_db);
      else if (res.status === 404) off = true;
      else if (res.status === 422) unread++;
      else skipped++;
    } catch (e) {
      skipped++;
    } finally {
      inFlight = false;
    }
  };
  const onFrame = (now) => {
    if (!off && now - last >= 1000 / perSecond && video.videoWidth && video.videoHeight) {
      last = now;
      if (inFlight) skipped++;
      else post();
    }
    video.requestVideoFrameCallback(onFrame);
  };
  if (!off && "requestVideoFrameCallback" in HTMLVideoElement.prototype) {
    video.requestVideoFrameCallback(onFrame);
  }
  return () => {
    const rec = { type: "cg-quality", id: "cg-quality", scores, unread, skipped, via };
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
