//! The one error type of the service. Every failure a request can meet is one
//! of these, and each maps to exactly one status and envelope message.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    InvalidLoginPayload,
    InvalidBook,
    /// An import's first bad book: its row in the file, the field (none when
    /// the row or the body is malformed) and why; the answer's `data`.
    InvalidImport {
        row: u64,
        field: Option<&'static str>,
        reason: &'static str,
    },
    /// A known `GET /books` parameter repeated or out of its rules.
    InvalidQuery,
    InvalidCredentials,
    TokenRequired,
    InvalidToken,
    /// A reader's write (`settings::Role`).
    PermissionDenied,
    BookNotFound,
    /// A restore of a book that exists.
    BookExists,
    /// A `GET /changes` cursor behind what retention kept.
    ChangesGone,
    /// A path the service does not serve.
    RouteNotFound,
    /// The path exists but not with this method; carries the `Allow` value.
    MethodNotAllowed(&'static str),
    BodyTooLarge,
    PreconditionFailed,
    /// `require_if_match` is on and `If-Match` missing.
    PreconditionRequired,
    InvalidIdempotencyKey,
    /// The key already created a different book.
    IdempotencyKeyReused,
    /// No signing secret, or signing failed.
    TokenNotIssued,
    /// Carries the seconds until the client's window ends (`Retry-After`).
    TooManyLoginAttempts {
        retry_after: u64,
    },
    /// Anything unexpected (store unreachable, query error, bad setting).
    /// The detail of this and the two below goes to the log, never to the client.
    Internal(String),
    /// `GET /health`: the configured store did not answer.
    ServiceUnavailable(String),
    /// A write waited for SQLite's write lock past its deadline (`StoreBusy`).
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
        self.answer().0
    }

    pub fn message(&self) -> &'static str {
        self.answer().1
    }

    /// Each error's status and envelope message.
    fn answer(&self) -> (u16, &'static str) {
        match self {
            ApiError::InvalidLoginPayload => (400, "Invalid request payload"),
            ApiError::InvalidBook | ApiError::InvalidImport { .. } => (400, "Invalid input"),
            ApiError::InvalidQuery => (400, "Invalid query parameters"),
            ApiError::InvalidIdempotencyKey => (400, "Invalid Idempotency-Key"),
            ApiError::InvalidCredentials => (401, "Invalid credentials"),
            ApiError::TokenRequired => (401, "Authorization token required"),
            ApiError::InvalidToken => (401, "Invalid token"),
            ApiError::PermissionDenied => (403, "Permission denied"),
            ApiError::BookNotFound => (404, "Book not found"),
            ApiError::RouteNotFound => (404, "Not found"),
            ApiError::MethodNotAllowed(_) => (405, "Method not allowed"),
            ApiError::BookExists => (409, "Book already exists"),
            ApiError::ChangesGone => (410, "Changes no longer available"),
            ApiError::PreconditionFailed => (412, "Precondition failed"),
            ApiError::BodyTooLarge => (413, "Request body too large"),
            ApiError::IdempotencyKeyReused => {
                (422, "Idempotency-Key already used for a different request")
            }
            ApiError::PreconditionRequired => (428, "Precondition required"),
            ApiError::TooManyLoginAttempts { .. } => (429, "Too many login attempts"),
            ApiError::TokenNotIssued => (500, "Could not generate token"),
            ApiError::Internal(_) => (500, "Internal server error"),
            ApiError::ServiceUnavailable(_) | ApiError::StoreBusy(_) => {
                (503, "Service unavailable")
            }
        }
    }

    /// The reason of a 500 or 503, for the log only.
    pub fn detail(&self) -> Option<&str> {
        match self {
            ApiError::Internal(detail)
            | ApiError::ServiceUnavailable(detail)
            | ApiError::StoreBusy(detail) => Some(detail),
            _ => None,
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
        match self.detail() {
            Some(detail) => write!(f, "{}: {detail}", self.message()),
            None => f.write_str(self.message()),
        }
    }
}

impl std::error::Error for ApiError {}
