//! WHEP / WHIP signalling over HTTP (feature `http`): the server side as an axum
//! [`Router`] any application can mount, and the client side for cg-recv.
//!
//! The exchange (draft-ietf-wish-whep, RFC 9725 for WHIP, which WHEP copies):
//! - `POST {path}` with `Content-Type: application/sdp` and the offer → `201 Created`,
//!   `Location: {path}/{id}` (the session's resource) and the answer as `application/sdp`. The
//!   answer is complete (its host candidate included): no trickle, so `PATCH` is refused
//!   (`405`).
//! - `DELETE {path}/{id}` ends the session (`200`; `404` if unknown).
//! - `OPTIONS` answers CORS pre-flights (`PATCH` included, so that a trickling page gets its
//!   `405`), and every response carries `Access-Control-Allow-Origin: *` and exposes
//!   `Location`, so a page from anywhere can use it.
//! - `POST {path}/{id}/stats` takes a JSON statistics report from the viewer page (`204`).
//! - `POST {path}/{id}/picture?width=W&height=H` takes a picture the page showed, its luma
//!   plane (`W`×`H` bytes, rows packed), for the application to score against its source:
//!   `200` with the score as JSON; `400` for a body that is not such a plane, `413` past
//!   [`MAX_PICTURE`]; `404` where the application does not score pictures, `422` where the
//!   picture cannot be scored (no readable stamp), `503` while it is busy with earlier ones.
//! - `GET /` serves the application's page (the viewer or the publisher), `GET /cg-webrtc.js`
//!   the signalling script both pages share ([`CLIENT_JS`]).
//!
//! Errors: not `application/sdp` → `415`; an offer over 64 KiB → `413`; malformed SDP → `400`;
//! an offer without video, without a codec cg can send or without the feedback the
//! controller needs → `422`; a session the application cannot host → `503`; each with a
//! one-line text body saying why. Nothing else is disturbed: the failed offer leaves no session behind.

use std::future::Future;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};

use crate::Error;

/// The script of cg's pages (`cgSignal`, `cgPoll`, `cgTable`, and the viewer's own measures
/// `cgStampClock` and `cgPictureScorer`), served at
/// `/cg-webrtc.js` by [`router`].
pub const CLIENT_JS: &str = include_str!("../assets/signal.js");

/// The media type of offers and answers.
pub const SDP: &str = "application/sdp";
/// Largest offer accepted. Chromium's offers are 5–10 KiB.
pub const MAX_OFFER: usize = 64 * 1024;
/// Largest picture a page may post for scoring: a 3840×2160 luma plane.
pub const MAX_PICTURE: usize = 3840 * 2160;

/// Why a host did not score a posted picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PictureRefused {
    /// The application does not score pictures (`404`), and why.
    NotScored(String),
    /// There is no session by that id (`404`): only a page with a live session is scored.
    NoSession,
    /// This picture cannot be scored (`422`), and why.
    Unscorable(String),
    /// Still scoring earlier pictures (`503`): the page should skip this one.
    Busy,
}

/// What the HTTP layer asks of the application: cg-send hosts WHEP viewers, cg-recv WHIP
/// publishers.
pub trait SessionHost: Clone + Send + Sync + 'static {
    /// A new session for `offer`: its resource id (URL-safe) and the answer SDP.
    fn create(&self, offer: String)
    -> impl Future<Output = Result<(String, String), Error>> + Send;
    /// Ends session `id`; `false` if there is none.
    fn delete(&self, id: String) -> impl Future<Output = bool> + Send;
    /// A JSON statistics report from the page of session `id`; `false` if there is none.
    fn report(&self, id: String, json: Bytes) -> impl Future<Output = bool> + Send;
    /// A picture the page of session `id` showed (`luma`: `width`×`height`, rows packed) to
    /// score against the source; the score as a JSON body. Hosts that keep this default do
    /// not score pictures.
    fn picture(
        &self,
        id: String,
        width: usize,
        height: usize,
        luma: Bytes,
    ) -> impl Future<Output = Result<String, PictureRefused>> + Send {
        let _ = (id, width, height, luma);
        async {
            Err(PictureRefused::NotScored(
                "this server does not score pictures".into(),
            ))
        }
    }
}

/// The routes for sessions under `path` (e.g. `/whep`) and `page` at `/`.
pub fn router<H: SessionHost>(path: &str, page: &'static str, host: H) -> Router {
    Router::new()
        .route("/", get(move || async move { Html(page) }))
        .route(
            "/cg-webrtc.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], CLIENT_JS) }),
        )
        .route(path, post(create::<H>).options(preflight))
        .route(
            &format!("{path}/{{id}}"),
            axum::routing::delete(remove::<H>).options(preflight),
        )
        .route(
            &format!("{path}/{{id}}/stats"),
            post(report::<H>).options(preflight),
        )
        .route(
            &format!("{path}/{{id}}/picture"),
            post(picture::<H>)
                .options(preflight)
                .layer(DefaultBodyLimit::max(MAX_PICTURE)),
        )
        .layer(DefaultBodyLimit::max(MAX_OFFER))
        .layer(axum::middleware::map_response(cors))
        .with_state(host)
}

async fn create<H: SessionHost>(
    State(host): State<H>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sdp_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case(SDP))
        });
    if !sdp_type {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the offer must be application/sdp",
        );
    }
    let Ok(offer) = String::from_utf8(body.to_vec()) else {
        return text(StatusCode::BAD_REQUEST, "malformed SDP: not UTF-8");
    };
    match host.create(offer).await {
        Ok((id, answer)) => {
            let location = format!("{}/{id}", uri.path().trim_end_matches('/'));
            (
                StatusCode::CREATED,
                [
                    (header::LOCATION, location),
                    (header::CONTENT_TYPE, SDP.to_owned()),
                ],
                answer,
            )
                .into_response()
        }
        Err(e) => {
            let status = match e {
                Error::BadSdp(_) => StatusCode::BAD_REQUEST,
                Error::NoVideo
                | Error::NoCommonCodec(_)
                | Error::UnsupportedCodec(_)
                | Error::MissingFeedback(_) => StatusCode::UNPROCESSABLE_ENTITY,
                Error::Host(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            tracing::info!(%e, "offer refused");
            text(status, &e.to_string())
        }
    }
}

async fn remove<H: SessionHost>(State(host): State<H>, Path(id): Path<String>) -> Response {
    if host.delete(id).await {
        StatusCode::OK.into_response()
    } else {
        text(StatusCode::NOT_FOUND, "no such session")
    }
}

async fn report<H: SessionHost>(
    State(host): State<H>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    if host.report(id, body).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        text(StatusCode::NOT_FOUND, "no such session")
    }
}

async fn picture<H: SessionHost>(
    State(host): State<H>,
    Path(id): Path<String>,
    uri: axum::http::Uri,
    body: Bytes,
) -> Response {
    let Some((width, height)) = picture_size(uri.query().unwrap_or("")) else {
        return text(
            StatusCode::BAD_REQUEST,
            "the picture needs ?width=W&height=H, each from 1 to 7680",
        );
    };
    if width.checked_mul(height) != Some(body.len()) {
        return text(
            StatusCode::BAD_REQUEST,
            &format!(
                "a {width}x{height} luma plane is {} bytes, the body has {}",
                width * height,
                body.len()
            ),
        );
    }
    match host.picture(id, width, height, body).await {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(PictureRefused::NotScored(why)) => text(StatusCode::NOT_FOUND, &why),
        Err(PictureRefused::NoSession) => text(StatusCode::NOT_FOUND, "no such session"),
        Err(PictureRefused::Unscorable(why)) => text(StatusCode::UNPROCESSABLE_ENTITY, &why),
        Err(PictureRefused::Busy) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "still scoring earlier pictures",
        ),
    }
}

/// `width` and `height` from a query string, each 1..=7680.
fn picture_size(query: &str) -> Option<(usize, usize)> {
    let (mut w, mut h) = (None, None);
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=')?;
        let n = v.parse::<usize>().ok().filter(|n| (1..=7680).contains(n));
        match k {
            "width" => w = Some(n?),
            "height" => h = Some(n?),
            _ => {}
        }
    }
    Some((w?, h?))
}

/// A CORS pre-flight's answer. `PATCH` and the headers a trickling client sends with it
/// (`If-Match`) are allowed here so that a page's `PATCH` reaches the resource and gets its
/// `405` (RFC 9725 §4.3.1: how a client learns that the server does not trickle); refused
/// at the pre-flight, it would fail as a network error instead.
async fn preflight() -> Response {
    (
        StatusCode::NO_CONTENT,
        [
            (
                header::ACCESS_CONTROL_ALLOW_METHODS,
                "POST, PATCH, DELETE, OPTIONS",
            ),
            (
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                "Content-Type, Authorization, If-Match",
            ),
            (header::HeaderName::from_static("accept-post"), SDP),
        ],
    )
        .into_response()
}

async fn cors(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Location"),
    );
    res
}

fn text(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{why}\n"),
    )
        .into_response()
}

/// The client side (cg-recv as a WHEP viewer): posts `offer` to `url` and returns the session's
/// resource URL and the answer.
pub async fn post_offer(url: &str, offer: String) -> Result<(String, String), Error> {
    let uri: axum::http::Uri = url
        .parse()
        .map_err(|e| Error::Http(format!("{url}: not a URL ({e})")))?;
    let req = axum::http::Request::builder()
        .method(Method::POST)
        .uri(uri.clone())
        .header(header::CONTENT_TYPE, SDP)
        .body(http_body_util::Full::new(Bytes::from(offer)))
        .map_err(|e| Error::Http(format!("{url}: {e}")))?;
    let (status, headers, body) = request(url, req).await?;
    if status != StatusCode::CREATED {
        return Err(Error::Http(format!(
            "{url} answered {status}: {}",
            String::from_utf8_lossy(&body).trim()
        )));
    }
    let location = headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| Error::Http(format!("{url} answered 201 without a Location")))?;
    let answer = String::from_utf8(body.to_vec())
        .map_err(|_| Error::Http(format!("{url}: the answer is not UTF-8")))?;
    Ok((resolve(&uri, location), answer))
}

/// Ends a session at its resource URL (from [`post_offer`]).
pub async fn delete(resource: &str) -> Result<(), Error> {
    let req = axum::http::Request::builder()
        .method(Method::DELETE)
        .uri(resource)
        .body(http_body_util::Full::new(Bytes::new()))
        .map_err(|e| Error::Http(format!("{resource}: {e}")))?;
    let (status, _, body) = request(resource, req).await?;
    if !status.is_success() {
        return Err(Error::Http(format!(
            "DELETE {resource} answered {status}: {}",
            String::from_utf8_lossy(&body).trim()
        )));
    }
    Ok(())
}

async fn request(
    url: &str,
    req: axum::http::Request<http_body_util::Full<Bytes>>,
) -> Result<(StatusCode, HeaderMap, Bytes), Error> {
    use http_body_util::BodyExt;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<Bytes>>();
    let res = tokio::time::timeout(std::time::Duration::from_secs(10), client.request(req))
        .await
        .map_err(|_| Error::Http(format!("{url}: no answer within 10 s")))?
        .map_err(|e| Error::Http(format!("{url}: {e}")))?;
    let (parts, body) = res.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| Error::Http(format!("{url}: {e}")))?
        .to_bytes();
    Ok((parts.status, parts.headers, body))
}

/// `location` (absolute, or a path as cg-send gives) against the URL it answered.
fn resolve(base: &axum::http::Uri, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map(|a| a.as_str()).unwrap_or("");
    format!("{scheme}://{authority}{location}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picture_size_needs_both_sides_in_range() {
        assert_eq!(picture_size("width=1280&height=720"), Some((1280, 720)));
        assert_eq!(picture_size("height=2&x=y&width=4"), Some((4, 2)));
        for bad in [
            "",
            "width=1280",
            "width=0&height=720",
            "width=1280&height=9999",
            "width=a&height=1",
            "width",
        ] {
            assert_eq!(picture_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_relative_location_is_resolved_against_the_endpoint() {
        let base: axum::http::Uri = "http://10.0.0.1:8080/whep".parse().unwrap();
        assert_eq!(resolve(&base, "/whep/3"), "http://10.0.0.1:8080/whep/3");
        assert_eq!(resolve(&base, "http://x/y"), "http://x/y");
    }
}
