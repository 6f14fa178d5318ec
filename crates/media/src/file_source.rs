//! Raw I420 and YUV4MPEG2 files read frame by frame, looping, for the file source.
//!
//! Parsing is done here rather than with `filesrc ! y4mdec` because a looping, paced file
//! source with GStreamer elements needs segment seeks on a non-live pipeline; reading frames
//! in a thread and pushing them into a live `appsrc` keeps the sender pipeline live like a
//! camera (see `source.rs`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::{Error, FileFormat};

/// Size and rate of the frames in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVideoInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Frame rate numerator.
    pub fps_num: u32,
    /// Frame rate denominator.
    pub fps_den: u32,
}

impl FileVideoInfo {
    /// Bytes of one I420 frame.
    pub fn frame_bytes(&self) -> usize {
        let (w, h) = (self.width as usize, self.height as usize);
        w * h + 2 * (w.div_ceil(2) * h.div_ceil(2))
    }
}

/// Parses a YUV4MPEG2 stream header line (without its `\n`).
///
/// Accepts the 4:2:0 colour spaces (`C420`, `C420jpeg`, `C420paldv`, `C420mpeg2`, or none,
/// which means 4:2:0); rejects the others, interlacing is ignored.
pub fn parse_y4m_header(line: &str) -> Result<FileVideoInfo, String> {
    let mut tokens = line.split_ascii_whitespace();
    if tokens.next() != Some("YUV4MPEG2") {
        return Err("not a YUV4MPEG2 file (missing signature)".to_owned());
    }
    let (mut width, mut height, mut fps) = (None, None, None);
    for t in tokens {
        let (key, value) = t.split_at(1);
        match key {
            "W" => width = value.parse::<u32>().ok(),
            "H" => height = value.parse::<u32>().ok(),
            "F" => {
                fps = value
                    .split_once(':')
                    .and_then(|(n, d)| Some((n.parse::<u32>().ok()?, d.parse::<u32>().ok()?)))
            }
            "C" if !value.starts_with("420") => {
                return Err(format!("colour space C{value} is not 4:2:0"));
            }
            _ => {}
        }
    }
    let width = width
        .filter(|w| (2..=16384).contains(w))
        .ok_or("missing or bad width W")?;
    let height = height
        .filter(|h| (2..=16384).contains(h))
        .ok_or("missing or bad height H")?;
    let (fps_num, fps_den) = fps
        .filter(|&(n, d)| n > 0 && d > 0)
        .ok_or("missing or bad frame rate F")?;
    Ok(FileVideoInfo {
        width,
        height,
        fps_num,
        fps_den,
    })
}

/// Reads frames from a raw or Y4M file, going back to the first frame at the end when
/// looping.
#[derive(Debug)]
pub struct FrameReader {
    path: PathBuf,
    reader: BufReader<File>,
    info: FileVideoInfo,
    y4m: bool,
    first_frame_offset: u64,
    looping: bool,
}

impl FrameReader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path, format: FileFormat, looping: bool) -> Result<Self, Error> {
        let err = |reason: String| Error::File {
            path: path.to_owned(),
            reason,
        };
        let file = File::open(path).map_err(|e| err(e.to_string()))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let (info, y4m, first_frame_offset) = match format {
            FileFormat::Y4m => {
                let mut line = Vec::new();
                (&mut reader)
                    .take(4096)
                    .read_until(b'\n', &mut line)
                    .map_err(|e| err(e.to_string()))?;
                if line.last() != Some(&b'\n') {
                    return Err(err(
                        "Y4M header line missing or longer than 4 KiB".to_owned()
                    ));
                }
                let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                let info = parse_y4m_header(&text).map_err(err)?;
                (info, true, line.len() as u64)
            }
            FileFormat::RawI420 {
                width,
                height,
                frame_rate,
            } => {
                if width < 2 || height < 2 || frame_rate == 0 {
                    return Err(err(format!("bad raw format {width}x{height}@{frame_rate}")));
                }
                (
                    FileVideoInfo {
                        width,
                        height,
                        fps_num: frame_rate,
                        fps_den: 1,
                    },
                    false,
                    0,
                )
            }
        };
        Ok(FrameReader {
            path: path.to_owned(),
            reader,
            info,
            y4m,
            first_frame_offset,
            looping,
        })
    }

    /// The frames' size and rate.
    pub fn info(&self) -> FileVideoInfo {
        self.info
    }

    /// The next frame's I420 bytes; `Ok(None)` at the end of a file that does not loop.
    /// A truncated last frame is skipped (as a decoder would).
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, Error> {
        // Two attempts: the current position, then (looping) the first frame again.
        for attempt in 0..2 {
            match self.read_one()? {
                Some(frame) => return Ok(Some(frame)),
                None if self.looping && attempt == 0 => {
                    self.reader
                        .seek(SeekFrom::Start(self.first_frame_offset))
                        .map_err(|e| self.err(e.to_string()))?;
                }
                None => break,
            }
        }
        if self.looping {
            return Err(self.err("the file holds no complete frame".to_owned()));
        }
        Ok(None)
    }

    fn read_one(&mut self) -> Result<Option<Vec<u8>>, Error> {
        if self.y4m {
            let mut line = Vec::new();
            let n = (&mut self.reader)
                .take(1024)
                .read_until(b'\n', &mut line)
                .map_err(|e| self.err(e.to_string()))?;
            if n == 0 {
                return Ok(None);
            }
            if !line.starts_with(b"FRAME") || line.last() != Some(&b'\n') {
                return Err(self.err("frame without a FRAME header".to_owned()));
            }
        }
        let mut frame = vec![0u8; self.info.frame_bytes()];
        let mut filled = 0;
        while filled < frame.len() {
            match self.reader.read(&mut frame[filled..]) {
                Ok(0) => return Ok(None),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(e.to_string())),
            }
        }
        Ok(Some(frame))
    }

    fn err(&self, reason: String) -> Error {
        Error::File {
            path: self.path.clone(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn y4m_file(frames: u8) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "YUV4MPEG2 W4 H2 F25:1 Ip A1:1 C420jpeg").unwrap();
        for i in 0..frames {
            f.write_all(b"FRAME\n").unwrap();
            f.write_all(&[i; 12]).unwrap();
        }
        f.flush().unwrap();
        f
    }

    #[test]
    fn y4m_header_gives_size_and_rate() {
        let info = parse_y4m_header("YUV4MPEG2 W1280 H720 F30000:1001 It A1:1 C420mpeg2").unwrap();
        assert_eq!(
            info,
            FileVideoInfo {
                width: 1280,
                height: 720,
                fps_num: 30000,
                fps_den: 1001
            }
        );
        assert_eq!(info.frame_bytes(), 1280 * 720 * 3 / 2);
    }

    #[test]
    fn y4m_header_rejects_non_420_and_missing_fields() {
        assert!(parse_y4m_header("YUV4MPEG2 W4 H2 F25:1 C444").is_err());
        assert!(parse_y4m_header("YUV4MPEG2 W4 F25:1").is_err());
        assert!(parse_y4m_header("YUV4MPEG2 W4 H2 F25:0").is_err());
        assert!(parse_y4m_header("RIFF").is_err());
    }

    #[test]
    fn y4m_reader_loops_back_to_the_first_frame() {
        let f = y4m_file(3);
        let mut r = FrameReader::open(f.path(), FileFormat::Y4m, true).unwrap();
        let firsts: Vec<u8> = (0..7)
            .map(|_| r.next_frame().unwrap().unwrap()[0])
            .collect();
        assert_eq!(firsts, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn non_looping_reader_ends() {
        let f = y4m_file(2);
        let mut r = FrameReader::open(f.path(), FileFormat::Y4m, false).unwrap();
        assert!(r.next_frame().unwrap().is_some());
        assert!(r.next_frame().unwrap().is_some());
        assert!(r.next_frame().unwrap().is_none());
    }

    #[test]
    fn raw_reader_skips_truncated_tail_and_loops() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&[1; 6]).unwrap(); // one 2x2 I420 frame
        f.write_all(&[2; 3]).unwrap(); // half a frame
        f.flush().unwrap();
        let fmt = FileFormat::RawI420 {
            width: 2,
            height: 2,
            frame_rate: 10,
        };
        let mut r = FrameReader::open(f.path(), fmt, true).unwrap();
        assert_eq!(r.next_frame().unwrap().unwrap(), vec![1; 6]);
        assert_eq!(r.next_frame().unwrap().unwrap(), vec![1; 6]);
    }

    #[test]
    fn empty_looping_file_is_an_error_not_a_spin() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let fmt = FileFormat::RawI420 {
            width: 2,
            height: 2,
            frame_rate: 10,
        };
        let mut r = FrameReader::open(f.path(), fmt, true).unwrap();
        assert!(r.next_frame().is_err());
    }
}
