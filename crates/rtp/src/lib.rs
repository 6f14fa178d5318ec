//! Sans-IO RTP/RTCP sessions (work in progress: see issue #6).
