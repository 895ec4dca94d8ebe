//! [`PostgresOptions`]: where the checkpoint table lives (prefix, schema), names checked.

use crate::PostgresError;

/// Longest table prefix or schema name accepted.
pub(crate) const MAX_NAME: usize = 40;

fn check_name(what: &'static str, value: &str, allow_empty: bool) -> Result<(), PostgresError> {
    let ok = (allow_empty || !value.is_empty())
        && value.len() <= MAX_NAME
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !value.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(PostgresError::Name {
            what,
            value: value.to_string(),
        })
    }
}

/// Where the checkpoints live inside the database.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    table_prefix: String,
    pub(crate) schema: Option<String>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            table_prefix: "agentgraph_".to_string(),
            schema: None,
        }
    }
}

impl PostgresOptions {
    /// The table is named `{prefix}checkpoints` (default prefix `agentgraph_`), so several
    /// applications can share one database by using different prefixes.
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.table_prefix = prefix.into();
        self
    }

    /// Puts the table in this schema (created if missing) instead of the connection's
    /// `search_path` default.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    pub(crate) fn table(&self) -> Result<String, PostgresError> {
        self.table_named("checkpoints")
    }

    /// The qualified, quoted name of table `{prefix}{name}`.
    pub(crate) fn table_named(&self, name: &str) -> Result<String, PostgresError> {
        check_name("table prefix", &self.table_prefix, true)?;
        let table = format!("\"{}{name}\"", self.table_prefix);
        match &self.schema {
            Some(s) => {
                check_name("schema", s, false)?;
                Ok(format!("\"{s}\".{table}"))
            }
            None => Ok(table),
        }
    }
}
