package exitcode

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// FieldError is the one error type of every library for an input it
// refuses: a field of a config or document (Field) holding a value
// (Value) that is missing, malformed or not allowed, with the exit-code
// class it means. Libraries speak in fields ("workspace /x: not a
// directory"); the CLI, which knows which flag fills which field, words
// the same error in flags ("--workspace /x: not a directory") through
// Render. A FieldError never names a flag itself.
//
// The message is a format with arguments, formatted when the error is
// printed, so that the arguments that are fields (Ref values) can be
// named by whoever prints it: the library's Label, or the CLI's flag.
// Errors among the arguments are wrapped as by %w, so errors.Is and
// errors.As reach a sentinel or cause given there.
type FieldError struct {
	Code  int    // exit-code class: Usage, Refused, NotFound, …
	Field string // the field refused: a Go field path ("Workspace", "Policy.Workspace") or a document path ("run.source")
	Value string // the value refused, as given; "" when the field is unset
	// Err is a sentinel (or cause) the error is, without being in its text:
	// errors.Is(err, execx.ErrWidens) for "allow rm: not allowed by the
	// policy". Set it with Because.
	Err error

	format string
	args   []any
}

// Ref is a field named inside a FieldError's or a Hinted error's text: the
// library prints it with Label, the CLI as the flag that sets the field.
type Ref string

// Field returns a FieldError that reads "FIELD VALUE: WHY" (without VALUE
// when value is ""), WHY being format formatted with args (%w allowed;
// Ref arguments are field names). It is the common form.
func Field(code int, field, value, format string, args ...any) *FieldError {
	head, hargs := "%s", []any{Ref(field)}
	if value != "" {
		head, hargs = "%s %s", append(hargs, value)
	}
	if format != "" {
		head += ": " + format
	}
	return &FieldError{Code: code, Field: field, Value: value, format: head, args: append(hargs, args...)}
}

// Fieldf returns a FieldError for field and value whose whole text is
// format with args, for a message that does not start with the field
// ("%s %s and the manifest's id %s differ", Ref("ID"), id, other).
func Fieldf(code int, field, value, format string, args ...any) *FieldError {
	return &FieldError{Code: code, Field: field, Value: value, format: format, args: args}
}

// Error is the library's wording: fields named by Label.
func (e *FieldError) Error() string { return e.Render(nil) }

// Render words the error with name(field) for every field it names (nil
// name: Label). The CLI passes its flag names.
func (e *FieldError) Render(name func(field string) string) string {
	return render(e.format, e.args, name)
}

// ExitCode implements Coder.
func (e *FieldError) ExitCode() int { return e.Code }

// Because sets the sentinel the error is (errors.Is) and returns e.
func (e *FieldError) Because(sentinel error) *FieldError {
	e.Err = sentinel
	return e
}

// Unwrap returns Err and the errors among the arguments (the causes and
// sentinels).
func (e *FieldError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, a := range e.args {
		if err, ok := a.(error); ok {
			errs = append(errs, err)
		}
	}
	return errs
}

// Fields lists the fields the message names, Field first.
func (e *FieldError) Fields() []string { return refs(e.Field, e.args) }

// Hinted is an error with a next step for the user, printed by the CLI as
// "TOOL: hint: …". Like FieldError's text, the hint may name fields (Ref
// arguments) that the CLI words as its flags.
type Hinted struct {
	Err    error
	format string
	args   []any
}

// WithHint adds a hint (format with args; Ref arguments are fields) to err
// without changing its message, its exit code or what it wraps. A nil err
// stays nil.
func WithHint(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Hinted{Err: err, format: format, args: args}
}

func (h *Hinted) Error() string { return h.Err.Error() }

// Unwrap keeps errors.Is/As working through the hint.
func (h *Hinted) Unwrap() error { return h.Err }

// Hint is the library's wording of the hint: fields named by Label.
func (h *Hinted) Hint() string { return h.RenderHint(nil) }

// RenderHint words the hint with name(field) for every field it names.
func (h *Hinted) RenderHint(name func(field string) string) string {
	return render(h.format, h.args, name)
}

// HintFields lists the fields the hint names.
func (h *Hinted) HintFields() []string { return refs("", h.args) }

func render(format string, args []any, name func(string) string) string {
	if name == nil {
		name = Label
	}
	out := make([]any, len(args))
	for i, a := range args {
		if r, ok := a.(Ref); ok {
			out[i] = name(string(r))
		} else {
			out[i] = a
		}
	}
	return fmt.Errorf(format, out...).Error()
}

func refs(first string, args []any) []string {
	var fs []string
	if first != "" {
		fs = append(fs, first)
	}
	for _, a := range args {
		if r, ok := a.(Ref); ok && string(r) != first {
			fs = append(fs, string(r))
		}
	}
	return fs
}

// Label is how a library names a field in its own messages: a Go field
// path in lower case with words joined by "-" ("IdempotencyKey" is
// "idempotency-key", "Policy.Workspace" is "policy.workspace"); a name
// without upper-case letters (a document path such as "run.source") is
// itself.
func Label(field string) string {
	var b strings.Builder
	rs := []rune(field)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			// A word starts at an upper-case letter after a lower-case one, or
			// at the last capital of an acronym followed by lower case
			// ("HTTPProxy" is "http-proxy", "ID" is "id").
			if i > 0 && rs[i-1] != '.' && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])) {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Walk calls fn for err and every error it wraps, depth first (through
// Unwrap() error and Unwrap() []error), for a caller that needs every
// FieldError or Hinted in a tree, not only the first errors.As finds.
func Walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		Walk(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			Walk(e, fn)
		}
	}
}

// AsField is errors.As for a *FieldError: the first in err's tree, or nil.
func AsField(err error) *FieldError {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}
