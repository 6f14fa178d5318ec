//! WHEP over real HTTP on loopback: a host answering with cg's peer, cg's client posting an
//! offer, the resource deleted; and every refusal with its status.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use cg_webrtc::http::{self, SessionHost};
use cg_webrtc::{Error, PeerConfig, WebRtcPeer};

/// Answers offers with cg's peer and keeps the peers by id.
#[derive(Clone, Default)]
struct Host {
    peers: Arc<Mutex<HashMap<String, WebRtcPeer>>>,
    reports: Arc<Mutex<Vec<(String, Bytes)>>>,
}

impl SessionHost for Host {
    async fn create(&self, offer: String) -> Result<(String, String), Error> {
        let cfg = PeerConfig::new("127.0.0.1:40000".parse().unwrap());
        let (peer, answer) = WebRtcPeer::answer(&cfg, &offer, Instant::now())?;
        let mut peers = self.peers.lock().unwrap();
        let id = format!("v{}", peers.len() + 1);
        peers.insert(id.clone(), peer);
        Ok((id, answer))
    }
    async fn delete(&self, id: String) -> bool {
        self.peers.lock().unwrap().remove(&id).is_some()
    }
    async fn report(&self, id: String, json: Bytes) -> bool {
        let known = self.peers.lock().unwrap().contains_key(&id);
        if known {
            self.reports.lock().unwrap().push((id, json));
        }
        known
    }
}

async fn serve(host: Host) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = http::router("/whep", "<html>viewer</html>", host);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// A raw request: (status, headers, body).
async fn raw(method: &str, url: &str, ctype: Option<&str>, body: &str) -> (u16, String, String) {
    use http_body_util::BodyExt;
    let mut b = axum::http::Request::builder().method(method).uri(url);
    if let Some(c) = ctype {
        b = b.header("content-type", c);
    }
    let req = b
        .body(http_body_util::Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<Bytes>>();
    let res = client.request(req).await.unwrap();
    let status = res.status().as_u16();
    let headers = format!("{:?}", res.headers());
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_whep_client_gets_an_answer_and_deletes_its_session() {
    let host = Host::default();
    let base = serve(host.clone()).await;
    let now = Instant::now();
    let (mut viewer, offer) =
        WebRtcPeer::offer(&PeerConfig::new("127.0.0.1:40001".parse().unwrap()), now).unwrap();
    let (resource, answer) = http::post_offer(&format!("{base}/whep"), offer)
        .await
        .unwrap();
    assert_eq!(resource, format!("{base}/whep/v1"));
    viewer.accept_answer(&answer, now).unwrap();
    assert!(viewer.negotiated().is_some());

    let (status, _, _) = raw(
        "POST",
        &format!("{resource}/stats"),
        Some("application/json"),
        "{}",
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(host.reports.lock().unwrap().len(), 1);

    http::delete(&resource).await.unwrap();
    assert!(host.peers.lock().unwrap().is_empty());
    let again = http::delete(&resource).await.unwrap_err();
    assert!(again.to_string().contains("404"), "{again}");
}

#[tokio::test]
async fn refusals_say_why_and_leave_nothing_behind() {
    let host = Host::default();
    let base = serve(host.clone()).await;
    let whep = format!("{base}/whep");
    let (s, _, body) = raw("POST", &whep, Some("text/plain"), "v=0").await;
    assert_eq!((s, body.trim()), (415, "the offer must be application/sdp"));
    let (s, _, body) = raw("POST", &whep, Some("application/sdp"), "garbage").await;
    assert_eq!(s, 400, "{body}");
    assert!(body.starts_with("malformed SDP"), "{body}");
    let audio = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=rtpmap:111 opus/48000/2\r\n";
    let (s, _, body) = raw("POST", &whep, Some("application/sdp"), audio).await;
    assert_eq!((s, body.trim()), (422, "the offer has no video section"));
    let (s, _, _) = raw("POST", &whep, Some("application/sdp"), &"a".repeat(70_000)).await;
    assert_eq!(s, 413);
    let (s, _, _) = raw(
        "PATCH",
        &format!("{whep}/v1"),
        Some("application/trickle-ice-sdpfrag"),
        "",
    )
    .await;
    assert_eq!(s, 405, "no trickle");
    assert!(host.peers.lock().unwrap().is_empty());

    let (s, headers, _) = raw("OPTIONS", &whep, None, "").await;
    assert_eq!(s, 204);
    for h in [
        "access-control-allow-origin",
        "access-control-allow-methods",
        "accept-post",
    ] {
        assert!(headers.contains(h), "{h} in {headers}");
    }
    // A page's trickle PATCH passes its pre-flight, so the page sees the 405 above rather
    // than a network error.
    let (s, headers, _) = raw("OPTIONS", &format!("{whep}/v1"), None, "").await;
    assert_eq!(s, 204);
    assert!(
        headers.contains("PATCH") && headers.contains("If-Match"),
        "{headers}"
    );
    let (s, _, page) = raw("GET", &base, None, "").await;
    assert_eq!((s, page.as_str()), (200, "<html>viewer</html>"));
    let (s, headers, js) = raw("GET", &format!("{base}/cg-webrtc.js"), None, "").await;
    assert_eq!(s, 200);
    assert!(headers.contains("text/javascript") && js.contains("async function cgSignal"));
}

#[tokio::test]
async fn a_posted_picture_must_be_a_whole_luma_plane_and_a_host_that_does_not_score_says_so() {
    let base = serve(Host::default()).await;
    let at = |q: &str| format!("{base}/whep/v1/picture?{q}");
    let octets = Some("application/octet-stream");
    let (s, _, body) = raw("POST", &at("width=4&height=2"), octets, "abcdefgh").await;
    assert_eq!(
        (s, body.trim()),
        (404, "this server does not score pictures")
    );
    let (s, _, body) = raw("POST", &at("width=4&height=2"), octets, "abcdefg").await;
    assert_eq!(s, 400);
    assert_eq!(body.trim(), "a 4x2 luma plane is 8 bytes, the body has 7");
    let (s, _, body) = raw("POST", &at("width=4"), octets, "abcdefgh").await;
    assert_eq!(s, 400, "{body}");
    // Past a UHD plane, refused before the host sees it; the offer limit does not apply.
    let big = "a".repeat(http::MAX_PICTURE + 1);
    let (s, _, _) = raw("POST", &at("width=3841&height=2160"), octets, &big).await;
    assert_eq!(s, 413);
    let fits = "a".repeat(1280 * 720);
    let (s, _, _) = raw("POST", &at("width=1280&height=720"), octets, &fits).await;
    assert_eq!(s, 404, "a 720p plane passes the size checks");
}
