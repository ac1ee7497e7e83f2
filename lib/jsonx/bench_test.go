package jsonx

import "testing"

// benchDoc is a task document of the size operators write.
var benchDoc = []byte(`{"apiVersion":"art/v1alpha1","kind":"Task","program":"sh","args":["-c","printf '%s\n' \"$X\" | tee out.txt","--flag=value"],"limits":{"timeout":"90s","output_bytes":1048576},"set":{"HOME":"/tmp/h","LANG":"C.UTF-8"},"attrs":{"team":"build","retries":[1,2,3],"nested":{"a":true,"b":null,"c":1.5e3}},"at":"2026-11-30T03:56:19.123456789Z"}`)

// BenchmarkDecode: one strict document decode (Check, then encoding/json,
// then defaults and validation).
func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		var d doc
		if err := Decode(benchDoc, "task", &d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse: the value tree under Canonical.
func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchDoc, "doc", ParseOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
