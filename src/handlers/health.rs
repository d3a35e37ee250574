//! `GET /health`: whether the configured store answers, for load balancers
//! and Kubernetes probes.

use crate::envelope::Response;
use crate::error::ApiError;
use crate::port::Context;
use crate::settings;
use crate::store;

/// 200 "Service healthy" when the configured store answers a trivial query;
/// otherwise 503 "Service unavailable", the reason in the log only (a
/// setting that cannot be read included: the store cannot be known).
pub fn health<C: Context>(ctx: &mut C) -> Result<Response, ApiError> {
    let target = settings::database(ctx).map_err(|error| match error {
        ApiError::Internal(detail) => ApiError::ServiceUnavailable(detail),
        other => other,
    })?;
    let unavailable = |error: anyhow::Error| {
        ApiError::ServiceUnavailable(format!("{}: {error:#}", target.describe()))
    };
    let mut db = ctx.open_store(&target).map_err(unavailable)?;
    store::ping(&mut *db).map_err(unavailable)?;
    Ok(Response::ok::<()>(200, "Service healthy", None))
}
