//! Build facts for `mansign version` and `--version` (a bug report needs them): the commit,
//! the build date and the target triple, captured at build time as environment variables
//! of the crate (`MANSIGN_BUILD_COMMIT`, `MANSIGN_BUILD_DATE`, `MANSIGN_BUILD_TARGET`).
//!
//! Reproducible: nothing here reads the clock. The date is `SOURCE_DATE_EPOCH`
//! (https://reproducible-builds.org/specs/source-date-epoch/) when set, else the commit's
//! date, else `unknown`; the commit comes from git when the source is a git checkout, else
//! from `.cargo_vcs_info.json` (a published crate), else `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let dir = Path::new(&dir);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");

    // Only this repository's own git data: a crate unpacked inside some other checkout
    // must not report that checkout's commit.
    let in_git = dir.join(".git").exists();
    if in_git {
        // Rebuild when HEAD moves (a commit, a checkout), and only then.
        for path in [
            git(dir, &["rev-parse", "--git-path", "HEAD"]),
            head_ref_file(dir),
        ]
        .into_iter()
        .flatten()
        {
            // A missing file (a packed ref) would make cargo rerun this on every build.
            let path = dir.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let commit = in_git
        .then(|| git(dir, &["rev-parse", "HEAD"]))
        .flatten()
        .or_else(|| vcs_info_sha1(dir))
        .unwrap_or_else(|| "unknown".into());
    let date = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .map(utc_date)
        .or_else(|| {
            in_git
                .then(|| git(dir, &["log", "-1", "--format=%ct", "HEAD"]))
                .flatten()
                .and_then(|s| s.parse::<i64>().ok())
                .map(utc_date)
        })
        .unwrap_or_else(|| "unknown".into());
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=MANSIGN_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=MANSIGN_BUILD_DATE={date}");
    println!("cargo:rustc-env=MANSIGN_BUILD_TARGET={target}");
}

/// A git command's trimmed output, or `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The file of the branch HEAD points to (`refs/heads/main`), if HEAD is a branch.
fn head_ref_file(dir: &Path) -> Option<String> {
    let name = git(dir, &["symbolic-ref", "-q", "HEAD"])?;
    git(dir, &["rev-parse", "--git-path", &name])
}

/// `git.sha1` of the `.cargo_vcs_info.json` that `cargo package` writes into a crate.
fn vcs_info_sha1(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let after = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = after.find('"')? + 1;
    let len = after[start..].find('"')?;
    let sha = &after[start..start + len];
    (!sha.is_empty() && sha.chars().all(|c| c.is_ascii_hexdigit())).then(|| sha.to_string())
}

/// `YYYY-MM-DD` (UTC) of a Unix time (days to civil date, proleptic Gregorian).
fn utc_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
