//! Rows a statement yields, handed to the guest as a `stream` while it runs
//! (`execute-async`, `query-async`): a bounded channel between the producing
//! task and the stream, so a large result never sits whole in memory.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use wasmtime::component::{Destination, StreamProducer, StreamResult, VecBuffer};
use wasmtime::StoreContextMut;

/// Rows produced ahead of the guest's reads.
pub const ROWS_AHEAD: usize = 16;

pub struct RowStream<T>(pub mpsc::Receiver<T>);

impl<D, T: Send + Sync + 'static> StreamProducer<D> for RowStream<T> {
    type Item = T;
    type Buffer = VecBuffer<T>;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        store: StoreContextMut<'a, D>,
        mut destination: Destination<'a, T, VecBuffer<T>>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let room = destination.remaining(store).unwrap_or(1);
        // A zero-length read asks whether rows may come: say yes.
        if room == 0 {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        let rows = &mut self.get_mut().0;
        match rows.poll_recv(cx) {
            Poll::Ready(None) => Poll::Ready(Ok(StreamResult::Dropped)),
            Poll::Pending if finish => Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(row)) => {
                // Whatever else is ready goes in the same read.
                let mut batch = vec![row];
                while batch.len() < room {
                    match rows.try_recv() {
                        Ok(row) => batch.push(row),
                        Err(_) => break,
                    }
                }
                destination.set_buffer(batch.into());
                Poll::Ready(Ok(StreamResult::Completed))
            }
        }
    }
}
