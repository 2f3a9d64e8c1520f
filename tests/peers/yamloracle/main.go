// Command yamloracle reads manifests exactly as `kubectl apply -f FILE` does and prints the
// objects kubectl would send, so mansign's reader can be held to kubectl's (issue 22).
//
// It does not re-implement kubectl's reading: it runs the same code. `kubectl apply` builds
// its objects with the cli-runtime resource builder (k8s.io/kubectl v0.36.2,
// pkg/cmd/apply/apply.go, ApplyOptions.GetObjects):
//
//	o.Builder.Unstructured().Schema(o.Validator).ContinueOnError().
//		NamespaceParam(o.Namespace).DefaultNamespace().
//		FilenameParam(o.EnforceNamespace, &o.DeleteOptions.FilenameOptions).
//		LabelSelectorParam(o.Selector).Flatten().Do().Infos()
//
// Here the same builder (k8s.io/cli-runtime v0.36.3, pkg/resource/builder.go) runs locally
// (NewLocalBuilder: no REST mapping, no server), which reads a file through
//   - FileVisitor.Visit (pkg/resource/visitor.go): a UTF-8/UTF-16 BOM override
//     (golang.org/x/text unicode.BOMOverride),
//   - StreamVisitor.Visit: k8s.io/apimachinery/pkg/util/yaml.NewYAMLOrJSONDecoder(r, 4096)
//     into runtime.RawExtension (YAML documents converted by sigs.k8s.io/yaml.YAMLToJSON),
//     trimmed, empty and `null` documents skipped,
//   - mapper.infoForData: metadataValidatingDecoder{unstructured.UnstructuredJSONScheme}
//     (pkg/resource/metadata_decoder.go): Kind and apiVersion required, metadata must decode
//     into ObjectMeta,
//   - FlattenListVisitor: a `List` becomes its items.
//
// What it leaves out changes no reading: schema validation (client-side validation is off
// by default since kubectl 1.25; the server validates), the namespace defaulting and the
// label selector.
//
// Usage:
//
//	yamloracle FILE|-      print each object as canonical JSON (sorted keys), one a line;
//	                       on an error print it on stderr and exit 1
//	yamloracle -batch      read lines from stdin, each the base64 (standard alphabet) of one
//	                       file's bytes; answer one JSON line each: {"objects":[...]} or
//	                       {"error":"..."} (the file is written to a temporary path and read
//	                       by the builder, as kubectl reads -f PATH)
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"
)

// read returns the objects kubectl apply -f path would send, in order.
func read(path string) ([]interface{}, error) {
	infos, err := resource.NewLocalBuilder().
		Unstructured().
		ContinueOnError().
		FilenameParam(false, &resource.FilenameOptions{Filenames: []string{path}}).
		Flatten().
		Do().
		Infos()
	if err != nil {
		return nil, err
	}
	objects := make([]interface{}, 0, len(infos))
	for _, info := range infos {
		switch o := info.Object.(type) {
		case *unstructured.Unstructured:
			objects = append(objects, o.Object)
		case *unstructured.UnstructuredList:
			objects = append(objects, o.UnstructuredContent())
		default:
			return nil, fmt.Errorf("yamloracle: unexpected object type %T", info.Object)
		}
	}
	return objects, nil
}

// canonical encodes v as JSON with sorted map keys (encoding/json sorts them) and without
// HTML escaping.
func canonical(v interface{}) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func batch(in io.Reader, out io.Writer) error {
	dir, err := os.MkdirTemp("", "yamloracle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "input.yaml")
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 0, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	defer w.Flush()
	for scanner.Scan() {
		text, err := base64.StdEncoding.DecodeString(scanner.Text())
		if err != nil {
			return fmt.Errorf("yamloracle: input line is not base64: %v", err)
		}
		if err := os.WriteFile(path, text, 0o600); err != nil {
			return err
		}
		answer := map[string]interface{}{}
		objects, err := read(path)
		if err != nil {
			answer["error"] = err.Error()
		} else {
			answer["objects"] = objects
		}
		line, err := canonical(answer)
		if err != nil {
			return err
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	return scanner.Err()
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: yamloracle FILE|-|-batch")
		os.Exit(2)
	}
	if os.Args[1] == "-batch" {
		if err := batch(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	objects, err := read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, o := range objects {
		line, err := canonical(o)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(string(line))
	}
}
