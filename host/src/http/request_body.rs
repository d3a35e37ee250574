//! The request body as the component reads it: read before the request takes
//! a slot (up to `PREREAD_BYTES`, within `BODY_TIMEOUT`), so a stalled client
//! holds no slot; only a longer body is streamed while the instance runs.
//! What the component leaves unread is discarded after the response (a
//! lingering close), so a client still sending gets its answer, not a reset.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};

/// More than the 1 MiB a component accepts: it judges any body from memory.
pub const PREREAD_BYTES: usize = (1 << 20) + (64 << 10);

/// From the request's arrival.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Closing a socket with unread data resets it: a client still sending a
/// body the component refused would get "broken pipe", not the 413 (about 1
/// in 300 such requests under load).
const LINGER_MAX_BYTES: usize = 4 << 20;
const LINGER_TIME: Duration = Duration::from_secs(2);

pub struct BodyDeadline(Pin<Box<tokio::time::Sleep>>);

impl BodyDeadline {
    pub fn start() -> BodyDeadline {
        BodyDeadline(Box::pin(tokio::time::sleep(BODY_TIMEOUT)))
    }
}

pub struct RequestBody {
    read: Option<Bytes>,
    /// Why reading stopped early: the component gets it after the bytes read.
    failed: Option<wasmtime_wasi_http::Error>,
    /// The rest of a body longer than `PREREAD_BYTES`.
    rest: Option<Incoming>,
    deadline: BodyDeadline,
}

impl RequestBody {
    /// Reads until the end, `PREREAD_BYTES` or the deadline; not at all if
    /// the declared length is over `PREREAD_BYTES` (refused from it).
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
