//! Rows a statement yields, handed to the guest as a `stream` while it runs
//! (`execute-async`, `query-async`): a bounded channel between the producing
//! task and the stream, so a large result never sits whole in memory.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use wasmtime::component::{Accessor, Destination, FutureReader, HasData, Lift, Lower};
use wasmtime::component::{StreamProducer, StreamReader, StreamResult, VecBuffer};
use wasmtime::StoreContextMut;

/// Rows produced ahead of the guest's reads.
pub const ROWS_AHEAD: usize = 16;

/// The guest's ends of the rows and of the statement's outcome.
pub type Ends<T, E> = (StreamReader<T>, FutureReader<Result<(), E>>);

/// The rows and the statement's outcome (`lost` if its task is) as the
/// guest's `stream` and `future`.
pub fn to_guest<U, D: HasData, T, E, Lost>(
    accessor: &Accessor<U, D>,
    rows: mpsc::Receiver<T>,
    done: impl Future<Output = Result<Result<(), E>, Lost>> + Send + 'static,
    lost: E,
) -> wasmtime::Result<Ends<T, E>>
where
    T: Lower + Lift + Send + Sync + 'static,
    E: Lower + Lift + Send + Sync + 'static,
{
    let done = async move { Ok::<_, wasmtime::Error>(done.await.unwrap_or(Err(lost))) };
    accessor.with(|mut access| {
        let rows = StreamReader::new(&mut access, RowStream(rows))?;
        Ok((rows, FutureReader::new(&mut access, done)?))
    })
}

struct RowStream<T>(mpsc::Receiver<T>);

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
                let more = std::iter::from_fn(|| rows.try_recv().ok()).take(room - 1);
                let batch: Vec<T> = std::iter::once(row).chain(more).collect();
                destination.set_buffer(batch.into());
                Poll::Ready(Ok(StreamResult::Completed))
            }
        }
    }
}
