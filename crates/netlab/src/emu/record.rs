//! The bottleneck's per-packet log: fixed-size binary records, streamed to disk by the
//! forwarder and read back by the metrics.
//!
//! One record per link event that metrics need (dequeue with sojourn, delivery with latency,
//! drop with reason, CE mark, the delivery of a duplicate's copy): 32 bytes little-endian, so a 100 Mb/s run writes ≈ 0.5 MB/s.

use std::io::{self, Read, Write};
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Record size in bytes.
pub const RECORD_LEN: usize = 32;

/// What a record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Left the queue; `dur` = sojourn time.
    Dequeued = 1,
    /// Delivered to the far side; `dur` = arrival-to-delivery latency.
    Delivered = 2,
    /// Dropped (`reason` = drop reason code).
    Dropped = 3,
    /// CE-marked.
    Marked = 4,
    /// Delivered a second time: the copy of a duplicated packet (`dur` = latency). Not a
    /// delivery of the link's capacity: duplication happens after serialisation.
    Copy = 5,
}

/// Which bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Forward (senders → receivers).
    Forward = 0,
    /// Reverse.
    Reverse = 1,
}

/// Drop reason codes in records.
pub mod reason {
    /// Random loss.
    pub const RANDOM: u8 = 1;
    /// Queue full (tail drop).
    pub const QUEUE_FULL: u8 = 2;
    /// AQM (CoDel, PIE, DualPI2…) or FQ overflow.
    pub const AQM: u8 = 3;
    /// Anything else.
    pub const OTHER: u8 = 4;
}

/// One log record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// Nanoseconds since the run's t0.
    pub t_ns: u64,
    /// Sojourn (Dequeued) or latency (Delivered), ns.
    pub dur_ns: u64,
    /// Flow index in the flow table.
    pub flow: u16,
    /// Bytes (IP packet).
    pub size: u16,
    /// Event kind.
    pub kind: Kind,
    /// Drop reason (0 unless Dropped).
    pub reason: u8,
    /// Direction.
    pub dir: Dir,
}

impl Record {
    /// Encodes into 32 bytes.
    pub fn encode(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        b[0..8].copy_from_slice(&self.t_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.dur_ns.to_le_bytes());
        b[16..18].copy_from_slice(&self.flow.to_le_bytes());
        b[18..20].copy_from_slice(&self.size.to_le_bytes());
        b[20] = self.kind as u8;
        b[21] = self.reason;
        b[22] = self.dir as u8;
        b
    }

    /// Decodes; `None` for an unknown kind or direction.
    pub fn decode(b: &[u8; RECORD_LEN]) -> Option<Record> {
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let kind = match b[20] {
            1 => Kind::Dequeued,
            2 => Kind::Delivered,
            3 => Kind::Dropped,
            4 => Kind::Marked,
            5 => Kind::Copy,
            _ => return None,
        };
        let dir = match b[22] {
            0 => Dir::Forward,
            1 => Dir::Reverse,
            _ => return None,
        };
        Some(Record {
            t_ns: u64_at(0),
            dur_ns: u64_at(8),
            flow: u16::from_le_bytes([b[16], b[17]]),
            size: u16::from_le_bytes([b[18], b[19]]),
            kind,
            reason: b[21],
            dir,
        })
    }

    /// Appends to a writer.
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.encode())
    }
}

/// Reads every record of a log (a truncated last record is ignored).
pub fn read_all(r: &mut impl Read) -> io::Result<Vec<Record>> {
    let mut out = Vec::new();
    let mut buf = [0u8; RECORD_LEN];
    loop {
        match r.read_exact(&mut buf) {
            Ok(()) => {
                if let Some(rec) = Record::decode(&buf) {
                    out.push(rec);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(out),
            Err(e) => return Err(e),
        }
    }
}

/// One entry of the forwarder's flow table (`flows.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowEntry {
    /// Index used in records.
    pub index: u16,
    /// Direction it was seen in.
    pub dir: Dir,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol.
    pub proto: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = Record {
            t_ns: 123_456_789_012,
            dur_ns: 300_000_000,
            flow: 7,
            size: 1500,
            kind: Kind::Dropped,
            reason: reason::QUEUE_FULL,
            dir: Dir::Reverse,
        };
        let mut v = Vec::new();
        r.write_to(&mut v).unwrap();
        r.write_to(&mut v).unwrap();
        v.extend_from_slice(&[1, 2, 3]); // truncated tail
        let back = read_all(&mut v.as_slice()).unwrap();
        assert_eq!(back, vec![r, r]);
    }

    #[test]
    fn unknown_kinds_are_skipped() {
        let mut b = [0u8; RECORD_LEN];
        b[20] = 99;
        assert!(Record::decode(&b).is_none());
    }
}
