// Package install tests the two installs without OLM as a user runs them, on a real API server
// (envtest): dist/install.yaml applied with `kubectl apply --server-side` (the envtest kubectl;
// strict field validation) and removed with `make undeploy`'s commands, and the Helm chart
// dist/chart installed, upgraded and uninstalled with the Helm library's own actions (which
// validate every object strictly against the API server). After each install the manager binary
// runs with the Deployment's arguments and environment, authenticated as the Deployment's
// ServiceAccount, so it holds exactly the RBAC that install granted; it must reconcile the
// samples (config/samples) in what it watches, leave alone what it does not, and have no
// request refused (the API server's audit log, test/testenv). Uninstalling keeps the CRDs and
// every ControlPlane and KubeOperaApp.
//
// It also checks that the installer, the chart and the OLM bundle agree: the same image
// reference, CRDs, RBAC rules, alerts and manager container.
//
// It is its own Go module so that the Helm library (and the Kubernetes CLI libraries it brings)
// is compiled only here and never constrains the operator's module graph or appears in its SBOM.
// `make test-install` runs it; `make test` calls that target.
package install
