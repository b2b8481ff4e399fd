package app

// Options configure the KubeOperaApp reconciler.
type Options struct {
	// GitCacheDir holds one local clone per (repository, branch).
	GitCacheDir string
}
