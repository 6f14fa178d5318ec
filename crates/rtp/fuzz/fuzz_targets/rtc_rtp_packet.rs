//! rtc-rtp's RTP header and packet parsers (RFC 3550 fixed header, CSRCs, RFC 8285 one- and
//! two-byte extensions, padding), plus its extension payload parsers we rely on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtc_rtp::extension::abs_send_time_extension::AbsSendTimeExtension;
use rtc_rtp::extension::transport_cc_extension::TransportCcExtension;
use rtc_rtp::{Header, Packet};
use rtc_shared::marshal::{Marshal, Unmarshal};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::unmarshal(&mut &data[..]) {
        let _ = h.marshal();
        for id in h.get_extension_ids() {
            let _ = h.get_extension(id);
        }
    }
    if let Ok(p) = Packet::unmarshal(&mut &data[..]) {
        let _ = p.marshal();
    }
    let _ = AbsSendTimeExtension::unmarshal(&mut &data[..]);
    let _ = TransportCcExtension::unmarshal(&mut &data[..]);
});
