//! Where the CLIs put statistics: newline-delimited JSON on stdout (`--json`) and/or in a
//! file (`--stats-file`), and a live one-line status on a terminal (stderr).

use std::fs::File;
use std::future::Future;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::Path;

use serde::Serialize;

use crate::Error;

/// The statistics outputs of one CLI run.
pub struct StatsOutput {
    json_stdout: bool,
    file: Option<(String, BufWriter<File>)>,
    status: bool,
    status_shown: bool,
}

impl StatsOutput {
    /// JSON lines on stdout if `json`, into `file` if given (created or truncated), and a
    /// status line on stderr if it is a terminal and `quiet` is not set.
    pub fn new(json: bool, file: Option<&Path>, quiet: bool) -> Result<StatsOutput, Error> {
        let file = match file {
            Some(p) => {
                let f = File::create(p).map_err(|e| Error::Io {
                    what: format!("cannot create stats file {}", p.display()),
                    source: e,
                })?;
                Some((p.display().to_string(), BufWriter::new(f)))
            }
            None => None,
        };
        Ok(StatsOutput {
            json_stdout: json,
            file,
            status: !quiet && std::io::stderr().is_terminal(),
            status_shown: false,
        })
    }

    /// Writes one sample: a JSON line to each JSON output (flushed, so a reader sees whole
    /// lines even if the process is killed), and redraws the status line.
    pub fn write<T: Serialize>(&mut self, sample: &T, status_line: &str) -> Result<(), Error> {
        if self.json_stdout || self.file.is_some() {
            let line = serde_json::to_string(sample).map_err(|e| Error::Io {
                what: "serialise statistics".into(),
                source: e.into(),
            })?;
            if self.json_stdout {
                let mut out = std::io::stdout().lock();
                // A closed stdout (`| head`) must not stop the session.
                let _ = writeln!(out, "{line}").and_then(|()| out.flush());
            }
            if let Some((path, f)) = &mut self.file {
                writeln!(f, "{line}")
                    .and_then(|()| f.flush())
                    .map_err(|e| Error::Io {
                        what: format!("write stats file {path}"),
                        source: e,
                    })?;
            }
        }
        if self.status {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K{status_line}");
            let _ = err.flush();
            self.status_shown = true;
        }
        Ok(())
    }

    /// Ends the status line (so later messages start on a fresh line).
    pub fn finish(&mut self) {
        if self.status_shown {
            eprintln!();
            self.status_shown = false;
        }
    }

    /// Runs `session` while a thread writes every sample of `samples` (with `status_line` on
    /// the terminal); returns the session's result, then the first write error, once every
    /// sample it sent has been written. What `cg-send` and `cg-recv` do around a session.
    ///
    /// The writes run on a blocking thread of the runtime, never on its workers: a file on a
    /// slow disk or a pipe nobody reads blocks its writer, and a blocked worker would hold
    /// the tasks queued on it, among them the session's socket driver.
    pub async fn around<T, R>(
        mut self,
        mut samples: tokio::sync::mpsc::Receiver<T>,
        status_line: impl Fn(&T) -> String + Send + 'static,
        session: impl Future<Output = Result<R, Error>>,
    ) -> Result<R, Error>
    where
        T: Serialize + Send + 'static,
    {
        let writer = tokio::task::spawn_blocking(move || {
            while let Some(s) = samples.blocking_recv() {
                self.write(&s, &status_line(&s))?;
            }
            self.finish();
            Ok::<(), Error>(())
        });
        let last = session.await;
        let written = writer.await.unwrap_or(Ok(()));
        let last = last?;
        written?;
        Ok(last)
    }
}
