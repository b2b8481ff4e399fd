package natsconf

import "strings"

// confWriter writes NATS config text with two-space indentation.
type confWriter struct {
	b     strings.Builder
	depth int
}

func (w *confWriter) indent() {
	for range w.depth {
		w.b.WriteString("  ")
	}
}

// line writes "key: value"; value must already be quoted where needed.
func (w *confWriter) line(key, value string) {
	w.indent()
	w.b.WriteString(key + ": " + value + "\n")
}

func (w *confWriter) comment(text string) {
	w.indent()
	w.b.WriteString("# " + text + "\n")
}

func (w *confWriter) blank() { w.b.WriteString("\n") }

func (w *confWriter) open(block string) {
	w.indent()
	w.b.WriteString(block + " {\n")
	w.depth++
}

func (w *confWriter) close() {
	w.depth--
	w.indent()
	w.b.WriteString("}\n")
}

// array writes values as a multi-line array of quoted strings.
func (w *confWriter) array(key string, values []string) {
	w.indent()
	w.b.WriteString(key + ": [\n")
	w.depth++
	for i, v := range values {
		w.indent()
		w.b.WriteString(quote(v))
		if i < len(values)-1 {
			w.b.WriteString(",")
		}
		w.b.WriteString("\n")
	}
	w.depth--
	w.indent()
	w.b.WriteString("]\n")
}

// tls writes the tls block for the server Secret mounted at CertsDir/<secret>.
// verify (require client certificates) is on for cluster and leaf
// connections, off for MQTT clients.
func (w *confWriter) tls(secret string, verify bool) {
	dir := CertsDir + "/" + secret + "/"
	w.open("tls")
	w.line("ca_file", quote(dir+"ca.crt"))
	w.line("cert_file", quote(dir+"tls.crt"))
	w.line("key_file", quote(dir+"tls.key"))
	if verify {
		w.line("verify", "true")
	}
	w.line("handshake_first", "true")
	w.line("timeout", quote(tlsTimeout))
	w.close()
}

func (w *confWriter) String() string { return w.b.String() }
