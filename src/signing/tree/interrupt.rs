//! Ctrl-C (SIGINT), SIGTERM and SIGHUP while a tree is signed and its outputs staged
//! ([`SignTree::watch_interrupts`](super::SignTree::watch_interrupts); `mansign sign`): a CI job
//! cancelled mid-run (GitHub Actions sends SIGINT, then SIGTERM), a user at a terminal, or
//! a terminal or SSH session that closes (SIGHUP) must not leave the run's temporary files
//! beside the outputs, nor a half-written set of outputs.
//!
//! [`Interrupts::watch`] starts a thread that waits for these signals. On one, it marks the
//! run interrupted, waits for the file operation in progress ([`Interrupts::hold`]: the
//! staging of one file, or the whole commit), removes every file the run staged (found by
//! the run's name prefix in each directory it staged into, as resolved when the file was
//! created) and exits with 128 + the signal (130, 143 or 129). A staged file that cannot be
//! removed (its directory became unwritable) is named. Staging refuses to start a file once
//! the run is interrupted, so nothing is created after the clean-up; a commit that began
//! runs to its end first, so the outputs are all written or none is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// What the clean-up needs, behind the lock the file operations hold.
struct Staged {
    /// The name prefix of the run's temporary files.
    prefix: String,
    /// Every directory a file was staged into.
    dirs: BTreeSet<PathBuf>,
    /// The commit ran to its end: nothing is left to remove.
    committed: bool,
}

/// A run's watch for SIGINT, SIGTERM and SIGHUP (see the module docs).
pub struct Interrupts {
    interrupted: AtomicBool,
    staged: Mutex<Staged>,
}

/// The lock of one file operation; see [`Interrupts::hold`].
pub struct Held<'a>(MutexGuard<'a, Staged>);

impl Held<'_> {
    /// Records a directory the run stages into (before its file is created).
    pub fn staging_in(&mut self, dir: &Path) {
        if !self.0.dirs.contains(dir) {
            self.0.dirs.insert(dir.to_path_buf());
        }
    }

    /// Marks the commit done.
    pub fn committed(&mut self) {
        self.0.committed = true;
    }
}

impl Interrupts {
    /// Starts watching for the run whose staged files are named `<prefix>…`. Without a
    /// signal handler (the runtime cannot start) the run goes on without one, as before.
    pub fn watch(prefix: &str) -> Arc<Interrupts> {
        let interrupts = Arc::new(Interrupts {
            interrupted: AtomicBool::new(false),
            staged: Mutex::new(Staged {
                prefix: prefix.to_string(),
                dirs: BTreeSet::new(),
                committed: false,
            }),
        });
        // The thread registers the handlers and says so before the run goes on: a signal
        // from then on is caught. Where it cannot, the signals end the process as before.
        let (ready, registered) = std::sync::mpsc::channel();
        let watched = interrupts.clone();
        let spawned = std::thread::Builder::new()
            .name("mansign-signals".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .build();
                let Ok(runtime) = runtime else {
                    let _ = ready.send(());
                    return;
                };
                let code = runtime.block_on(async move {
                    use tokio::signal::unix::{SignalKind, signal};
                    let handlers = signal(SignalKind::interrupt()).and_then(|int| {
                        let term = signal(SignalKind::terminate())?;
                        let hup = signal(SignalKind::hangup())?;
                        Ok((int, term, hup))
                    });
                    let _ = ready.send(());
                    let (mut int, mut term, mut hup) = handlers.ok()?;
                    Some(tokio::select! {
                        _ = int.recv() => 130,
                        _ = term.recv() => 143,
                        _ = hup.recv() => 129,
                    })
                });
                if let Some(code) = code {
                    watched.clean_up_and_exit(code);
                }
            });
        if spawned.is_ok() {
            let _ = registered.recv();
        }
        interrupts
    }

    /// Takes the lock for one file operation, refused once the run was interrupted.
    pub fn hold(&self) -> Held<'_> {
        let held = Held(self.staged.lock().unwrap_or_else(|e| e.into_inner()));
        if self.interrupted.load(Ordering::SeqCst) {
            // The signal thread owns the end of the run: it removes the staged files and
            // exits with the signal's code. Returning an error here would race it to
            // `exit` with the usage code 2 ("error: interrupted") under load, so this
            // thread gives up the lock and waits for the process to end.
            drop(held);
            loop {
                std::thread::park();
            }
        }
        held
    }

    /// Removes the run's staged files (after the operation in progress) and exits.
    fn clean_up_and_exit(&self, code: i32) -> ! {
        self.interrupted.store(true, Ordering::SeqCst);
        let staged = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        let signal = match code {
            130 => "SIGINT",
            129 => "SIGHUP",
            _ => "SIGTERM",
        };
        if staged.committed {
            eprintln!("mansign: {signal}: stopped after the outputs were written");
            std::process::exit(code);
        }
        let (removed, left) = remove_staged(&staged.prefix, &staged.dirs);
        if left.is_empty() {
            eprintln!(
                "mansign: {signal}: stopped; nothing was written ({removed} staged file(s) removed)"
            );
        } else {
            eprintln!(
                "mansign: {signal}: stopped; nothing was written ({removed} staged file(s) \
                 removed; {} could not be removed and are left behind: {})",
                left.len(),
                left.join(", ")
            );
        }
        std::process::exit(code);
    }
}

/// Removes the files named `<prefix>…` in `dirs`; returns how many, and what could not be
/// removed (a file, or a directory that cannot be listed), with why.
fn remove_staged(prefix: &str, dirs: &BTreeSet<PathBuf>) -> (usize, Vec<String>) {
    let mut removed = 0;
    let mut left = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                left.push(format!("{}/{prefix}*.tmp ({e})", dir.display()));
                continue;
            }
        };
        for entry in entries.flatten() {
            if !entry
                .file_name()
                .as_encoded_bytes()
                .starts_with(prefix.as_bytes())
            {
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => left.push(format!("{} ({e})", entry.path().display())),
            }
        }
    }
    (removed, left)
}
