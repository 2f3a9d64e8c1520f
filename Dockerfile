# A minimal static image of mansign (the admission webhook, or any other subcommand).
#
# Built from source. Releases push ghcr.io/mansign/mansign:X.Y.Z from Dockerfile.release
# instead (the signed static binaries, no second compilation; docs/releases.md). NOT built in
# CI: the CI machine has no container runtime; tests/it/deploy.rs checks the
# manifests, tests/it/admission_server.rs the binary. Build it yourself:
#   docker build -t ghcr.io/mansign/mansign:0.1.0 .
#
# Stage 1: a static musl binary. No OpenSSL anywhere: TLS is rustls with aws-lc-rs, whose C
# part is compiled by musl-gcc here.
FROM rust:1.88-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools cmake \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked --target x86_64-unknown-linux-musl --bin mansign \
 && install -D -m 0755 target/x86_64-unknown-linux-musl/release/mansign /out/mansign

# Stage 2: nothing but the binary (distroless "static": CA certificates, /etc/passwd with
# the nonroot user 65532, no shell). The webhook needs no writable file system.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mansign /usr/local/bin/mansign
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/mansign"]
CMD ["admission", "serve", "--help"]
