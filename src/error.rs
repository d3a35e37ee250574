//! The one error type of the service. Every failure a request can meet is one
//! of these, and each maps to exactly one status and envelope message.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// `POST /token` body is not a login object.
    InvalidLoginPayload,
    /// Book body cannot be read as a (partial) book.
    InvalidBook,
    /// `GET /books` parameters: a known one repeated or out of its rules.
    InvalidQuery,
    InvalidCredentials,
    TokenRequired,
    InvalidToken,
    BookNotFound,
    /// A path the service does not serve.
    RouteNotFound,
    /// The path exists but not with this method; carries the `Allow` value.
    MethodNotAllowed(&'static str),
    BodyTooLarge,
    /// `If-Match` names no version the book has (`safe_writes`).
    PreconditionFailed,
    /// `If-Match` is required (`require_if_match`) and missing.
    PreconditionRequired,
    /// An `Idempotency-Key` that is not 1 to 255 visible ASCII characters.
    InvalidIdempotencyKey,
    /// An `Idempotency-Key` already used to create a different book.
    IdempotencyKeyReused,
    /// No signing secret, or signing itself failed.
    TokenNotIssued,
    /// `POST /token` from an address over its failed-login limit; carries
    /// the seconds until its window ends (the `Retry-After` value).
    TooManyLoginAttempts {
        retry_after: u64,
    },
    /// Anything unexpected (store unreachable, query error, bad setting).
    /// The detail goes to the log, never to the client.
    Internal(String),
    /// `GET /health`: the configured store did not answer a trivial query.
    /// The reason goes to the log, never to the client.
    ServiceUnavailable(String),
    /// A write waited for SQLite's write lock past its deadline (`StoreBusy`):
    /// 503 with `Retry-After`. The reason goes to the log.
    StoreBusy(String),
}

/// SQLite's write lock stayed with other writers for as long as a write
/// may wait for it (`db::WRITE_LOCK_DEADLINE_MS`). Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreBusy {
    pub waited_ms: u64,
}

impl fmt::Display for StoreBusy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the database stayed locked by other writers for {} ms; nothing was written",
            self.waited_ms
        )
    }
}

impl std::error::Error for StoreBusy {}

impl ApiError {
    pub fn status(&self) -> u16 {
        match self {
            ApiError::InvalidLoginPayload
            | ApiError::InvalidBook
            | ApiError::InvalidQuery
            | ApiError::InvalidIdempotencyKey => 400,
            ApiError::InvalidCredentials | ApiError::TokenRequired | ApiError::InvalidToken => 401,
            ApiError::BookNotFound | ApiError::RouteNotFound => 404,
            ApiError::MethodNotAllowed(_) => 405,
            ApiError::PreconditionFailed => 412,
            ApiError::BodyTooLarge => 413,
            ApiError::IdempotencyKeyReused => 422,
            ApiError::PreconditionRequired => 428,
            ApiError::TooManyLoginAttempts { .. } => 429,
            ApiError::TokenNotIssued | ApiError::Internal(_) => 500,
            ApiError::ServiceUnavailable(_) | ApiError::StoreBusy(_) => 503,
        }
    }

    pub fn message(&self) -> &'static str {
        match self {
            ApiError::InvalidLoginPayload => "Invalid request payload",
            ApiError::InvalidBook => "Invalid input",
            ApiError::InvalidQuery => "Invalid query parameters",
            ApiError::InvalidCredentials => "Invalid credentials",
            ApiError::TokenRequired => "Authorization token required",
            ApiError::InvalidToken => "Invalid token",
            ApiError::BookNotFound => "Book not found",
            ApiError::RouteNotFound => "Not found",
            ApiError::MethodNotAllowed(_) => "Method not allowed",
            ApiError::BodyTooLarge => "Request body too large",
            ApiError::PreconditionFailed => "Precondition failed",
            ApiError::PreconditionRequired => "Precondition required",
            ApiError::InvalidIdempotencyKey => "Invalid Idempotency-Key",
            ApiError::IdempotencyKeyReused => {
                "Idempotency-Key already used for a different request"
            }
            ApiError::TooManyLoginAttempts { .. } => "Too many login attempts",
            ApiError::TokenNotIssued => "Could not generate token",
            ApiError::Internal(_) => "Internal server error",
            ApiError::ServiceUnavailable(_) | ApiError::StoreBusy(_) => "Service unavailable",
        }
    }

    pub fn internal(detail: impl fmt::Display) -> Self {
        ApiError::Internal(detail.to_string())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> Self {
        // `{:#}` keeps the whole context chain on one log line.
        let detail = format!("{error:#}");
        match error.downcast_ref::<StoreBusy>() {
            Some(_) => ApiError::StoreBusy(detail),
            None => ApiError::Internal(detail),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Internal(detail)
            | ApiError::ServiceUnavailable(detail)
            | ApiError::StoreBusy(detail) => {
                write!(f, "{}: {detail}", self.message())
            }
            _ => f.write_str(self.message()),
        }
    }
}

impl std::error::Error for ApiError {}
