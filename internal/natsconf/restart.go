package natsconf

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// RestartKey identifies the settings of a server.conf that a running nats-server does not
// take over when the image reloads the file (SIGHUP; docs/controlplane.md#nats-reloads): every
// setting but cluster.routes. nats-server reloads routes and TLS files, but refuses a reload
// that changes, among others, leafnodes.advertise, the operator JWT, the ports or the JetStream
// key, and keeps running with the old values; a JetStream store limit may only grow. So two
// files with the same key differ at most in their routes, which the reload applies, and a new
// key needs the pods restarted. The certificates are files the configuration names by path:
// their content is not part of the key. The variables the file refers to are resolved from env,
// the container environment the pods get (JetStreamKeyEnv): a file that names the key and one
// that held it in clear, as earlier versions wrote it, have the same key when the key is the
// same, and a new key in the Secret restarts the pods. ok is false when serverConf cannot be
// read.
func RestartKey(serverConf string, env map[string]string) (key string, ok bool) {
	parsed, ok := parseConf(serverConf, env)
	if !ok {
		return "", false
	}
	if cluster, isMap := parsed["cluster"].(map[string]any); isMap {
		delete(cluster, "routes")
	}
	data, err := json.Marshal(parsed) // map keys are sorted: deterministic
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), true
}
