package render

import "k8s.io/apimachinery/pkg/util/intstr"

func intstrName(s string) intstr.IntOrString { return intstr.FromString(s) }
