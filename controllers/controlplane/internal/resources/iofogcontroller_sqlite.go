package resources

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// AnnotationSQLiteMountConfirmed on a ControlPlane ("true") confirms that a person took the step
// SQLiteMountChange names, so the Controller may be rolled onto the claim at SQLiteDataDir.
const AnnotationSQLiteMountConfirmed = "datasance.com/sqlite-mount-confirmed"

// LegacySQLiteMount returns the path at which the live Controller Deployment mounts claim
// controller-sqlite when it is not SQLiteDataDir: a Deployment of an earlier operator version
// or of the Datasance operator, which mounted the claim at the 3.7 image's package directory.
// "" when there is no such mount.
func LegacySQLiteMount(live *appsv1.Deployment) string {
	pod := &live.Spec.Template.Spec
	volume := ""
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == sqlitePVCName {
			volume = v.Name
		}
	}
	if volume == "" {
		return ""
	}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == volume && m.MountPath != SQLiteDataDir && m.MountPath != SQLiteDataDir+"/" {
				return m.MountPath
			}
		}
	}
	return ""
}

// SQLiteMountChange says why rolling the Controller from a claim mounted at mount (live's) onto
// SQLiteDataDir would lose the database, and what a person does first, judged by the image the
// live pods run: a 3.8+ Controller never wrote to the claim there (its database is on the pod's
// filesystem and goes with the pod), a 3.7 one wrote a database that 3.8+ cannot read. ns and
// name are the ControlPlane's.
func SQLiteMountChange(cp *datasancev3.ControlPlane, live *appsv1.Deployment, mount string) string {
	image := ""
	if c := live.Spec.Template.Spec.Containers; len(c) > 0 {
		image = c[0].Image
	}
	confirm := fmt.Sprintf("then confirm with `kubectl -n %s annotate controlplane %s %s=true`", cp.Namespace, cp.Name, AnnotationSQLiteMountConfirmed)
	v, _, known := controllerVersion(image)
	at38 := known && (v[0] > 3 || v[0] == 3 && v[1] >= 8)
	switch {
	case at38:
		return fmt.Sprintf("Deployment controller runs %s with claim %s at the 3.7 path %s, where this image does not keep its database: "+
			"the live database is on the pod's filesystem and the rollout onto %s would lose it. Copy it onto the claim first: "+
			"`kubectl -n %s exec deploy/controller -- sh -c 'cp -a %s/. %s/'` (docs/controlplane.md#sqlite-database), %s",
			image, sqlitePVCName, mount, SQLiteDataDir, cp.Namespace, controller38SQLiteDir, strings.TrimRight(mount, "/"), confirm)
	case known:
		return fmt.Sprintf("Deployment controller runs %s, a 3.7 Controller, whose database is on claim %s (at %s); "+
			"the Controller this operator runs (3.8 and later) cannot migrate a 3.7 database. Keep running 3.7 with the operator "+
			"version that ran it, or move the 3.7 file away on the claim and accept a new database (docs/controlplane.md#sqlite-database), %s",
			image, sqlitePVCName, mount, confirm)
	default:
		return fmt.Sprintf("Deployment controller runs %s with claim %s at %s, not at %s: a 3.8+ image keeps its database on the "+
			"pod's filesystem there (copy it onto the claim first), a 3.7 image wrote a database 3.8+ cannot read "+
			"(docs/controlplane.md#sqlite-database); %s",
			image, sqlitePVCName, mount, SQLiteDataDir, confirm)
	}
}

// controller38SQLiteDir is where a 3.8+ Controller image keeps its SQLite database without
// SQLITE_STORAGE_DIR: the sqlite_files directory of its npm package.
const controller38SQLiteDir = "/home/runner/.npm-global/lib/node_modules/controller/src/data/sqlite_files"
