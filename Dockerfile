# warren's container image: one image for the executor and the workers, the subcommand as the
# argument (`docker run IMAGE executor`, `docker run IMAGE worker --name w1`; k8s/ passes args).
#
# It is built from the same steps as the Debian package: `scripts/deps --build`, then
# `scripts/package` (cmake for the prefix /usr, build, cpack, which runs `cmake --install`); the
# runtime stage installs that package, so the image holds exactly the package's files and
# dependencies. No image can be built where the tests run: tests/build/dockerfile.sh checks these
# steps against scripts/deps, scripts/package and the package, and
# tests/integration/deploy_package.sh installs the same package and runs it.
#
# PID 1: no init, no tini. warren handles SIGTERM, SIGINT and SIGQUIT itself (the kernel delivers
# to PID 1 only signals it handles), and the worker reaps every child process (waitpid(-1)), so
# handlers' orphans leave no zombies.

FROM debian:12-slim AS build
WORKDIR /src
COPY scripts/deps scripts/deps
RUN bash scripts/deps --build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN bash scripts/package --out /out

FROM debian:12-slim
# The user first, with the id the Kubernetes manifests run as; the package's postinst keeps it.
# The signing key its postinst makes is removed: an image is shared, a key is not; a container
# gets its key at /var/lib/warren/signing.key from outside (k8s/: a Secret).
RUN groupadd --system --gid 10001 warren \
    && useradd --system --uid 10001 --gid warren --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin warren
COPY --from=build /out/ /tmp/warren-deb/
RUN apt-get update \
    && apt-get install -y --no-install-recommends /tmp/warren-deb/warren_*.deb \
    && rm -rf /var/lib/apt/lists/* /tmp/warren-deb \
    && rm -f /var/lib/warren/signing.key
ENV WARREN_CONFIG=/etc/warren/warren.conf
USER 10001:10001
ENTRYPOINT ["/usr/bin/warren"]
CMD ["--help"]
