//! Releases (`.github/workflows/release.yml`, `scripts/release-checksums.sh`,
//! `scripts/release-sign.sh`) and the way `docs/releases.md` tells users to verify a
//! download: the documented commands run verbatim on a release produced on the loopback
//! Sigstore stack (this test run's mansign binary as the asset, signed with a token for the
//! release workflow's identity), with mansign and sigstore-python.

use crate::common;
use crate::common::file_server;
use crate::common::stack;
use crate::common::stub_server;

use file_server::FileServer;
use serde_json::Value;
use stack::Stack;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use stub_server::StubServer;

const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";
const ASSET: &str = "mansign-x86_64-unknown-linux-musl";
const TARGETS: [&str; 4] = [
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn releases_doc() -> String {
    std::fs::read_to_string(repo().join("docs/releases.md")).unwrap()
}

/// The ```sh block after `<!-- tested: NAME -->` in docs/releases.md.
fn doc_block(name: &str) -> String {
    let doc = releases_doc();
    let marker = format!("<!-- tested: {name} -->\n```sh\n");
    let start = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/releases.md has no tested block {name}"))
        + marker.len();
    let end = doc[start..].find("```").expect("closing fence") + start;
    doc[start..end].to_string()
}

/// `VERSION=...` of the download block: the release the doc talks about.
fn doc_version() -> String {
    doc_block("download")
        .lines()
        .find_map(|l| l.strip_prefix("VERSION="))
        .expect("VERSION= in the download block")
        .to_string()
}

fn release_identity(version: &str) -> String {
    format!("https://github.com/mansign/mansign/.github/workflows/release.yml@refs/tags/{version}")
}

fn github_token(stack: &Stack, subject: &str) -> String {
    stack.mint_token(&[
        &format!("iss={GITHUB_ISSUER}"),
        &format!("sub={subject}"),
        "repository=mansign/mansign",
        "event_name=push",
    ])
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run")
}

fn log(out: &Output) -> String {
    common::all_output(out)
}

/// A run that must fail; `what` says what it means if it did not.
fn assert_failed(out: &Output, what: &str) {
    assert!(!out.status.success(), "{what}: {}", log(out));
}

/// `cmd` as the release job's runner starts it: no ambient Sigstore settings, the runner's
/// token service at `github`, the release workflow of tag `version`, the stack's trust.
fn as_release_job<'a>(
    cmd: &'a mut Command,
    github: &StubServer,
    stack: &Stack,
    version: &str,
) -> &'a mut Command {
    for v in stack::AMBIENT_VARS {
        cmd.env_remove(v);
    }
    cmd.env(
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        format!("{}/_apis/token?api-version=2.0", github.url),
    )
    .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "runner-request-token")
    .env("GITHUB_SERVER_URL", "https://github.com")
    .env(
        "GITHUB_WORKFLOW_REF",
        format!("mansign/mansign/.github/workflows/release.yml@refs/tags/{version}"),
    )
    .env("RELEASE_TRUSTED_ROOT", stack.trusted_root())
    .env(
        "RELEASE_SIGNING_CONFIG",
        stack.var("SIGSTORE_SIGNING_CONFIG"),
    )
}

/// Runs the release workflow's signing part on `dir` (release-checksums.sh, then
/// release-sign.sh with the runner's token service), as the `sign` job does.
fn sign_release(stack: &Stack, dir: &Path, version: &str, token_subject: &str) -> Output {
    let out = run(Command::new("bash")
        .arg(repo().join("scripts/release-checksums.sh"))
        .arg(dir));
    assert!(out.status.success(), "{}", log(&out));
    let github = StubServer::token_endpoint(github_token(stack, token_subject));
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("scripts/release-sign.sh")).arg(dir);
    run(as_release_job(&mut cmd, &github, stack, version)
        .env("MANSIGN", assert_cmd::cargo::cargo_bin("mansign")))
}

/// A release directory `<root>/<version>/` holding the asset: this run's mansign binary,
/// stripped of symbols as the release build is (`CARGO_PROFILE_RELEASE_STRIP` in
/// release.yml). Its size does not matter: `mansign sign-bundle` hashes a blob as it reads it.
fn release_dir(root: &Path, version: &str) -> PathBuf {
    let dir = root.join(version);
    std::fs::create_dir_all(&dir).unwrap();
    let out = run(Command::new("strip")
        .arg("-o")
        .arg(dir.join(ASSET))
        .arg(assert_cmd::cargo::cargo_bin("mansign")));
    assert!(out.status.success(), "strip (binutils): {}", log(&out));
    dir
}

/// A shell that runs documentation blocks: mansign and sigstore-python on PATH, the stack's
/// trust material in TRUSTED_ROOT / TRUST_CONFIG.
fn doc_shell(stack: &Stack, cwd: &Path, script: &str) -> Output {
    let mansign_dir = assert_cmd::cargo::cargo_bin("mansign")
        .parent()
        .unwrap()
        .to_path_buf();
    let sigstore_dir = stack.sigstore_python().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}:{}",
        mansign_dir.display(),
        sigstore_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(cwd)
        .env("PATH", path)
        .env("TRUSTED_ROOT", stack.trusted_root())
        .env("TRUST_CONFIG", stack.trust_config()))
}

/// The documented verification blocks, with the stack's trust root instead of the
/// public-good one (each substitution must apply exactly once).
fn verify_blocks() -> String {
    let replace_once = |text: String, from: &str, to: &str| {
        assert_eq!(text.matches(from).count(), 1, "{from:?} in {text}");
        text.replace(from, to)
    };
    let mansign = replace_once(
        doc_block("mansign"),
        "mansign verify-bundle ",
        "mansign verify-bundle --trusted-root \"$TRUSTED_ROOT\" ",
    );
    let sigstore = replace_once(
        doc_block("sigstore-python"),
        "sigstore verify identity ",
        "sigstore --trust-config \"$TRUST_CONFIG\" verify identity --offline ",
    );
    format!("{}\n{mansign}\n{sigstore}", doc_block("checksum"))
}

/// One documented block, with the stack's trust root instead of the public-good one.
fn rooted_block(name: &str) -> String {
    doc_block(name)
        .replace(
            "mansign verify-bundle ",
            "mansign verify-bundle --trusted-root \"$TRUSTED_ROOT\" ",
        )
        .replace(
            "sigstore verify identity ",
            "sigstore --trust-config \"$TRUST_CONFIG\" verify identity --offline ",
        )
}

/// The doc's download block, from a loopback server instead of GitHub (only `BASE=` changes).
fn download(server: &FileServer) -> String {
    let block = doc_block("download");
    let base_lines: Vec<&str> = block.lines().filter(|l| l.starts_with("BASE=")).collect();
    assert_eq!(base_lines.len(), 1, "{block}");
    block.replace(base_lines[0], &format!("BASE={}", server.url))
}

/// A fresh local Sigstore stack and the documented version's release assets, unsigned:
/// (stack, version, temporary root, the release directory under it).
fn unsigned_release() -> (Stack, String, tempfile::TempDir, PathBuf) {
    let stack = Stack::start();
    let version = doc_version();
    let root = tempfile::tempdir().unwrap();
    let dir = release_dir(root.path(), &version);
    (stack, version, root, dir)
}

#[test]
fn a_signed_release_verifies_exactly_as_docs_releases_md_says() {
    let (stack, version, root, dir) = unsigned_release();
    let out = sign_release(&stack, &dir, &version, &release_identity(&version));
    assert!(out.status.success(), "{}", log(&out));
    for f in [
        format!("{ASSET}.sigstore.json"),
        "SHA256SUMS.sigstore.json".to_string(),
    ] {
        assert!(dir.join(&f).is_file(), "{f} missing");
    }
    let server = FileServer::start(root.path());
    let user = tempfile::tempdir().unwrap();
    let script = format!("{}\n{}", download(&server), verify_blocks());
    let out = doc_shell(&stack, user.path(), &script);
    assert!(out.status.success(), "{}", log(&out));
    let text = log(&out);
    assert!(text.contains(&format!("{ASSET}: OK")), "{text}");
    assert!(
        text.contains(&format!("OK: {ASSET}")),
        "sigstore-python: {text}"
    );
    // SHA256SUMS has its own bundle, verified the same way.
    let sums = doc_shell(
        &stack,
        user.path(),
        &format!(
            "VERSION={version}\nASSET=SHA256SUMS\ncurl -fsSLO {}/{version}/SHA256SUMS.sigstore.json\n{}",
            server.url,
            verify_blocks().replace(&doc_block("checksum"), "")
        ),
    );
    assert!(sums.status.success(), "{}", log(&sums));
}

#[test]
fn a_tampered_download_fails_every_documented_check() {
    let (stack, version, root, dir) = unsigned_release();
    assert!(
        sign_release(&stack, &dir, &version, &release_identity(&version))
            .status
            .success()
    );
    let server = FileServer::start(root.path());
    let user = tempfile::tempdir().unwrap();
    let out = doc_shell(&stack, user.path(), &download(&server));
    assert!(out.status.success(), "{}", log(&out));
    let asset = user.path().join(ASSET);
    let mut bytes = std::fs::read(&asset).unwrap();
    bytes.push(0);
    std::fs::write(&asset, bytes).unwrap();
    let vars = format!("VERSION={version}\nASSET={ASSET}\n");
    for name in ["checksum", "mansign", "sigstore-python"] {
        let out = doc_shell(
            &stack,
            user.path(),
            &format!("{vars}{}", rooted_block(name)),
        );
        assert_failed(&out, &format!("{name} accepted a tampered asset"));
    }
}

/// 40 MiB of deterministic, incompressible bytes: an asset larger than the 32 MiB bound a
/// manifest or bundle is read within.
fn large_asset() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..(40usize << 20) / 8)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()
        })
        .collect()
}

#[test]
fn an_asset_larger_than_the_input_bound_is_signed_streaming_and_verifies_as_documented() {
    // sign-bundle hashes a blob as it reads it (constant memory, as cosign sign-blob):
    // the 32 MiB bound is for what mansign parses (manifests, bundles, statements), not
    // for an artifact it only hashes.
    let (stack, version, _root, dir) = unsigned_release();
    let name = "mansign-large.tar.gz";
    let bytes = large_asset();
    assert!(bytes.len() > 32 << 20);
    std::fs::write(dir.join(name), &bytes).unwrap();
    let out = sign_release(&stack, &dir, &version, &release_identity(&version));
    assert!(out.status.success(), "{}", log(&out));
    assert!(
        log(&out).contains(&format!("signed {name} ->")),
        "{}",
        log(&out)
    );
    let vars = format!("VERSION={version}\nASSET={name}\n");
    let out = doc_shell(&stack, &dir, &format!("{vars}{}", verify_blocks()));
    assert!(out.status.success(), "{}", log(&out));
    assert!(
        log(&out).contains(&format!("OK: {name}")),
        "sigstore-python: {}",
        log(&out)
    );
    // One byte changed at the end, past the first 32 MiB: refused.
    let mut tampered = bytes;
    *tampered.last_mut().unwrap() ^= 1;
    std::fs::write(dir.join(name), &tampered).unwrap();
    for block in ["mansign", "sigstore-python"] {
        let out = doc_shell(&stack, &dir, &format!("{vars}{}", rooted_block(block)));
        assert_failed(&out, &format!("{block} accepted a tampered large asset"));
    }
}

#[test]
fn release_signing_fails_when_the_token_is_not_the_release_workflow() {
    let (stack, version, _root, dir) = unsigned_release();
    let other = "https://github.com/mansign/mansign/.github/workflows/ci.yml@refs/heads/main";
    let out = sign_release(&stack, &dir, &version, other);
    assert!(!out.status.success(), "{}", log(&out));
    assert!(
        !log(&out).contains(&format!("signed {ASSET} ->")),
        "{}",
        log(&out)
    );
}

#[test]
fn release_signing_refuses_assets_that_differ_from_sha256sums() {
    let (stack, version, _root, dir) = unsigned_release();
    let out = run(Command::new("bash")
        .arg(repo().join("scripts/release-checksums.sh"))
        .arg(&dir));
    assert!(out.status.success());
    std::fs::remove_file(dir.join(ASSET)).unwrap();
    std::fs::write(dir.join(ASSET), b"not the binary that was summed").unwrap();
    let github = StubServer::token_endpoint(github_token(&stack, &release_identity(&version)));
    let out = run(Command::new("bash")
        .arg(repo().join("scripts/release-sign.sh"))
        .arg(&dir)
        .env(
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            format!("{}/_apis/token?x=1", github.url),
        )
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "t")
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env(
            "GITHUB_WORKFLOW_REF",
            "mansign/mansign/.github/workflows/release.yml@refs/tags/v0",
        ));
    assert!(!out.status.success());
    assert!(
        github.requests().is_empty(),
        "no token before the checksums match"
    );
    assert!(!dir.join(format!("{ASSET}.sigstore.json")).exists());
}

#[test]
fn sha256sums_lists_every_asset_sorted_in_sha256sum_format_without_bundles() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("b-asset", "b"),
        ("a-asset", "a"),
        ("a-asset.sigstore.json", "{}"),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = run(Command::new("bash")
        .arg(repo().join("scripts/release-checksums.sh"))
        .arg(dir.path()));
    assert!(out.status.success(), "{}", log(&out));
    let sums = std::fs::read_to_string(dir.path().join("SHA256SUMS")).unwrap();
    assert_eq!(
        sums,
        "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  a-asset\n\
         3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b-asset\n"
    );
    let empty = tempfile::tempdir().unwrap();
    let out = run(Command::new("bash")
        .arg(repo().join("scripts/release-checksums.sh"))
        .arg(empty.path()));
    assert_eq!(out.status.code(), Some(2), "no assets is an error");
}

/// `asset_name OS ARCH` of scripts/action-install.sh.
fn installer_asset(os: &str, arch: &str) -> String {
    let out = run(Command::new("bash").arg("-c").arg(format!(
        "source <(sed -n '/^asset_name() {{/,/^}}/p' '{}'); asset_name {os} {arch}",
        repo().join("scripts/action-install.sh").display()
    )));
    assert!(out.status.success(), "{}", log(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn the_release_workflow_builds_exactly_the_assets_the_action_installs_and_the_docs_list() {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let wf: Value = common::ci_yaml(&text);
    let mut built: Vec<String> = wf["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["target"].as_str().unwrap().to_string())
        .collect();
    built.sort();
    let mut targets = TARGETS.map(str::to_string).to_vec();
    targets.sort();
    assert_eq!(built, targets);
    let mut installed: Vec<String> = [
        ("Linux", "X64"),
        ("Linux", "ARM64"),
        ("macOS", "X64"),
        ("macOS", "ARM64"),
    ]
    .iter()
    .map(|(os, arch)| installer_asset(os, arch))
    .collect();
    installed.sort();
    let mut expected: Vec<String> = TARGETS.iter().map(|t| format!("mansign-{t}")).collect();
    expected.sort();
    assert_eq!(installed, expected);
    assert_eq!(
        installer_asset("Windows", "X64"),
        "",
        "no Windows binary: cargo fallback"
    );
    let doc = releases_doc();
    for asset in &expected {
        assert!(
            doc.contains(&format!("| `{asset}` |")),
            "docs/releases.md lacks {asset}"
        );
    }
}

#[test]
fn the_release_workflow_signs_with_mansign_in_a_job_that_alone_has_id_token_write() {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let wf: Value = common::ci_yaml(&text);
    assert_eq!(wf["on"]["push"]["tags"][0], "v*");
    for (name, job) in wf["jobs"].as_object().unwrap() {
        let perms = &job["permissions"];
        let id_token = perms["id-token"].as_str() == Some("write");
        let contents_write = perms["contents"].as_str() == Some("write");
        let packages_write = perms["packages"].as_str() == Some("write");
        assert_eq!(id_token, name == "sign", "job {name}: id-token");
        assert_eq!(contents_write, name == "publish", "job {name}: contents");
        assert_eq!(packages_write, name == "image", "job {name}: packages");
    }
    let sign_steps = wf["jobs"]["sign"]["steps"].to_string();
    assert!(sign_steps.contains("scripts/release-checksums.sh dist"));
    assert!(sign_steps.contains("scripts/release-sign.sh dist"));
    let publish = wf["jobs"]["publish"]["steps"].to_string();
    assert!(publish.contains("gh release create"));
    assert!(publish.contains("sha256sum --check"));
}

/// The `run:` script of the release workflow's step whose name starts with `prefix`.
fn workflow_step(job: &str, prefix: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let wf: Value = common::ci_yaml(&text);
    wf["jobs"][job]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .unwrap_or_else(|| panic!("release.yml: job {job} has no step {prefix:?}"))
        .clone()
}

#[test]
fn the_sign_job_packs_krew_archives_and_signs_every_asset_the_build_jobs_upload() {
    // The sign step's own script, run as the job runs it: a checkout (scripts/, plugins/)
    // with the build jobs' artifacts in dist/ (this run's binary under each target's name,
    // and an SBOM file per target standing in for cargo cyclonedx's).
    let stack = Stack::start();
    let version = doc_version();
    let step = workflow_step("sign", "krew archives and manifest");
    let script = step["run"].as_str().unwrap();
    let checkout = tempfile::tempdir().unwrap();
    for dir in ["scripts", "plugins"] {
        std::os::unix::fs::symlink(repo().join(dir), checkout.path().join(dir)).unwrap();
    }
    let built = release_dir(checkout.path(), "built");
    let dist = checkout.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    for target in TARGETS {
        std::fs::copy(built.join(ASSET), dist.join(format!("mansign-{target}"))).unwrap();
        std::fs::write(
            dist.join(format!("mansign-{target}.cdx.json")),
            format!("{{\"bomFormat\":\"CycloneDX\",\"specVersion\":\"1.5\",\"metadata\":{{\"component\":{{\"name\":\"mansign\",\"description\":\"{target}\"}}}},\"components\":[]}}\n"),
        )
        .unwrap();
    }
    // The image job's artifact (what scripts/release-image.sh writes after the push).
    let image = image_reference(&version);
    std::fs::write(dist.join("mansign-image.txt"), format!("{image}\n")).unwrap();
    let github = StubServer::token_endpoint(github_token(&stack, &release_identity(&version)));
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script).current_dir(checkout.path());
    let out = run(as_release_job(&mut cmd, &github, &stack, &version).env("TAG", &version));
    assert!(out.status.success(), "{}", log(&out));

    // What the publish job uploads: every asset, each with a bundle, all in SHA256SUMS.
    let mut expected: Vec<String> = vec![
        "mansign-image.txt".to_string(),
        "mansign.krew.yaml".to_string(),
    ];
    for target in TARGETS {
        expected.push(format!("mansign-{target}"));
        expected.push(format!("mansign-{target}.cdx.json"));
        expected.push(format!("kubectl-mansign-{target}.tar.gz"));
    }
    expected.sort();
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    let listed: Vec<String> = sums
        .lines()
        .map(|l| l.split_once("  ").unwrap().1.to_string())
        .collect();
    assert_eq!(listed, expected, "SHA256SUMS");
    for asset in expected
        .iter()
        .chain(std::iter::once(&"SHA256SUMS".to_string()))
    {
        assert!(
            dist.join(format!("{asset}.sigstore.json")).is_file(),
            "{asset} has no bundle"
        );
    }
    // The manifest names each archive by the SHA-256 SHA256SUMS has for it.
    let manifest = std::fs::read_to_string(dist.join("mansign.krew.yaml")).unwrap();
    assert!(
        manifest.contains(&format!("version: \"{version}\"")),
        "{manifest}"
    );
    for line in sums.lines().filter(|l| l.contains("kubectl-mansign-")) {
        let (sum, name) = line.split_once("  ").unwrap();
        assert!(
            manifest.contains(&format!("sha256: \"{sum}\"")),
            "{name}: {manifest}"
        );
        assert!(
            manifest.contains(&format!("/{version}/{name}")),
            "{name}: {manifest}"
        );
    }

    // The documented krew and SBOM checks pass on the published files; an edited manifest
    // fails.
    let server = FileServer::start(checkout.path());
    let user = tempfile::tempdir().unwrap();
    std::fs::rename(&dist, checkout.path().join(&version)).unwrap();
    let krew = doc_block("krew").replace(
        "mansign verify-bundle ",
        "mansign verify-bundle --trusted-root \"$TRUSTED_ROOT\" ",
    );
    let prelude = format!("VERSION={version}\nBASE={}\n", server.url);
    let out = doc_shell(&stack, user.path(), &format!("{prelude}{krew}"));
    assert!(out.status.success(), "{}", log(&out));
    // The documented image check prints the digest to pin.
    let out = doc_shell(&stack, user.path(), &format!("{prelude}{}", image_block()));
    assert!(out.status.success(), "image: {}", log(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "image.digest={}",
            image.split_once('@').unwrap().1
        )),
        "{}",
        log(&out)
    );
    let sbom = format!("mansign-{}.cdx.json", TARGETS[0]);
    let out = doc_shell(
        &stack,
        user.path(),
        &format!(
            "{prelude}ASSET={sbom}\ncurl -fsSLO \"$BASE/$VERSION/$ASSET\"\ncurl -fsSLO \"$BASE/$VERSION/$ASSET.sigstore.json\"\n{}",
            verify_blocks().replace(&doc_block("checksum"), "")
        ),
    );
    assert!(out.status.success(), "SBOM: {}", log(&out));
    let edited = checkout.path().join(&version).join("mansign.krew.yaml");
    let text = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, text.replacen("sha256: \"", "sha256: \"0", 1)).unwrap();
    let out = doc_shell(
        &stack,
        user.path(),
        &format!("{prelude}rm -f mansign.krew.yaml*\n{krew}"),
    );
    assert_failed(&out, "an edited krew manifest verified");

    // An image digest file edited after signing (another digest) fails the documented check.
    let edited = checkout.path().join(&version).join("mansign-image.txt");
    std::fs::write(&edited, image_reference_with(&version, 'e') + "\n").unwrap();
    let out = doc_shell(
        &stack,
        user.path(),
        &format!("{prelude}rm -f mansign-image.txt*\n{}", image_block()),
    );
    assert_failed(&out, "an edited image digest file verified");
}

/// The doc's image block with the stack's trust root (the one substitution applies once).
fn image_block() -> String {
    let block = doc_block("image");
    assert_eq!(
        block.matches("mansign verify-bundle ").count(),
        1,
        "{block}"
    );
    block.replace(
        "mansign verify-bundle ",
        "mansign verify-bundle --trusted-root \"$TRUSTED_ROOT\" ",
    )
}

/// What scripts/release-image.sh writes for a tag: the repository, the version without its
/// `v`, and a digest (here made of one repeated hex digit).
fn image_reference_with(tag: &str, digit: char) -> String {
    format!(
        "ghcr.io/mansign/mansign:{}@sha256:{}",
        tag.trim_start_matches('v'),
        digit.to_string().repeat(64)
    )
}

fn image_reference(tag: &str) -> String {
    image_reference_with(tag, 'a')
}

/// The sign step, run as the release job runs it, with only the image job's file in dist:
/// the reference check comes before anything is packed or signed.
fn sign_step_with_image_file(version: &str, content: Option<&str>) -> (Output, tempfile::TempDir) {
    let step = workflow_step("sign", "krew archives and manifest");
    let script = step["run"].as_str().unwrap();
    let checkout = tempfile::tempdir().unwrap();
    let dist = checkout.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    if let Some(content) = content {
        std::fs::write(dist.join("mansign-image.txt"), content).unwrap();
    }
    let out = run(Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(checkout.path())
        .env("TAG", version));
    (out, checkout)
}

#[test]
fn the_sign_job_refuses_an_image_digest_file_that_is_not_this_release() {
    let version = doc_version();
    let good = image_reference(&version);
    let other_version = image_reference("v9.9.9");
    let two_lines = format!("{good}\n{good}\n");
    let by_tag_only = good.split_once('@').unwrap().0.to_string();
    let other_repository = good.replace("ghcr.io/mansign/", "ghcr.io/someone/");
    let short_digest = good[..good.len() - 1].to_string();
    let dot_as_any = good.replacen('.', "x", 2).replacen("ghcrxio", "ghcr.io", 1);
    let cases: [(&str, Option<&str>); 7] = [
        ("missing", None),
        ("another version", Some(&other_version)),
        ("two references", Some(&two_lines)),
        ("a tag without a digest", Some(&by_tag_only)),
        ("another repository", Some(&other_repository)),
        ("a short digest", Some(&short_digest)),
        (
            "a version whose dots are other characters",
            Some(&dot_as_any),
        ),
    ];
    for (what, content) in cases {
        let (out, checkout) = sign_step_with_image_file(&version, content);
        assert!(!out.status.success(), "{what}: accepted\n{}", log(&out));
        assert!(
            log(&out).contains("mansign-image.txt is not one reference"),
            "{what}: {}",
            log(&out)
        );
        assert!(
            !checkout.path().join("dist/SHA256SUMS").exists(),
            "{what}: signed anyway"
        );
    }
}

/// The step of `job` that uses the action `prefix` (`actions/upload-artifact@`).
fn step_using<'a>(job: &'a Value, prefix: &str) -> &'a Value {
    job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(prefix)))
        .unwrap_or_else(|| panic!("no step uses {prefix}"))
}

#[test]
fn the_release_workflow_pushes_the_image_that_the_chart_and_deploy_name_from_the_built_binaries() {
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let wf: Value = common::ci_yaml(&text);
    let image = &wf["jobs"]["image"];
    assert_eq!(image["needs"], "build");
    assert_eq!(
        image["permissions"],
        serde_json::json!({"contents": "read", "packages": "write"})
    );
    let step = workflow_step("image", "Build and push the image");
    let run_text = step["run"].as_str().unwrap();
    assert!(
        run_text.contains("bash scripts/release-image.sh \"$TAG\" bin dist/mansign-image.txt"),
        "{run_text}"
    );
    assert!(run_text.contains("docker login ghcr.io"), "{run_text}");
    let download = step_using(image, "actions/download-artifact@");
    assert_eq!(download["with"]["pattern"], "mansign-*-linux-musl");
    assert_eq!(download["with"]["path"], "bin");
    let upload = step_using(image, "actions/upload-artifact@");
    assert_eq!(upload["with"]["name"], "mansign-image");
    assert_eq!(upload["with"]["path"], "dist/mansign-image.txt");
    // The sign job waits for it and downloads it with the binaries (`mansign-*`).
    assert_eq!(
        wf["jobs"]["sign"]["needs"],
        serde_json::json!(["build", "image"])
    );
    let sign_download = step_using(&wf["jobs"]["sign"], "actions/download-artifact@");
    assert_eq!(sign_download["with"]["pattern"], "mansign-*");
    // Both Linux targets the build matrix makes are in the image, by docker's names.
    let script = std::fs::read_to_string(repo().join("scripts/release-image.sh")).unwrap();
    for target in TARGETS.iter().filter(|t| t.contains("linux-musl")) {
        assert!(
            script.contains(&format!(":{target}")),
            "release-image.sh lacks {target}"
        );
    }
    let dockerfile = std::fs::read_to_string(repo().join("Dockerfile.release")).unwrap();
    assert!(
        dockerfile.contains("COPY --chmod=0755 bin/${TARGETARCH}/mansign /usr/local/bin/mansign")
    );
    assert!(
        !dockerfile.contains("\nRUN "),
        "no RUN: the image copies the signed binary only"
    );
    // One repository and one version everywhere the image is named.
    let repository = script
        .lines()
        .find_map(|l| l.strip_prefix("repository="))
        .expect("repository= in release-image.sh");
    let values: Value = common::ci_yaml(
        &std::fs::read_to_string(repo().join("charts/mansign/values.yaml")).unwrap(),
    );
    assert_eq!(values["image"]["repository"], repository);
    let chart: Value = common::ci_yaml(
        &std::fs::read_to_string(repo().join("charts/mansign/Chart.yaml")).unwrap(),
    );
    let kustomization: Value = common::ci_yaml(
        &std::fs::read_to_string(repo().join("deploy/base/kustomization.yaml")).unwrap(),
    );
    let images = &kustomization["images"][0];
    assert_eq!(images["name"], "mansign");
    assert_eq!(images["newName"], repository);
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(images["newTag"], version);
    assert_eq!(chart["appVersion"], version);
    assert_eq!(doc_version(), format!("v{version}"));
}

#[test]
fn release_image_sh_refuses_a_tag_that_is_not_a_release_and_missing_binaries_before_any_push() {
    let script = repo().join("scripts/release-image.sh");
    let dir = tempfile::tempdir().unwrap();
    // A `docker` that would record being called: it must never be reached.
    let bin = dir.path().join("path");
    std::fs::create_dir_all(&bin).unwrap();
    let called = dir.path().join("docker-called");
    std::fs::write(
        bin.join("docker"),
        format!("#!/bin/sh\ntouch '{}'\nexit 1\n", called.display()),
    )
    .unwrap();
    let mut perms = std::fs::metadata(bin.join("docker")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(bin.join("docker"), perms).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let binaries = dir.path().join("bin");
    std::fs::create_dir_all(&binaries).unwrap();
    std::fs::write(binaries.join("mansign-x86_64-unknown-linux-musl"), b"x").unwrap();
    let out_file = dir.path().join("mansign-image.txt");
    for (tag, what) in [
        ("main", "a branch"),
        ("0.1.0", "no v"),
        ("v0.1", "two parts"),
    ] {
        let out = run(Command::new("bash")
            .arg(&script)
            .arg(tag)
            .arg(&binaries)
            .arg(&out_file)
            .env("PATH", &path));
        assert_eq!(out.status.code(), Some(2), "{what}: {}", log(&out));
        assert!(log(&out).contains("is not a release tag"), "{}", log(&out));
    }
    let out = run(Command::new("bash")
        .arg(&script)
        .arg("v0.1.0")
        .arg(&binaries)
        .arg(&out_file)
        .env("PATH", &path));
    assert_eq!(out.status.code(), Some(2), "{}", log(&out));
    assert!(
        log(&out).contains("mansign-aarch64-unknown-linux-musl is missing"),
        "{}",
        log(&out)
    );
    assert!(
        !called.exists(),
        "docker ran before the inputs were checked"
    );
    assert!(!out_file.exists(), "a digest file was written");
}

#[test]
fn release_binaries_are_built_with_cargo_auditable_and_each_gets_a_cyclonedx_sbom() {
    let build = |prefix: &str| {
        workflow_step("build", prefix)["run"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        build("Build").contains("cargo auditable build --release --locked --target \"$TARGET\"")
    );
    let tools = build("Release tooling");
    for tool in ["cargo-auditable", "cargo-cyclonedx", "rust-audit-info"] {
        assert!(
            tools.contains(&format!("cargo install --locked \"{tool}@$")),
            "{tool} is installed --locked at a pinned version: {tools}"
        );
    }
    let sbom = build("CycloneDX SBOM");
    assert!(sbom.contains("--target \"$TARGET\"") && sbom.contains("--format json"));
    assert!(build("Check the embedded dependency list").contains("rust-audit-info"));
    let text = std::fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    let wf: Value = common::ci_yaml(&text);
    let uploaded = wf["jobs"]["build"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .unwrap()["with"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        uploaded.contains("dist/mansign-${{ matrix.target }}.cdx.json"),
        "{uploaded}"
    );
    // The build runs with the versions the env pins, and those are exact.
    for var in [
        "CARGO_AUDITABLE_VERSION",
        "CARGO_CYCLONEDX_VERSION",
        "RUST_AUDIT_INFO_VERSION",
    ] {
        let v = wf["jobs"]["build"]["env"][var]
            .as_str()
            .unwrap_or_else(|| panic!("{var}"));
        assert!(
            v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{var}={v} is an exact version"
        );
    }
}
