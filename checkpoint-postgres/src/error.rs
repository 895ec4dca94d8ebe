//! [`PostgresError`] and the reading of tokio-postgres errors (server message, lost connection).

use crate::options::MAX_NAME;
use agentgraph_runtime::checkpoint::CheckpointError;

/// Errors of connecting to and configuring the PostgreSQL store. Errors of the checkpoint
/// operations themselves are [`CheckpointError::Backend`] carrying this error's message.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    /// The connection string could not be parsed.
    #[error("invalid PostgreSQL connection string: {0}")]
    Url(#[source] tokio_postgres::Error),
    /// A table prefix or schema name that is not a plain identifier.
    #[error(
        "invalid {what} {value:?}: use at most {MAX_NAME} ASCII lowercase letters, digits or \
         underscores, not starting with a digit"
    )]
    Name {
        /// `table prefix` or `schema`.
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// The server could not be reached or refused the login.
    #[error("connecting to PostgreSQL: {}", describe(.0))]
    Connect(#[source] tokio_postgres::Error),
    /// Creating the schema/table or preparing the statements failed.
    #[error("setting up table {table}: {}", describe(.source))]
    Setup {
        /// The qualified table name.
        table: String,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A query failed.
    #[error("PostgreSQL {op} on {table}: {}", describe(.source))]
    Query {
        /// What was being done.
        op: &'static str,
        /// The qualified table name.
        table: String,
        /// The server's error.
        #[source]
        source: tokio_postgres::Error,
    },
}

impl From<PostgresError> for agentgraph_runtime::store::StoreError {
    fn from(e: PostgresError) -> Self {
        agentgraph_runtime::store::StoreError::Backend(e.to_string())
    }
}

impl From<PostgresError> for CheckpointError {
    fn from(e: PostgresError) -> Self {
        CheckpointError::Backend(e.to_string())
    }
}

/// tokio-postgres prints a server error as just "db error"; add the server's message.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{e}: {} {}: {}",
            db.severity(),
            db.code().code(),
            db.message()
        ),
        None => e.to_string(),
    }
}

/// Whether `e` means the connection is gone: closed, or the server ended the session
/// (SQLSTATE class 57P: admin or crash shutdown, cannot connect now).
pub(crate) fn connection_lost(e: &tokio_postgres::Error) -> bool {
    e.is_closed() || e.code().is_some_and(|c| c.code().starts_with("57P"))
}
