package controlplane_test

// rbacUnusedHere lists the permissions of rbac.go this suite never exercises, each with the
// reason it stays (testenv.CheckRBACUse fails the suite on any other unused permission, and on
// any request of the reconciler the bundle's RBAC refuses).
var rbacUnusedHere = map[string]string{}
