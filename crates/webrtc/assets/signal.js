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

// The pixel formats whose first plane is the decoded luma, as a VideoFrame gives them.
const CG_YUV = ["I420", "I420A", "I422", "I444", "NV12"];

// The stamp read from the decoded luma itself (WebCodecs: the shown frame as a VideoFrame,
// only the band under the code copied out), as cg-media's `Stamp::read` reads it: the middle
// half of each cell, 1 where its mean is above the midpoint of black (16) and white (235).
// Cheap, and no RGB conversion of the whole picture, so reading the stamp of every picture
// costs the viewer little. Resolves to { frame, wallMs }, to null (no stamp, or misread), or
// to undefined where the browser gives no YUV frame (then the canvas reader serves).
async function cgReadStampYuv(video) {
  if (typeof VideoFrame !== "function") return undefined;
  let frame = null;
  try {
    frame = new VideoFrame(video);
    if (!CG_YUV.includes(frame.format)) return undefined;
    const vr = frame.visibleRect;
    const cell = vr.width / 80;
    if (cell < 2 || 3 * cell > vr.height || vr.x % 2 || vr.y % 2) return null;
    const even = (v, max) => Math.min(2 * Math.ceil(v / 2), max - (max % 2));
    const rect = { x: vr.x, y: vr.y, width: even(32 * cell, vr.width), height: even(3 * cell, vr.height) };
    const buf = new Uint8Array(frame.allocationSize({ rect }));
    const [y] = await frame.copyTo(buf, { rect });
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
        for (let yy = y0; yy < Math.min(y1, rect.height); yy++) {
          for (let xx = x0; xx < Math.min(x1, rect.width); xx++) {
            sum += buf[y.offset + yy * y.stride + xx];
            n++;
          }
        }
        words[r] = ((words[r] << 1) | (n > 0 && sum > 125 * n ? 1 : 0)) >>> 0;
      }
    }
    if (((words[0] ^ words[1] ^ 0x5a5aa5a5) >>> 0) !== words[2]) return null;
    return { frame: words[0], wallMs: words[1] };
  } catch (e) {
    return undefined;
  } finally {
    if (frame) frame.close();
  }
}

// Glass to glass on the page: for each picture shown, the time from its making (the stamp's
// wall clock) to its expected display (requestVideoFrameCallback), on this host's clock.
// The stamp is read from the decoded luma where the browser gives it (`cgReadStampYuv`),
// otherwise from a canvas (`cgReadStamp`). Returns a function giving, once a second, a
// "cg-stamp" record of the pictures since the last call: how many were stamped, the
// latency's median and maximum (ms), how many pictures showed no readable stamp, and how the
// last stamp was read ("yuv" or "rgb").
function cgStampClock(video) {
  const canvas = document.createElement("canvas");
  let ages = [], unread = 0, last = -1, via = null;
  const count = (s, meta) => {
    if (!s) {
      unread++;
    } else if (s.frame !== last) {
      last = s.frame;
      const shown = Math.floor(performance.timeOrigin + meta.expectedDisplayTime) >>> 0;
      const age = (shown - s.wallMs) >>> 0;
      if (age < 60000) ages.push(age);
    }
  };
  const onFrame = (_now, meta) => {
    video.requestVideoFrameCallback(onFrame);
    // The VideoFrame is taken at once, so the picture read is the one this call is for.
    cgReadStampYuv(video).then((s) => {
      if (s === undefined) {
        via = "rgb";
        count(cgReadStamp(video, canvas), meta);
      } else {
        via = "yuv";
        count(s, meta);
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
    };
    ages = [];
    unread = 0;
    return [rec];
  };
}

// Picture quality on the page: up to `perSecond` times a second, the picture just shown
// (requestVideoFrameCallback) is posted as its luma plane, at its decoded size, to the
// session's /picture; the sender reads its stamp and scores it against the source picture
// the stamp names (PSNR, dB). The luma is the decoded one itself where the browser hands the
// frame over in a YUV layout (WebCodecs' VideoFrame.copyTo); otherwise it is taken back from
// the RGB a canvas gives, with BT.601's limited-range weights (the matrix a WebRTC stream
// without colour information is shown with), which costs the RGB's rounding. Returns a
// function giving, once a second, a "cg-quality" record: the scores that came back since the
// last call, the pictures the sender could not score (no readable stamp), those skipped (a
// post still out, or the sender busy), and how the last luma was taken ("yuv" or "rgb").
// Stops posting when the sender does not score pictures (404).
function cgPictureScorer(video, resource, perSecond) {
  const canvas = document.createElement("canvas");
  let scores = [], unread = 0, skipped = 0, inFlight = false, off = !(perSecond > 0), last = -1e9;
  let via = null;
  // The shown picture's luma as { w, h, luma, via }, or null.
  const lumaOfFrame = async () => {
    if (typeof VideoFrame !== "function") return null;
    let frame = null;
    try {
      frame = new VideoFrame(video);
      if (!CG_YUV.includes(frame.format)) return null;
      const r = frame.visibleRect;
      const buf = new Uint8Array(frame.allocationSize());
      const [y] = await frame.copyTo(buf);
      const luma = new Uint8Array(r.width * r.height);
      for (let row = 0; row < r.height; row++) {
        const from = y.offset + (r.y + row) * y.stride + r.x;
        luma.set(buf.subarray(from, from + r.width), row * r.width);
      }
      return { w: r.width, h: r.height, luma, via: "yuv" };
    } catch (e) {
      return null;
    } finally {
      if (frame) frame.close();
    }
  };
  const lumaOfCanvas = () => {
    const w = video.videoWidth, h = video.videoHeight;
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    canvas.width = w;
    canvas.height = h;
    ctx.drawImage(video, 0, 0, w, h);
    const px = ctx.getImageData(0, 0, w, h).data;
    const luma = new Uint8Array(w * h);
    for (let i = 0, j = 0; j < luma.length; i += 4, j++) {
      luma[j] = (16.5 + (65.481 * px[i] + 128.553 * px[i + 1] + 24.966 * px[i + 2]) / 255) | 0;
    }
    return { w, h, luma, via: "rgb" };
  };
  const post = async () => {
    inFlight = true;
    try {
      const p = (await lumaOfFrame()) || lumaOfCanvas();
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
