package natsconf

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
)

var (
	ordinalRoutePrefix = "nats://" + StatefulSetName + "-"
	ordinalRouteSuffix = fmt.Sprintf(".%s:%d", HeadlessServiceName, ClusterPort)
)

// OrdinalRoute is the cluster route of StatefulSet pod i:
// nats://nats-<i>.nats-headless:6222.
func OrdinalRoute(i int) string {
	return fmt.Sprintf("%s%d%s", ordinalRoutePrefix, i, ordinalRouteSuffix)
}

// isOrdinalRoute reports whether route has the shape of an OrdinalRoute
// (prefix, decimal digits, suffix; docs/controlplane.md#nats-server-configuration). Such routes are the operator's
// and are regenerated from the replica count, never carried over.
func isOrdinalRoute(route string) bool {
	mid, ok := strings.CutPrefix(route, ordinalRoutePrefix)
	if !ok {
		return false
	}
	mid, ok = strings.CutSuffix(mid, ordinalRouteSuffix)
	return ok && mid != "" && strings.Trim(mid, "0123456789") == ""
}

// Routes returns cluster.routes for replicas pods given the previous
// server.conf: the ordinal routes of pods 0…replicas-1 in ascending order,
// then every other route of existing (e.g. added by the Controller for
// agents) in its existing order. Ordinal routes found in existing are
// dropped (the current ones are regenerated, stale ones vanish on scale-down),
// and duplicates and blank entries are removed. If existing is empty or
// cannot be read, the result is the ordinal routes alone.
func Routes(replicas int, existing string) []string {
	routes := make([]string, 0, max(replicas, 0))
	seen := make(map[string]bool)
	for i := range replicas {
		r := OrdinalRoute(i)
		routes = append(routes, r)
		seen[r] = true
	}
	for _, r := range existingRoutes(existing) {
		r = strings.TrimSpace(r)
		if r == "" || seen[r] || isOrdinalRoute(r) {
			continue
		}
		seen[r] = true
		routes = append(routes, r)
	}
	return routes
}

// variableRef finds NATS variable references ($NAME) in a config file.
var variableRef = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// includeDirective finds a NATS "include <file>" directive.
var includeDirective = regexp.MustCompile(`(?i)(^|[\s{;,])include\s`)

// existingRoutes reads cluster.routes from a previous server.conf with the
// NATS server's own parser (parseConf). It returns nil when existing is empty
// or unreadable.
func existingRoutes(existing string) []string {
	parsed, ok := parseConf(existing, nil)
	if !ok {
		return nil
	}
	cluster, _ := parsed["cluster"].(map[string]any)
	switch routes := cluster["routes"].(type) {
	case []any:
		out := make([]string, 0, len(routes))
		for _, r := range routes {
			if s, ok := r.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		return []string{routes}
	default:
		return nil
	}
}

// parseConf reads a server.conf with the NATS server's own parser, so every
// syntax NATS accepts (comments, '=' or ':' or no separator, quoted or bare
// strings, multi-line arrays) is handled.
//
// Two features of that parser are neutralised first:
//   - Variable references: server_name is the literal $SELFNAME and
//     jetstream.key the literal $JETSTREAM_KEY, resolved by the pod, and
//     upstream files also reference $JETSTREAM_PREV_KEY. The parser fails on
//     undefined variables and otherwise falls back to this process's
//     environment. Every referenced name is therefore defined at the top of
//     the document (block scoping makes top-level keys visible everywhere):
//     as its value in env, the pod's environment as far as the caller knows
//     it, or as "" (the same for every file).
//   - include directives would make the parser read files; a file using them
//     is treated as unreadable instead (this package does no I/O).
//
// ok is false when existing is empty or unreadable.
func parseConf(existing string, env map[string]string) (map[string]any, bool) {
	if strings.TrimSpace(existing) == "" || includeDirective.MatchString(existing) {
		return nil, false
	}
	var defs strings.Builder
	defined := make(map[string]bool)
	for _, m := range variableRef.FindAllStringSubmatch(existing, -1) {
		if name := m[1]; !defined[name] && !strings.EqualFold(name, "include") {
			defined[name] = true
			fmt.Fprintf(&defs, "%s: %s\n", name, quote(env[name]))
		}
	}
	parsed, err := conf.Parse(defs.String() + existing)
	if err != nil {
		return nil, false
	}
	for name := range defined {
		delete(parsed, name)
	}
	return parsed, true
}
