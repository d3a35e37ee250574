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
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::Error;

/// More than the 1 MiB a component accepts: it judges any body from memory.
pub const PREREAD_BYTES: usize = (1 << 20) + (64 << 10);

/// From the request's arrival.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Closing a socket with unread data resets it: a client still sending a
/// body the component refused would get "broken pipe", not the 413 (about 1
/// in 300 such requests under load).
const LINGER_MAX_BYTES: usize = 4 << 20;
const LINGER_TIME: Duration = Duration::from_secs(2);

pub struct RequestBody {
    read: Option<Bytes>,
    /// Why reading stopped early: the component gets it after the bytes read.
    failed: Option<Error>,
    /// The rest of a body longer than `PREREAD_BYTES`.
    rest: Option<Incoming>,
    deadline: Pin<Box<Sleep>>,
}

impl RequestBody {
    /// Reads until the end, `PREREAD_BYTES` or the deadline (`BODY_TIMEOUT`
    /// from `arrived`); not at all if the declared length is over
    /// `PREREAD_BYTES` (refused from it).
    pub async fn read_ahead(mut body: Incoming, arrived: Instant) -> RequestBody {
        let mut deadline = Box::pin(tokio::time::sleep_until(arrived + BODY_TIMEOUT));
        if body.size_hint().exact().is_some_and(|length| length > PREREAD_BYTES as u64) {
            return RequestBody { read: None, failed: None, rest: Some(body), deadline };
        }
        let (mut read, mut failed, mut ended) = (BytesMut::new(), None, false);
        while read.len() < PREREAD_BYTES && failed.is_none() && !ended {
            let frame = tokio::select! {
                frame = body.frame() => frame.map(|frame| frame.map_err(Error::from)),
                () = deadline.as_mut() => Some(Err(Error::ConnectionReadTimeout)),
            };
            match frame {
                Some(Ok(frame)) => read.extend_from_slice(&frame.into_data().unwrap_or_default()),
                Some(Err(e)) => failed = Some(e),
                None => ended = true,
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
    type Error = Error;

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
        let timed_out = self.deadline.as_mut().poll(cx);
        timed_out.map(|()| Some(Err(Error::ConnectionReadTimeout)))
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_none()
            && self.failed.is_none()
            && self.rest.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        let read = self.read.as_ref().map_or(0, |bytes| bytes.len() as u64);
        let Some(rest) = &self.rest else {
            return SizeHint::with_exact(read);
        };
        let (hint, mut total) = (rest.size_hint(), SizeHint::new());
        total.set_lower(hint.lower() + read);
        if let Some(upper) = hint.upper() {
            total.set_upper(upper + read);
        }
        total
    }
}
