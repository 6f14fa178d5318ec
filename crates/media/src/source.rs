//! The raw-video front of the sender pipeline: source → (convert, scale, rate) → I420 caps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;

use crate::file_source::FrameReader;
use crate::{EncoderConfig, MediaError, SourceConfig, TestPattern, props};

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
    /// Last element; its src pad carries I420 at the configured size and rate.
    pub tail: gst::Element,
    /// Reader thread feeding an `appsrc`, for file sources (started by [`Self::start`]).
    feeder: Option<FileFeeder>,
}

struct FileFeeder {
    appsrc: gst_app::AppSrc,
    reader: Option<FrameReader>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BuiltSource {
    /// Adds and links the source elements for `config` into `pipeline`.
    pub fn build(pipeline: &gst::Pipeline, config: &EncoderConfig) -> Result<Self, MediaError> {
        let raw_caps = gst::Caps::builder("video/x-raw")
            .field("format", "I420")
            .field("width", i32::try_from(config.width).unwrap_or(1280))
            .field("height", i32::try_from(config.height).unwrap_or(720))
            .field(
                "framerate",
                gst::Fraction::new(i32::try_from(config.frame_rate).unwrap_or(30), 1),
            )
            .build();
        let capsfilter = props::make("capsfilter", "core")?;
        props::set(&capsfilter, "caps", &raw_caps)?;

        let mut feeder = None;
        let mut chain: Vec<gst::Element> = Vec::new();
        match &config.source {
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
                    TestPattern::Snow => props::set_str(&src, "pattern", "snow")?,
                }
                chain.push(src);
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
                let appsrc = gst_app::AppSrc::builder()
                    .caps(&caps)
                    .is_live(true)
                    .format(gst::Format::Time)
                    .do_timestamp(true)
                    .max_buffers(4)
                    .block(false)
                    .build();
                chain.push(appsrc.clone().upcast());
                chain.extend(converters(true, false)?);
                feeder = Some(FileFeeder {
                    appsrc,
                    reader: Some(reader),
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
        chain.push(capsfilter.clone());
        pipeline.add_many(&chain)?;
        gst::Element::link_many(&chain)?;
        Ok(BuiltSource {
            tail: capsfilter,
            feeder,
        })
    }

    /// Starts the file reader thread, if any (after the pipeline is PLAYING).
    pub fn start(&mut self) -> Result<(), MediaError> {
        let Some(f) = self.feeder.as_mut() else {
            return Ok(());
        };
        let Some(mut reader) = f.reader.take() else {
            return Ok(());
        };
        let appsrc = f.appsrc.clone();
        let stop = f.stop.clone();
        let info = reader.info();
        let interval = Duration::from_secs_f64(f64::from(info.fps_den) / f64::from(info.fps_num));
        let thread = std::thread::Builder::new()
            .name("cg-media-file".to_owned())
            .spawn(move || {
                let mut epoch = Instant::now();
                let mut n: u32 = 0;
                while !stop.load(Ordering::Relaxed) {
                    let frame = match reader.next_frame() {
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
                    if appsrc
                        .push_buffer(gst::Buffer::from_mut_slice(frame))
                        .is_err()
                    {
                        break;
                    }
                    n = n.saturating_add(1);
                }
            })
            .map_err(|e| MediaError::Pipeline(format!("cannot spawn file reader: {e}")))?;
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
fn converters(already_i420: bool, drop_only: bool) -> Result<Vec<gst::Element>, MediaError> {
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
