# syntax=docker/dockerfile:1
# The operator image for users with a container engine:
#
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=0.2.0 \
#     -t ghcr.io/kubeopera/kubeopera-operator:v0.2.0 .
#
# `make image` builds the same image without a container engine (hack/release/ociimage: the same
# static binary, entrypoint, non-root user and OCI labels on an empty base); the image test in
# hack/release checks that this file and that builder agree. The build runs on the build
# platform and cross-compiles, so no emulator is needed for arm64.

# The Go toolchain of go.mod's toolchain line.
ARG GO_VERSION=1.26.10

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/kubeopera-operator .

# distroless "static": CA certificates, tzdata, /etc/passwd with the nonroot user 65532, no shell.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.source="https://github.com/kubeopera/kubeopera-operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.title="kubeopera-operator" \
      org.opencontainers.image.description="Kubernetes operator for Datasance PoT / ioFog control planes and tenant applications delivered through Git and Flux"
COPY --from=build /out/kubeopera-operator /kubeopera-operator
USER 65532:65532
ENTRYPOINT ["/kubeopera-operator"]
