package routerconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// entry is one [entityType, {attributes}] pair of skrouterd.json. Attribute
// structs list their fields in the order they are written.
type entry struct {
	typ   string
	attrs any
}

func (e entry) MarshalJSON() ([]byte, error) {
	return marshalPair(e.typ, e.attrs)
}

type routerAttrs struct {
	ID                 string `json:"id"`
	Mode               string `json:"mode"`
	HelloMaxAgeSeconds string `json:"helloMaxAgeSeconds"`
	Metadata           string `json:"metadata"` // a JSON document in a string
}

type routerMetadata struct {
	ID            string `json:"id"`
	Version       string `json:"version"`
	Platform      string `json:"platform"`
	ConfigVersion string `json:"iofog-config"` // key must equal ConfigVersionKey
}

type siteAttrs struct {
	Name      string `json:"name"`
	Platform  string `json:"platform"`
	Namespace string `json:"namespace"`
	Version   string `json:"version"`
}

type sslProfileAttrs struct {
	Name           string `json:"name"`
	CertFile       string `json:"certFile"`
	PrivateKeyFile string `json:"privateKeyFile,omitempty"`
	CACertFile     string `json:"caCertFile,omitempty"`
}

type listenerAttrs struct {
	Name             string `json:"name"`
	Role             string `json:"role,omitempty"`
	Host             string `json:"host,omitempty"`
	Port             int    `json:"port"`
	SSLProfile       string `json:"sslProfile,omitempty"`
	SASLMechanisms   string `json:"saslMechanisms,omitempty"`
	AuthenticatePeer bool   `json:"authenticatePeer,omitempty"`
	HTTP             bool   `json:"http,omitempty"`
	HTTPRootDir      string `json:"httpRootDir,omitempty"`
	Healthz          bool   `json:"healthz,omitempty"`
	Metrics          bool   `json:"metrics,omitempty"`
}

type addressAttrs struct {
	Prefix       string `json:"prefix"`
	Distribution string `json:"distribution"`
}

type logAttrs struct {
	Module string `json:"module"`
	Enable string `json:"enable"`
}

// Render returns skrouterd.json for a ControlPlane in namespace: the table of
// docs/controlplane.md#router-configuration, as an indented JSON array with a fixed entry and key order.
func Render(namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("render skrouterd.json: namespace is empty")
	}
	metadata, err := json.Marshal(routerMetadata{
		ID:            RouterID,
		Version:       siteVersion,
		Platform:      platform,
		ConfigVersion: ConfigVersion,
	})
	if err != nil {
		return nil, fmt.Errorf("render skrouterd.json: encode router metadata: %w", err)
	}
	entries := []entry{
		{typeRouter, routerAttrs{ID: RouterID, Mode: "interior", HelloMaxAgeSeconds: "3", Metadata: string(metadata)}},
		{typeSite, siteAttrs{Name: RouterID, Platform: platform, Namespace: namespace, Version: siteVersion}},
		{typeSSLProfile, sslProfileAttrs{Name: SystemDefaultProfile, CertFile: systemCABundle}},
		{typeSSLProfile, serverProfile(SiteServerProfile)},
		{typeSSLProfile, serverProfile(LocalServerProfile)},
		{typeListener, listenerAttrs{
			Name: edgeListenerName, Role: "edge", Port: EdgePort,
			SSLProfile: SiteServerProfile, SASLMechanisms: "EXTERNAL", AuthenticatePeer: true,
		}},
		{typeListener, listenerAttrs{Name: amqpListenerName, Host: "localhost", Port: AMQPPort}},
		{typeListener, listenerAttrs{
			Name: amqpsListenerName, Port: AMQPSPort,
			SSLProfile: LocalServerProfile, SASLMechanisms: "EXTERNAL", AuthenticatePeer: true,
		}},
		{typeListener, listenerAttrs{
			Name: httpListenerName, Role: "normal", Port: HTTPPort,
			HTTP: true, HTTPRootDir: "disabled", Healthz: true, Metrics: true,
		}},
		{typeListener, listenerAttrs{
			Name: interRouterListenerName, Role: "inter-router", Port: InterRouterPort,
			SSLProfile: SiteServerProfile, SASLMechanisms: "EXTERNAL", AuthenticatePeer: true,
		}},
		{typeAddress, addressAttrs{Prefix: "mc", Distribution: "multicast"}},
		{typeLog, logAttrs{Module: "ROUTER_CORE", Enable: "error+"}},
	}
	out, err := encodeIndented(entries)
	if err != nil {
		return nil, fmt.Errorf("render skrouterd.json: %w", err)
	}
	return out, nil
}

// serverProfile is the sslProfile of a server Secret mounted at CertsDir/<name>.
func serverProfile(name string) sslProfileAttrs {
	dir := CertsDir + "/" + name + "/"
	return sslProfileAttrs{
		Name:           name,
		CertFile:       dir + "tls.crt",
		PrivateKeyFile: dir + "tls.key",
		CACertFile:     dir + "ca.crt",
	}
}

// marshalPair encodes [typ, attrs] without HTML escaping.
func marshalPair(typ string, attrs any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([2]any{typ, attrs}); err != nil {
		return nil, fmt.Errorf("encode %s entry: %w", strconv.Quote(typ), err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeIndented writes v as JSON indented by four spaces, without HTML
// escaping (admin entries are copied verbatim), ending in a newline.
func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
