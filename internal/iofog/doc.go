// Package iofog is a small, typed client for the subset of the ioFog/Datasance
// Controller REST API (base path /api/v3) that the operator needs: health,
// login, default router and NATS hub registration, NATS bootstrap material and
// CA import. The contract it follows is shared/spec/controller-api.md; the
// package fake next to it implements the same contract for tests.
//
// Design choices, and why they differ from the upstream iofog-go-sdk:
//
//   - New performs no I/O. The SDK calls GET /status inside its constructor,
//     which hides a network call (and its failure) in what looks like a cheap
//     value constructor and doubles the status traffic. Here the reconciler
//     decides when to call Status and how to react to its failure.
//   - TLS certificate verification cannot be disabled. There is no insecure
//     option, and New rejects an injected *http.Client whose transport skips
//     verification. A Controller with a private CA is reached with WithRootCAs.
//   - Every call takes a context and is bounded by the client timeout (10 s by
//     default), and response bodies are read through a size limit.
//   - Errors are classified by type and status code, never by message text:
//     every non-2xx answer is an *APIError; errors.Is(err, ErrNotFound) holds
//     for a 404, errors.Is(err, ErrConflict) for a duplicate, and
//     errors.Is(err, ErrInvalidCredentials) for a rejected login. A 2xx answer
//     whose body cannot be decoded wraps ErrInvalidResponse. IsRetryable tells
//     a reconciler whether to requeue or to surface the error.
//   - The Controller answers a duplicate POST /certificates/ca with HTTP 500
//     and the error class ConflictError (the route maps ConflictError to a
//     constant that does not exist, so Express falls back to 500); the intent,
//     and newer versions, say 409. Both are recognised as ErrConflict (the
//     operator then compares the Controller's copy on its next pass).
//   - Error values never carry the Authorization header, the bearer token, or
//     login secrets: request headers are not part of any error, and the
//     login helpers scrub the submitted secrets from the server's answer.
//
// A Client is safe for concurrent use; SetToken may be called while requests
// are in flight.
package iofog
