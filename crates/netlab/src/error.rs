//! The crate's error type.

use std::path::PathBuf;

use crate::scenario::ScenarioError;

/// Everything that can stop a netlab run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The scenario file is invalid (nothing was created).
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// A system command failed.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line.
        command: String,
        /// Its stderr or exit status.
        detail: String,
    },
    /// A system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel lacks a feature the scenario needs.
    #[error("kernel backend unavailable: {0}")]
    KernelMissing(String),
    /// A feature that is not available yet.
    #[error("{0}")]
    NotAvailable(String),
    /// The topology does not behave as configured (e.g. RTT check failed).
    #[error("topology check failed: {0}")]
    Check(String),
    /// A helper process misbehaved.
    #[error("{0}")]
    Process(String),
    /// Output could not be written.
    #[error("cannot write {path}: {detail}")]
    Output {
        /// File.
        path: PathBuf,
        /// Why.
        detail: String,
    },
}

impl Error {
    /// An [`Error::Io`] from the last OS error.
    pub fn last_os(what: impl Into<String>) -> Self {
        Error::Io {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }

    /// An [`Error::Io`].
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    /// An [`Error::Output`]: `path` could not be written, for the reason `why`.
    pub fn output(path: impl Into<PathBuf>, why: impl std::fmt::Display) -> Self {
        Error::Output {
            path: path.into(),
            detail: why.to_string(),
        }
    }
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
