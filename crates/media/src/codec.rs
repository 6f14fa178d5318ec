//! Codecs, their caps, and key-frame detection from the bitstream.

pub use cg_types::Codec;

/// What cg-media knows of a [`Codec`]: its GStreamer caps and what its bitstream says.
pub trait MediaCodec {
    /// The GStreamer caps of an encoded access unit as cg-media produces and consumes it.
    fn caps(&self) -> gstreamer::Caps;

    /// Whether `data`, one access unit of this codec, can be decoded without any earlier
    /// frame: a VP8 key frame (RFC 6386 §9.1: frame-tag bit 0 clear and the start code
    /// `9d 01 2a`), an H.264 access unit whose first slice is IDR (NAL type 5 among VCL types
    /// 1–5, H.264 §7.4.1.2), or an H.265 access unit whose first VCL NAL unit is IRAP (types
    /// 16–21 among VCL types 0–31, H.265 §7.4.2.2).
    ///
    /// Works on bytes from the network: never panics, and a truncated or garbage unit is
    /// simply "not a key frame".
    fn is_key_frame(&self, data: &[u8]) -> bool;

    /// The frame's base quantizer, where the bitstream says it cheaply: VP8's `y_ac_qi`
    /// (0–127, [`crate::vp8_base_qp`]); `None` for H.264/H.265 (their QP sits in every
    /// slice header behind Exp-Golomb fields and parameter sets, and x264/NVENC meet their
    /// targets, so the adaptation goes by rate there).
    fn quantizer(&self, data: &[u8]) -> Option<u8>;
}

impl MediaCodec for Codec {
    fn caps(&self) -> gstreamer::Caps {
        match self {
            Codec::Vp8 => gstreamer::Caps::builder("video/x-vp8").build(),
            Codec::H264 => gstreamer::Caps::builder("video/x-h264")
                .field("stream-format", "byte-stream")
                .field("alignment", "au")
                .build(),
            Codec::H265 => gstreamer::Caps::builder("video/x-h265")
                .field("stream-format", "byte-stream")
                .field("alignment", "au")
                .build(),
        }
    }

    fn is_key_frame(&self, data: &[u8]) -> bool {
        match self {
            Codec::Vp8 => vp8_key_frame_size(data).is_some(),
            // All slices of a picture share their type: the first VCL NAL unit decides, so
            // the scan stops after the parameter sets instead of crossing the slice data.
            Codec::H264 => nal_types(data)
                .map(|b| b & 0x1f)
                .find(|t| (1..=5).contains(t))
                .is_some_and(|t| t == 5),
            Codec::H265 => nal_types(data)
                .map(|b| (b >> 1) & 0x3f)
                .find(|&t| t <= 31)
                .is_some_and(|t| (16..=21).contains(&t)),
        }
    }

    fn quantizer(&self, data: &[u8]) -> Option<u8> {
        match self {
            Codec::Vp8 => crate::vp8_base_qp(data),
            Codec::H264 | Codec::H265 => None,
        }
    }
}

/// Width and height coded in a VP8 key-frame header (RFC 6386 §9.1), or `None` if `data` is
/// not a complete key-frame header.
pub fn vp8_key_frame_size(data: &[u8]) -> Option<(u16, u16)> {
    let header = data.get(..10)?;
    if header[0] & 1 != 0 || header[3..6] != [0x9d, 0x01, 0x2a] {
        return None;
    }
    let width = u16::from_le_bytes([header[6], header[7]]) & 0x3fff;
    let height = u16::from_le_bytes([header[8], header[9]]) & 0x3fff;
    Some((width, height))
}

/// The first byte of every NAL unit in an Annex B byte stream (after each `00 00 01`).
fn nal_types(data: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let mut i = 0usize;
    std::iter::from_fn(move || {
        while i + 3 < data.len() {
            if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
                let b = data[i + 3];
                i += 4;
                return Some(b);
            }
            i += 1;
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vp8_key(width: u16, height: u16) -> Vec<u8> {
        let mut v = vec![0x50, 0x2a, 0x00, 0x9d, 0x01, 0x2a];
        v.extend_from_slice(&width.to_le_bytes());
        v.extend_from_slice(&height.to_le_bytes());
        v.extend_from_slice(&[0; 20]);
        v
    }

    #[test]
    fn vp8_key_frame_is_recognised_with_its_size() {
        let k = vp8_key(1280, 720);
        assert!(Codec::Vp8.is_key_frame(&k));
        assert_eq!(vp8_key_frame_size(&k), Some((1280, 720)));
    }

    #[test]
    fn vp8_inter_frame_and_truncated_header_are_not_key_frames() {
        let mut inter = vp8_key(640, 360);
        inter[0] |= 1;
        assert!(!Codec::Vp8.is_key_frame(&inter));
        assert!(!Codec::Vp8.is_key_frame(&vp8_key(640, 360)[..9]));
        assert!(!Codec::Vp8.is_key_frame(&[]));
    }

    #[test]
    fn h264_idr_access_unit_is_a_key_frame_and_p_slice_is_not() {
        let idr = [
            0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x65, 0x88,
        ];
        let p = [0, 0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x41, 0x9a];
        assert!(Codec::H264.is_key_frame(&idr));
        assert!(!Codec::H264.is_key_frame(&p));
        assert!(!Codec::H264.is_key_frame(&[0, 0, 1]));
    }

    #[test]
    fn h265_irap_access_unit_is_a_key_frame_and_trail_is_not() {
        // NAL header type 19 (IDR_W_RADL) = 0x26 0x01; type 1 (TRAIL_R) = 0x02 0x01.
        let idr = [0, 0, 0, 1, 0x40, 0x01, 0x0c, 0, 0, 1, 0x26, 0x01, 0xaf];
        let trail = [0, 0, 0, 1, 0x02, 0x01, 0xd0];
        assert!(Codec::H265.is_key_frame(&idr));
        assert!(!Codec::H265.is_key_frame(&trail));
    }

    #[test]
    fn first_slice_decides_and_later_start_codes_in_slice_data_are_ignored() {
        // A P slice whose payload happens to contain 00 00 01 65.
        let p = [0, 0, 0, 1, 0x41, 0x9a, 0, 0, 1, 0x65, 0x88];
        assert!(!Codec::H264.is_key_frame(&p));
        let sps_only = [0, 0, 0, 1, 0x67, 0x42];
        assert!(!Codec::H264.is_key_frame(&sps_only));
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = cg_types::Rng::new(7);
        for len in 0..200 {
            let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            for c in [Codec::Vp8, Codec::H264, Codec::H265] {
                let _ = c.is_key_frame(&data);
            }
        }
    }
}
