# engram as a team server: `engram serve --http` on port 8765, packs on the /packs volume.
#
#   docker build -t engram .
#   docker run -d -p 127.0.0.1:8765:8765 -v engram-packs:/packs \
#     -v /etc/engram/users:/etc/engram/users:ro engram
#
# The users file (`token user [read-only]` per line) must be mode 600 and owned by uid
# 10001, the image's user: engram refuses a file group or others can read. See README.md,
# "A team server". (Not built in CI: the CI machine has no container engine.)

FROM rust:1-bookworm AS build
# libssl-dev + pkg-config: git2's https transport for sync (ssh's libssh2 is bundled).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin engram

FROM debian:bookworm-slim
# ca-certificates: https remotes; libssl3: git2's TLS; openssh-client: ssh-keyscan to
# fill known_hosts for an ssh remote.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libssl3 openssh-client \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --create-home --home-dir /home/engram engram \
 && mkdir -p /packs /etc/engram \
 && chown engram:engram /packs
COPY --from=build /src/target/release/engram /usr/local/bin/engram
USER engram
ENV HOME=/home/engram ENGRAM_PACKS_DIR=/packs
VOLUME /packs
EXPOSE 8765
# /healthz answers `ok` without a token; bash's /dev/tcp saves installing curl.
HEALTHCHECK --interval=30s --timeout=5s \
  CMD bash -c 'exec 3<>/dev/tcp/127.0.0.1/8765 && printf "GET /healthz HTTP/1.0\r\n\r\n" >&3 && grep -q "^ok" <&3'
ENTRYPOINT ["engram"]
CMD ["serve", "--http", "0.0.0.0:8765", "--tools", "engram,knowledge,personal,graph,notes,sync", \
     "--users-file", "/etc/engram/users", "--sync-on-start", "--sync-interval", "300"]
