//go:build race

package architecture

// raceBuild says whether this test binary was built with the race detector.
const raceBuild = true
