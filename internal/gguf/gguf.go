// Package gguf writes GGUF version 3 files, the model format of llama.cpp
// and Ollama: a header, typed key/value metadata, tensor descriptors, and
// the tensor data, each tensor aligned. It writes only what art's tests
// need to make a model of their own (float32 tensors, scalar, string and
// array metadata); it does not read models.
//
// Layout (all little-endian): "GGUF", version uint32, tensor count
// uint64, metadata count uint64; each metadata entry as a string key, a
// uint32 value type and the value; each tensor as a string name, uint32
// dimension count, uint64 dimensions (fastest-varying first), uint32 data
// type and uint64 offset from the start of the data section; padding to
// the alignment; the data. A string is a uint64 length and its bytes.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
)

// Version is the GGUF version written.
const Version = 3

// Alignment is the data alignment written (general.alignment's default).
const Alignment = 32

// Metadata value types.
const (
	typeUint32  = 4
	typeInt32   = 5
	typeFloat32 = 6
	typeBool    = 7
	typeString  = 8
	typeArray   = 9
)

// TypeF32 is the tensor data type of float32 tensors.
const TypeF32 = 0

// Tensor is one float32 tensor. Dims are fastest-varying first, as GGUF
// stores them: a matrix of R rows of C values is {C, R}.
type Tensor struct {
	Name string
	Dims []uint64
	Data []float32
}

// File is a model to write: metadata values are uint32, int32, float32,
// bool, string, []string or []int32; keys are written sorted, so a file is
// a pure function of its content.
type File struct {
	KV      map[string]any
	Tensors []Tensor
}

// Write writes f to w.
func (f *File) Write(w io.Writer) error {
	for _, t := range f.Tensors {
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		if n != uint64(len(t.Data)) {
			return fmt.Errorf("gguf: tensor %s: dims %v hold %d values, data has %d", t.Name, t.Dims, n, len(t.Data))
		}
	}
	bw := bufio.NewWriter(w)
	e := &enc{w: bw}
	e.raw([]byte("GGUF"))
	e.u32(Version)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(f.KV)))
	keys := make([]string, 0, len(f.KV))
	for k := range f.KV {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.str(k)
		if err := e.value(k, f.KV[k]); err != nil {
			return err
		}
	}
	off := uint64(0)
	for _, t := range f.Tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(TypeF32)
		e.u64(off)
		off = align(off + 4*uint64(len(t.Data)))
	}
	e.pad()
	for _, t := range f.Tensors {
		for _, v := range t.Data {
			e.u32(math.Float32bits(v))
		}
		e.pad()
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

func align(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

// enc writes little-endian values, remembering the first error and the
// offset (for padding).
type enc struct {
	w   io.Writer
	n   uint64
	err error
}

func (e *enc) raw(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *enc) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *enc) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *enc) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}
func (e *enc) pad() { e.raw(make([]byte, align(e.n)-e.n)) }

func (e *enc) value(key string, v any) error {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		b := byte(0)
		if v {
			b = 1
		}
		e.raw([]byte{b})
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(math.Float32bits(x))
		}
	default:
		return fmt.Errorf("gguf: metadata %s: unsupported type %T", key, v)
	}
	return nil
}
