//! Splitting an Annex-B byte stream (ITU-T H.264 Annex B) into NAL units.

/// The 4-byte start code written in front of every NAL unit on output.
pub const START_CODE: [u8; 4] = [0, 0, 0, 1];

/// The NAL units of an Annex-B stream (3- or 4-byte start codes), without start codes.
/// A stream without any start code is taken as one NAL unit.
pub fn nal_units(stream: &[u8]) -> Vec<(usize, usize)> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= stream.len() {
        if stream[i] == 0 && stream[i + 1] == 0 && stream[i + 2] == 1 {
            starts.push((i, i + 3));
            i += 3;
        } else {
            i += 1;
        }
    }
    if starts.is_empty() {
        return if stream.is_empty() {
            Vec::new()
        } else {
            vec![(0, stream.len())]
        };
    }
    let mut out = Vec::with_capacity(starts.len());
    for (k, &(_, data_start)) in starts.iter().enumerate() {
        let end = match starts.get(k + 1) {
            Some(&(next_code, _)) => {
                // A 4-byte start code's leading zero belongs to the code, not the NAL.
                let mut e = next_code;
                while e > data_start && stream[e - 1] == 0 {
                    e -= 1;
                }
                e
            }
            None => stream.len(),
        };
        if end > data_start {
            out.push((data_start, end));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_three_and_four_byte_start_codes() {
        let s = [
            0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5,
        ];
        let n: Vec<&[u8]> = nal_units(&s).into_iter().map(|(a, b)| &s[a..b]).collect();
        assert_eq!(
            n,
            vec![&[0x67, 1, 2][..], &[0x68, 3][..], &[0x65, 4, 5][..]]
        );
    }

    #[test]
    fn raw_nal_without_start_code_is_one_unit() {
        assert_eq!(nal_units(&[0x65, 1, 2]), vec![(0, 3)]);
        assert!(nal_units(&[]).is_empty());
    }
}
