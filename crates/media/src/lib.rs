//! GStreamer encoder and decoder pipelines (work in progress: see issue #8).
