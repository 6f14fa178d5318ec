//! Wireshark decodes our RTP and RTCP without complaint: sessions of every feedback kind (with
//! NACK, PLI, padding, RTX, SR/RR/SDES, REMB, transport-wide CC and RFC 8888) are captured into a
//! pcap (IPv4/UDP headers written here around each datagram, LINKTYPE_RAW) and `tshark` must
//! report no malformed packet and no expert error, while recognising every RTCP type we send.
//! Skipped, with a message, only when `tshark` is not installed.

mod common;

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use cg_cc::{ControllerEvent, FeedbackKind};
use cg_rtp::{
    Codec, FeedbackConfig, ReceiverConfig, ReceiverSession, SenderConfig, SenderSession,
    TransmitKind,
};
use cg_types::{Bitrate, Ecn};
use common::{ConstEstimator, Fixed, Wire, cbr_source};

const SENDER_PORT: u16 = 5004;
const RECEIVER_PORT: u16 = 5006;

fn ipv4_udp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    ecn: Ecn,
    payload: &[u8],
) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut ip = vec![
        0x45,
        ecn.bits(),
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
    ];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]) as u32)
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    let csum = !(sum as u16);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    let ulen = 8 + payload.len();
    ip.extend_from_slice(&sport.to_be_bytes());
    ip.extend_from_slice(&dport.to_be_bytes());
    ip.extend_from_slice(&(ulen as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    ip.extend_from_slice(payload);
    ip
}

fn write_pcap(path: &std::path::Path, packets: &[(Duration, bool, Bytes, Ecn)]) {
    let mut f = std::fs::File::create(path).unwrap();
    // Global header: magic, v2.4, tz 0, sigfigs 0, snaplen 65535, LINKTYPE_RAW (101).
    let mut h = vec![];
    h.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&0i32.to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&101u32.to_le_bytes());
    f.write_all(&h).unwrap();
    let base = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    for (t, fwd, bytes, ecn) in packets {
        let (src, dst, sp, dp) = if *fwd {
            ([10, 0, 0, 1], [10, 0, 0, 2], SENDER_PORT, RECEIVER_PORT)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], RECEIVER_PORT, SENDER_PORT)
        };
        let pkt = ipv4_udp(src, dst, sp, dp, *ecn, bytes);
        let ts = base + *t;
        let mut r = vec![];
        r.extend_from_slice(&(ts.as_secs() as u32).to_le_bytes());
        r.extend_from_slice(&ts.subsec_micros().to_le_bytes());
        r.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        r.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        r.extend_from_slice(&pkt);
        f.write_all(&r).unwrap();
    }
}

/// A short session of `kind` with a dropped packet (NACK + RTX), a PLI and a padding probe.
fn capture(kind: FeedbackKind) -> Vec<(Duration, bool, Bytes, Ecn)> {
    let t0 = Instant::now();
    let (mut cc, _) = Fixed::new(Bitrate::mbps(2), kind);
    cc.events.push_back(ControllerEvent::Probe {
        rate: Bitrate::mbps(1),
        duration: Duration::from_millis(200),
    });
    let tx = SenderSession::new(
        SenderConfig {
            ecn: Ecn::Ect1,
            ..SenderConfig::default()
        },
        cc,
        t0,
    )
    .unwrap();
    let est: Option<Box<dyn cg_cc::ReceiveSideEstimator>> =
        (kind == FeedbackKind::Remb).then(|| {
            Box::new(ConstEstimator {
                rate: Bitrate::kbps(900),
                next: None,
                packets: 0,
                padding: Default::default(),
            }) as _
        });
    let rx = ReceiverSession::new(
        ReceiverConfig {
            feedback: FeedbackConfig::for_kind(kind),
            ..ReceiverConfig::default()
        },
        est,
        t0,
    )
    .unwrap();
    let mut w = Wire::new(tx, rx, t0, Duration::from_millis(10));
    w.capture = true;
    let mut n = 0;
    w.drop_fwd = Box::new(move |t, _| {
        n += u32::from(t.kind == TransmitKind::Media);
        t.kind == TransmitKind::Media && n == 40
    });
    w.run(
        t0 + Duration::from_millis(1500),
        &mut cbr_source(Codec::H264, 30, 4000, 15),
    );
    w.receiver.request_key_frame(w.now);
    w.run(
        w.now + Duration::from_millis(1200),
        &mut cbr_source(Codec::H264, 30, 4000, 15),
    );
    w.captured
        .iter()
        .map(|(t, f, b, e)| (t.duration_since(t0), *f, b.clone(), *e))
        .collect()
}

fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tshark_decodes_our_rtp_and_rtcp_without_malformed_packets() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("SKIPPED: tshark is not installed (apt-get install tshark)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("cg-rtp-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (kind, expect_fmt) in [
        (FeedbackKind::TransportWideCc, "205:15"),
        (FeedbackKind::Rfc8888, "205:11"),
        (FeedbackKind::Remb, "206:15"),
    ] {
        let pkts = capture(kind);
        let path = dir.join(format!("{kind:?}.pcap"));
        write_pcap(&path, &pkts);
        let p = path.to_str().unwrap();
        let decode = ["-o", "rtp.heuristic_rtp:TRUE", "-d", "udp.port==5004,rtp"];
        let mut args = vec!["-r", p];
        args.extend_from_slice(&decode);
        // 1. No malformed packets, no expert errors.
        let mut a = args.clone();
        a.extend_from_slice(&["-Y", "_ws.malformed || _ws.expert.severity >= \"error\""]);
        let bad = tshark(&a);
        assert!(bad.trim().is_empty(), "{kind:?}: tshark flags:\n{bad}");
        // 2. Everything was dissected as RTP or RTCP.
        let mut a = args.clone();
        a.extend_from_slice(&["-T", "fields", "-e", "frame.protocols"]);
        let protos = tshark(&a);
        let lines: Vec<&str> = protos.lines().collect();
        assert_eq!(lines.len(), pkts.len(), "{kind:?}: every packet read");
        for l in &lines {
            assert!(
                l.ends_with(":rtp") || l.contains(":rtcp"),
                "{kind:?}: not RTP/RTCP: {l}"
            );
        }
        // 3. The RTCP types we send are recognised (PT:FMT), and the RTP we send.
        let mut a = args.clone();
        a.extend_from_slice(&[
            "-Y",
            "rtcp",
            "-T",
            "fields",
            "-e",
            "rtcp.pt",
            "-e",
            "rtcp.rtpfb.fmt",
            "-e",
            "rtcp.psfb.fmt",
            "-E",
            "aggregator=;",
        ]);
        let rtcp = tshark(&a);
        let seen = |pt: &str, fmt: &str| {
            rtcp.lines().any(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                f[0].split(';').any(|x| x == pt)
                    && (fmt.is_empty() || f[1..].iter().any(|v| v.split(';').any(|x| x == fmt)))
            })
        };
        let (pt, fmt) = expect_fmt.split_once(':').unwrap();
        assert!(
            seen(pt, fmt),
            "{kind:?}: feedback {expect_fmt} not recognised:\n{rtcp}"
        );
        assert!(seen("200", ""), "{kind:?}: SR");
        assert!(seen("201", ""), "{kind:?}: RR");
        assert!(seen("202", ""), "{kind:?}: SDES");
        assert!(seen("205", "1"), "{kind:?}: generic NACK");
        assert!(seen("206", "1"), "{kind:?}: PLI");
        let rtp = protos.lines().filter(|l| l.ends_with(":rtp")).count();
        eprintln!(
            "{kind:?}: {} datagrams, {rtp} RTP, {} RTCP packets decoded clean",
            pkts.len(),
            rtcp.lines().count()
        );
    }
    // Control: the same check flags a broken RTCP packet (length field past the datagram),
    // so a clean result above means something.
    let pli = cg_rtp::rtcp::build_pli(1, 2).unwrap();
    let mut broken = pli.to_vec();
    broken[3] = 9;
    let path = dir.join("control.pcap");
    write_pcap(
        &path,
        &[(Duration::ZERO, false, Bytes::from(broken), Ecn::NotEct)],
    );
    let bad = tshark(&[
        "-r",
        path.to_str().unwrap(),
        "-o",
        "rtp.heuristic_rtp:TRUE",
        "-d",
        "udp.port==5004,rtp",
        "-Y",
        "_ws.malformed || _ws.expert.severity >= \"error\"",
    ]);
    assert!(!bad.trim().is_empty(), "the control packet must be flagged");
    std::fs::remove_dir_all(&dir).ok();
}
