package resources

// TLSSecretSpec describes one generated kubernetes.io/tls Secret: a self-signed CA when CAName
// is empty, otherwise a leaf signed by the CA Secret CAName for hosts.
type TLSSecretSpec struct {
	Name, CommonName string
	CAName           string
	Hosts            []string
}

// IsCA reports whether the Secret is a self-signed CA.
func (t TLSSecretSpec) IsCA() bool { return t.CAName == "" }
