// Package render turns a KubeOperaApp into what the App Controller writes: the manifests committed
// to Git (Deployment, Service, Ingress and a kustomization.yaml listing them) and the Flux
// GitRepository and Kustomization applied in the tenant vCluster.
//
// Everything here is a pure function of the app: no client, no I/O, no clock. The same spec
// always renders byte-identical files (keys sorted, no status, no creationTimestamp, no empty
// maps), so re-rendering an unchanged app never produces a Git diff.
//
// What is never rendered: Namespace objects (the controller creates the app namespace in the
// vCluster directly; a Namespace under a pruning Kustomization could be deleted by Flux) and
// secret material (the registry pull Secret and the Git credentials are copied through the
// vCluster API, never committed).
package render
