//! The raw-video front of the sender pipeline: source → (convert, scale, rate) → I420 caps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;

use crate::file_source::FrameReader;
use crate::stamp::Stamp;
use crate::synth::SyntheticVideo;
use crate::{EncoderConfig, Error, SourceConfig, TestPattern, props};

/// [`TestPattern::FaintZonePlate`]: second-order phase terms (`kx2`, `ky2`, in 1/256 cycle
/// per pixel at the picture edge), so the rings reach 0.12 cycle per pixel at the edges.
const FAINT_RINGS: i32 = 30;
/// Phase drift per frame in 1/256 cycle (`kt`).
const FAINT_DRIFT: i32 = 6;
/// The two colours the rings swing between (ARGB): grey 140 and grey 116.
const FAINT_LIGHT: u32 = 0xff8c_8c8c;
const FAINT_DARK: u32 = 0xff74_7474;

/// The source part of a sender pipeline, added to the pipeline and linked up to `tail`.
pub(crate) struct BuiltSource {
    /// Last element, a capsfilter; its src pad carries I420 at the configured frame rate and
    /// the size set with [`Self::set_size`] (scaled from the source's own size).
    pub tail: gst::Element,
    /// Thread feeding an `appsrc`, for files and in-process pictures (started by
    /// [`Self::start`]).
    feeder: Option<Feeder>,
}

/// Where an `appsrc`'s frames come from.
enum Frames {
    File(FrameReader),
    Synthetic(SyntheticVideo),
}

impl Frames {
    fn next(&mut self) -> Result<Option<Vec<u8>>, Error> {
        match self {
            Frames::File(r) => r.next_frame(),
            Frames::Synthetic(g) => {
                let mut v = Vec::with_capacity(g.frame_bytes());
                g.next_frame(&mut v);
                Ok(Some(v))
            }
        }
    }
}

struct Feeder {
    appsrc: gst_app::AppSrc,
    frames: Option<Frames>,
    /// Frame interval of the frames.
    interval: Duration,
    /// Size of the frames, when a [`Stamp`] is drawn into each.
    stamp: Option<(usize, usize)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BuiltSource {
    /// Adds and links the source elements for `config` into `pipeline`, the scaler's output
    /// at `width`×`height`.
    pub fn build(
        pipeline: &gst::Pipeline,
        config: &EncoderConfig,
        (width, height): (u32, u32),
    ) -> Result<Self, Error> {
        let raw_caps = |w: u32, h: u32| {
            gst::Caps::builder("video/x-raw")
                .field("format", "I420")
                .field("width", i32::try_from(w).unwrap_or(1280))
                .field("height", i32::try_from(h).unwrap_or(720))
                .field(
                    "framerate",
                    gst::Fraction::new(i32::try_from(config.frame_rate).unwrap_or(30), 1),
                )
                .build()
        };
        let capsfilter = props::make("capsfilter", "core")?;
        props::set(&capsfilter, "caps", raw_caps(width, height))?;
        let appsrc = |caps: &gst::Caps| {
            gst_app::AppSrc::builder()
                .caps(caps)
                .is_live(true)
                .format(gst::Format::Time)
                .do_timestamp(true)
                .max_buffers(4)
                .block(false)
                .build()
        };

        let mut feeder = None;
        let mut chain: Vec<gst::Element> = Vec::new();
        match &config.source {
            SourceConfig::TestPattern { pattern }
                if let Some(g) = SyntheticVideo::new(
                    *pattern,
                    config.width,
                    config.height,
                    f64::from(config.frame_rate),
                ) =>
            {
                let appsrc = appsrc(&raw_caps(config.width, config.height));
                chain.push(appsrc.clone().upcast());
                chain.push(props::make("videoscale", "gstreamer1.0-plugins-base")?);
                feeder = Some(Feeder {
                    appsrc,
                    frames: Some(Frames::Synthetic(g)),
                    interval: config.frame_interval(),
                    stamp: config
                        .stamp
                        .then_some((config.width as usize, config.height as usize)),
                    stop: Arc::new(AtomicBool::new(false)),
                    thread: None,
                });
            }
            SourceConfig::TestPattern { pattern } => {
                let src = props::make("videotestsrc", "gstreamer1.0-plugins-base")?;
                props::set(&src, "is-live", true)?;
                match pattern {
                    TestPattern::MovingZonePlate => {
                        props::set_str(&src, "pattern", "zone-plate")?;
                        props::set(&src, "kx2", 20i32)?;
                        props::set(&src, "ky2", 20i32)?;
                        props::set(&src, "kt", 1i32)?;
                    }
                    TestPattern::FaintZonePlate => {
                        props::set_str(&src, "pattern", "zone-plate")?;
                        props::set(&src, "kx2", FAINT_RINGS)?;
                        props::set(&src, "ky2", FAINT_RINGS)?;
                        props::set(&src, "kt", FAINT_DRIFT)?;
                        // videotestsrc blends each pixel between these two colours by the
                        // zone plate's value: mid-grey ± 12 of 255.
                        props::set(&src, "foreground-color", FAINT_LIGHT)?;
                        props::set(&src, "background-color", FAINT_DARK)?;
                    }
                    TestPattern::ScrollingSmpte => {
                        props::set_str(&src, "pattern", "smpte")?;
                        props::set(&src, "horizontal-speed", 3i32)?;
                    }
                    TestPattern::Ball => props::set_str(&src, "pattern", "ball")?,
                    TestPattern::Snow | TestPattern::Camera | TestPattern::Game => {
                        props::set_str(&src, "pattern", "snow")?
                    }
                }
                // Drawn at the configured size, scaled to the coded one (the picture stays
                // the same picture when the coded size changes).
                let pin = props::make("capsfilter", "core")?;
                props::set(&pin, "caps", raw_caps(config.width, config.height))?;
                chain.extend([
                    src,
                    pin,
                    props::make("videoscale", "gstreamer1.0-plugins-base")?,
                ]);
            }
            SourceConfig::File {
                path,
                format,
                looping,
            } => {
                let reader = FrameReader::open(path, *format, *looping)?;
                let info = reader.info();
                let caps = gst::Caps::builder("video/x-raw")
                    .field("format", "I420")
                    .field("width", i32::try_from(info.width).unwrap_or(i32::MAX))
                    .field("height", i32::try_from(info.height).unwrap_or(i32::MAX))
                    .field(
                        "framerate",
                        gst::Fraction::new(
                            i32::try_from(info.fps_num).unwrap_or(30),
                            i32::try_from(info.fps_den).unwrap_or(1),
                        ),
                    )
                    .build();
                let appsrc = appsrc(&caps);
                chain.push(appsrc.clone().upcast());
                chain.extend(converters(true, false)?);
                feeder = Some(Feeder {
                    appsrc,
                    frames: Some(Frames::File(reader)),
                    interval: Duration::from_secs_f64(
                        f64::from(info.fps_den) / f64::from(info.fps_num),
                    ),
                    stamp: config
                        .stamp
                        .then_some((info.width as usize, info.height as usize)),
                    stop: Arc::new(AtomicBool::new(false)),
                    thread: None,
                });
            }
            SourceConfig::Screen { display } => {
                let src = props::make("ximagesrc", "gstreamer1.0-plugins-good (ximagesrc)")?;
                props::set(&src, "use-damage", false)?;
                if let Some(d) = display {
                    props::set(&src, "display-name", d.as_str())?;
                }
                chain.push(src);
                chain.extend(converters(false, true)?);
            }
            SourceConfig::Camera { device } => {
                let src = props::make("v4l2src", "gstreamer1.0-plugins-good (video4linux2)")?;
                props::set(&src, "device", device.to_string_lossy().as_ref())?;
                chain.push(src);
                chain.extend(converters(false, true)?);
            }
        }
        if config.stamp && feeder.is_none() {
            return Err(Error::InvalidConfig(
                "the stamp is drawn into synthetic (camera, game) and file sources only".to_owned(),
            ));
        }
        chain.push(capsfilter.clone());
        pipeline.add_many(&chain)?;
        gst::Element::link_many(&chain)?;
        Ok(BuiltSource {
            tail: capsfilter,
            feeder,
        })
    }

    /// Sets the coded size: the scaler in front of `tail` renegotiates on the next frame
    /// (the encoder then re-initialises on the new caps). Only the size changes: the frame
    /// rate stays what the source delivers (a reduced rate is the encoder's input gate's
    /// business; a scaler cannot change it). Callable from any thread.
    pub fn set_size(tail: &gst::Element, width: u32, height: u32) {
        let mut caps = tail.property::<gst::Caps>("caps");
        {
            let caps = caps.make_mut();
            for s in caps.iter_mut() {
                s.set("width", i32::try_from(width).unwrap_or(1280));
                s.set("height", i32::try_from(height).unwrap_or(720));
            }
        }
        tail.set_property("caps", &caps);
    }

    /// Starts the feeder thread, if any (after the pipeline is PLAYING).
    pub fn start(&mut self) -> Result<(), Error> {
        let Some(f) = self.feeder.as_mut() else {
            return Ok(());
        };
        let Some(mut reader) = f.frames.take() else {
            return Ok(());
        };
        let appsrc = f.appsrc.clone();
        let stop = f.stop.clone();
        let interval = f.interval;
        let stamp = f.stamp;
        let thread = std::thread::Builder::new()
            .name("cg-media-feed".to_owned())
            .spawn(move || {
                let mut epoch = Instant::now();
                let mut n: u32 = 0;
                // Source frame number (not reset with the schedule).
                let mut number: u32 = 0;
                while !stop.load(Ordering::Relaxed) {
                    let mut frame = match reader.next() {
                        Ok(Some(frame)) => frame,
                        Ok(None) => {
                            let _ = appsrc.end_of_stream();
                            break;
                        }
                        Err(e) => {
                            gst::element_error!(appsrc, gst::ResourceError::Read, ["{}", e]);
                            break;
                        }
                    };
                    let due = epoch + interval * n;
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    } else if now - due > Duration::from_secs(1) {
                        // Far behind (the host stalled): restart the schedule, do not burst.
                        epoch = now;
                        n = 0;
                    }
                    if let Some((w, h)) = stamp {
                        Stamp::now(number).draw(&mut frame, w, h);
                    }
                    number = number.wrapping_add(1);
                    if appsrc
                        .push_buffer(gst::Buffer::from_mut_slice(frame))
                        .is_err()
                    {
                        break;
                    }
                    n = n.saturating_add(1);
                }
            })
            .map_err(|e| Error::Pipeline(format!("cannot spawn file reader: {e}")))?;
        f.thread = Some(thread);
        Ok(())
    }

    /// Stops the reader thread (the pipeline must be going to NULL).
    pub fn stop(&mut self) {
        if let Some(f) = self.feeder.as_mut() {
            f.stop.store(true, Ordering::Relaxed);
            if let Some(t) = f.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// `videoconvert ! videoscale ! videorate`, for sources whose format is not ours. Live
/// capture (`drop_only`) never gets duplicated frames; a file is rate-converted both ways.
fn converters(already_i420: bool, drop_only: bool) -> Result<Vec<gst::Element>, Error> {
    let mut v = Vec::new();
    if !already_i420 {
        v.push(props::make("videoconvert", "gstreamer1.0-plugins-base")?);
    }
    v.push(props::make("videoscale", "gstreamer1.0-plugins-base")?);
    let rate = props::make("videorate", "gstreamer1.0-plugins-base")?;
    props::set(&rate, "drop-only", drop_only)?;
    v.push(rate);
    Ok(v)
}
