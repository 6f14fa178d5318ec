//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong building or driving a cg-media pipeline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `gst::init()` failed (no GStreamer libraries, broken registry).
    #[error("GStreamer could not be initialised: {0}")]
    Init(String),
    /// The encoder name in the configuration is not one cg-media knows.
    #[error("unknown encoder {name:?}; available: {}", available.join(", "))]
    UnknownEncoder {
        /// The name asked for.
        name: String,
        /// Names that would have been accepted and are usable on this machine.
        available: Vec<String>,
    },
    /// The encoder is known but cannot run on this machine (element or hardware missing).
    #[error("encoder {encoder} is not available: {reason}")]
    EncoderNotAvailable {
        /// The GStreamer element name (`nvh264enc`, …).
        encoder: &'static str,
        /// What is missing, in words a user can act on.
        reason: String,
    },
    /// A GStreamer element the pipeline needs is not installed.
    #[error("GStreamer element {element} is missing (install the {plugin} plugin package)")]
    MissingElement {
        /// Element factory name.
        element: &'static str,
        /// Where it usually comes from.
        plugin: &'static str,
    },
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A raw or Y4M input file could not be opened or parsed.
    #[error("video file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Linking elements or changing the pipeline state failed.
    #[error("pipeline {0}")]
    Pipeline(String),
    /// The pipeline posted an error while starting (a source that cannot open, …).
    #[error("pipeline failed to start: {0}")]
    Start(String),
    /// A frame of another codec was pushed into a decoder.
    #[error("decoder for {expected} got a {got} frame")]
    WrongCodec {
        /// The decoder's codec.
        expected: crate::Codec,
        /// The frame's.
        got: crate::Codec,
    },
    /// The handle was stopped or its pipeline is gone.
    #[error("pipeline is stopped")]
    Stopped,
}

impl From<gstreamer::glib::BoolError> for Error {
    fn from(e: gstreamer::glib::BoolError) -> Self {
        Error::Pipeline(e.to_string())
    }
}

impl From<gstreamer::StateChangeError> for Error {
    fn from(e: gstreamer::StateChangeError) -> Self {
        Error::Pipeline(format!("state change failed: {e}"))
    }
}
