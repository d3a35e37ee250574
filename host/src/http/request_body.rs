//! The request body as the component reads it.
//!
//! A client that stalls while sending must not hold what other requests
//! need: so a body is read before the request takes an instance slot, up to
//! `PREREAD_BYTES` and within the body deadline (`BodyDeadline`), and the
//! component then reads it from memory. Only a body longer than that is
//! streamed while the instance runs, still under the same deadline. What the
//! component leaves unread is read and discarded after the response (a
//! "lingering close"), so a client still sending gets its answer instead of
//! a reset.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};

/// The most of a body read before an instance is taken: more than the
/// component reads of one it accepts (1 MiB), so it can judge any body,
/// and refuse one that is too large, without waiting on the network.
pub const PREREAD_BYTES: usize = (1 << 20) + (64 << 10);

/// A client must send its whole body within this time from the request's
/// arrival.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// What of a request body the component left unread is still read, and
/// discarded, before the connection closes. Closing a socket that holds
/// unread data resets it, so a client still sending, say a body over the
/// 1 MiB limit that the component refused from its Content-Length, would get
/// "broken pipe" instead of the 413 (seen in about 1 of 300 such requests
/// under load).
const LINGER_MAX_BYTES: usize = 4 << 20;
const LINGER_TIME: Duration = Duration::from_secs(2);

/// When the body must have arrived.
pub struct BodyDeadline(Pin<Box<tokio::time::Sleep>>);

impl BodyDeadline {
    pub fn start() -> BodyDeadline {
        BodyDeadline(Box::pin(tokio::time::sleep(BODY_TIMEOUT)))
    }
}

/// A request body: the part read before the instance was taken, then, for a
/// long body, the rest as it arrives.
pub struct RequestBody {
    read: Option<Bytes>,
    /// Why reading stopped early (the deadline passed, the client went
    /// away): the component gets this error after the bytes that did come.
    failed: Option<wasmtime_wasi_http::Error>,
    /// The rest of a body longer than `PREREAD_BYTES`; `None` once it ended
    /// or was handed to `linger`.
    rest: Option<Incoming>,
    deadline: BodyDeadline,
}

impl RequestBody {
    /// Reads `body` until it ends, `PREREAD_BYTES` have come, or the
    /// deadline passes. A body whose declared length is over `PREREAD_BYTES`
    /// is not read ahead at all: the component can refuse it from its
    /// `Content-Length`.
    pub async fn read_ahead(mut body: Incoming, mut deadline: BodyDeadline) -> RequestBody {
        if body.size_hint().exact().is_some_and(|length| length > PREREAD_BYTES as u64) {
            return RequestBody { read: None, failed: None, rest: Some(body), deadline };
        }
        let mut read = BytesMut::new();
        let mut failed = None;
        let mut ended = false;
        while read.len() < PREREAD_BYTES {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = deadline.0.as_mut() => {
                    failed = Some(wasmtime_wasi_http::Error::ConnectionReadTimeout);
                    break;
                }
            };
            match frame {
                None => {
                    ended = true;
                    break;
                }
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        read.extend_from_slice(data);
                    }
                }
                Some(Err(e)) => {
                    failed = Some(e.into());
                    break;
                }
            }
        }
        RequestBody {
            read: Some(read.freeze()).filter(|bytes| !bytes.is_empty()),
            rest: (failed.is_none() && !ended).then_some(body),
            failed,
            deadline,
        }
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let Some(body) = self.rest.take() else {
            return;
        };
        // Nothing left, or more announced than lingering would read: close.
        if body.is_end_stream() || body.size_hint().lower() > LINGER_MAX_BYTES as u64 {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(linger(body));
        }
    }
}

/// Reads and discards the rest of a body, within the lingering bounds.
async fn linger(mut body: Incoming) {
    let discard = async {
        let mut read = 0;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > LINGER_MAX_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(LINGER_TIME, discard).await;
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(read) = self.read.take() {
            return Poll::Ready(Some(Ok(Frame::data(read))));
        }
        if let Some(error) = self.failed.take() {
            return Poll::Ready(Some(Err(error)));
        }
        let Some(rest) = self.rest.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(frame) = Pin::new(rest).poll_frame(cx) {
            if frame.is_none() {
                self.rest = None;
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.0.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Some(Err(wasmtime_wasi_http::Error::ConnectionReadTimeout)))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_none()
            && self.failed.is_none()
            && self.rest.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        let read = self.read.as_ref().map_or(0, |bytes| bytes.len() as u64);
        match &self.rest {
            None => SizeHint::with_exact(read),
            Some(rest) => {
                let hint = rest.size_hint();
                let mut total = SizeHint::new();
                total.set_lower(hint.lower() + read);
                if let Some(upper) = hint.upper() {
                    total.set_upper(upper + read);
                }
                total
            }
        }
    }
}
