//! Faults to inject in tests of code that drives an [`Encoder`] (feature `testing`; cg-media's
//! own tests have it without).

use std::sync::Mutex;
use std::sync::mpsc::{Sender, channel};

use gstreamer as gst;
use gstreamer::prelude::*;

use crate::Encoder;
use crate::sync::lock;

/// A wedged encoder: its pipeline's streaming thread blocked inside the encoder element (in
/// a probe on its output) while the source goes on capturing, as in a pipeline stuck in
/// renegotiation. Dropping it lets the thread go.
#[derive(Debug)]
pub struct Wedge {
    _release: Sender<()>,
}

/// Wedges the running pipeline of `encoder`; `None` for the model encoder, or while a
/// restart has no pipeline running.
pub fn wedge(encoder: &Encoder) -> Option<Wedge> {
    let element = encoder.element()?;
    let (release, held) = channel::<()>();
    let held = Mutex::new(held);
    element
        .static_pad("src")?
        .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            // Blocks until the sender is dropped.
            let _ = lock(&held).recv();
            gst::PadProbeReturn::Ok
        })?;
    Some(Wedge { _release: release })
}
