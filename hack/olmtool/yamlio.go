package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readDocuments reads every non-empty YAML (or JSON) document of a file.
func readDocuments(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	return decodeDocuments(data, path)
}

func decodeDocuments(data []byte, name string) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", name, err)
		}
		if len(doc) > 0 {
			docs = append(docs, doc)
		}
	}
}

// readDocument reads a file that holds exactly one document.
func readDocument(path string) (map[string]any, error) {
	docs, err := readDocuments(path)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: want one YAML document, found %d", path, len(docs))
	}
	return docs[0], nil
}

// writeDocuments writes docs as a multi-document YAML file with sorted keys, after an optional
// comment header, replacing the file atomically.
func writeDocuments(path, header string, docs ...any) error {
	var buf bytes.Buffer
	buf.WriteString(header)
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return fmt.Errorf("marshal %s: %w", path, err)
		}
		buf.Write(b)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".olmtool-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// convert round-trips v through JSON into out (a typed struct or a generic map).
func convert(v, out any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(b, out)
}
