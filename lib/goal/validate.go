package goal

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/vocab"
)

// Limits on what a journal may hold. They keep a journal a small file that
// a person can read; the byte cap bounds everything else.
const (
	MaxIDLen        = 128
	MaxLineBytes    = 1024      // titles, non-goals, checklist texts, argv words
	MaxTextBytes    = 16 << 10  // summaries, notes, closure texts
	MaxPathBytes    = 4096      // evidence paths
	MaxURLBytes     = 2048      // evidence URLs
	MaxArgv         = 1024      // words in command evidence
	MaxJournalBytes = 16 << 20  // a stored journal, a put document, a closure document
	MaxExitCode     = 255       // exit codes are 0..255 (128+N for a signal)
	digestPrefix    = "sha256:" // digests and artobs event ids
)

// IDRule is the rule goal and checklist-item ids follow (task ids follow
// the stricter TaskIDRule, the queue's). Goal ids are
// file names (DIR/goals/ID.json), so the rule is the one a safe file name
// needs: no "/", no leading "." (so neither "." nor ".."), nothing a shell
// or a terminal would interpret.
const IDRule = "1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit"

// TaskIDRule is the rule task evidence ids follow: artq's task ids
// (vocab.ValidName), which are also file names and NATS subject tokens, so
// a dot is out even though goal ids allow one.
const TaskIDRule = "1-128 characters of A-Z a-z 0-9 _ -, starting with a letter or digit"

// taskIDProblem is why id is not an artq task id, or "".
func taskIDProblem(id string) string {
	if why := idProblem(id); why != "" {
		return why
	}
	if vocab.ValidName("task", id) != nil {
		return "not an artq task id: character '.' not allowed"
	}
	return ""
}

// CheckID reports why id is not a valid goal id, or nil. what names the id
// in the message ("goal id", "checklist item id").
func CheckID(what, id string) error {
	if why := idProblem(id); why != "" {
		return jsonx.Errorf("", "%s %q: %s (ids are %s)", what, id, why, IDRule)
	}
	return nil
}

func idProblem(id string) string {
	switch {
	case id == "":
		return "empty"
	case len(id) > MaxIDLen:
		return fmt.Sprintf("longer than %d characters", MaxIDLen)
	case !isAlnum(id[0]):
		return "must start with a letter or digit"
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			if c < 0x20 || c >= 0x7f {
				return fmt.Sprintf("byte 0x%02x not allowed", c)
			}
			return fmt.Sprintf("character %q not allowed", c)
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// lineProblem checks a one-line human text: non-blank, bounded, UTF-8,
// no control characters (a newline in a title breaks every listing).
func lineProblem(s string) string { return textProblem(s, MaxLineBytes, false) }

// paragraphProblem checks a free text: newlines and tabs allowed.
func paragraphProblem(s string) string { return textProblem(s, MaxTextBytes, true) }

func textProblem(s string, max int, multiline bool) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "required (not blank)"
	case len(s) > max:
		return fmt.Sprintf("longer than %d bytes", max)
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) {
			return fmt.Sprintf("control character %U not allowed", r)
		}
	}
	return ""
}

func timeProblem(t time.Time) string {
	if t.IsZero() {
		return "required"
	}
	if _, off := t.Zone(); off != 0 {
		return "must be UTC (RFC 3339 ending in Z)"
	}
	return ""
}

func digestProblem(d string) string {
	hex, ok := strings.CutPrefix(d, digestPrefix)
	if !ok {
		return fmt.Sprintf("%q must be %s followed by 64 lowercase hex digits", d, digestPrefix)
	}
	if len(hex) != 64 {
		return fmt.Sprintf("%q must have 64 hex digits after %s", d, digestPrefix)
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Sprintf("%q must have lowercase hex digits after %s", d, digestPrefix)
		}
	}
	return ""
}

func pathProblem(p string) string {
	switch {
	case p == "":
		return "required"
	case len(p) > MaxPathBytes:
		return fmt.Sprintf("longer than %d bytes", MaxPathBytes)
	case !utf8.ValidString(p):
		return "not valid UTF-8"
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Sprintf("control character %U not allowed", r)
		}
	}
	return ""
}

// urlProblem accepts an absolute URL with a scheme and a host. It refuses
// credentials in the URL: a journal is a plain durable file, and a token in
// evidence would be kept forever.
func urlProblem(s string) string {
	if p := pathProblem(s); p != "" {
		return p
	}
	if len(s) > MaxURLBytes {
		return fmt.Sprintf("longer than %d bytes", MaxURLBytes)
	}
	if strings.ContainsAny(s, " \t") {
		return "must not contain spaces"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "not a URL"
	}
	switch {
	case u.Scheme == "":
		return fmt.Sprintf("%q is not absolute (want scheme://host/…)", s)
	case u.Host == "":
		return fmt.Sprintf("%q has no host", s)
	case u.User != nil:
		return "must not carry credentials (user:password@)"
	}
	return ""
}

func in[T comparable](v T, set []T) bool {
	for _, s := range set {
		if s == v {
			return true
		}
	}
	return false
}

func join(path, field string) string { return path + "." + field }

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// Validate checks the whole journal for structure and internal consistency:
// every field within its rules, receipts for exactly the phases before the
// current one (and deliver itself once sealed), times in order and inside
// [created_at, updated_at], a revision that can have produced this many
// seals, and a closure only when closure is allowed. It carries exit code 2.
// It does not know the stored history: that is CheckSuccessor's job.
func (j *Journal) Validate() error {
	const root = "journal"
	if j.APIVersion != jsonx.APIVersion {
		return jsonx.Errorf(join(root, "apiVersion"), "got %q, want %q", j.APIVersion, jsonx.APIVersion)
	}
	if j.Kind != Kind {
		return jsonx.Errorf(join(root, "kind"), "got %q, want %q", j.Kind, Kind)
	}
	if why := idProblem(j.ID); why != "" {
		return jsonx.Errorf(join(root, "id"), "%q: %s (ids are %s)", j.ID, why, IDRule)
	}
	if why := lineProblem(j.Title); why != "" {
		return jsonx.Errorf(join(root, "title"), "%s", why)
	}
	if why := timeProblem(j.CreatedAt); why != "" {
		return jsonx.Errorf(join(root, "created_at"), "%s", why)
	}
	if why := timeProblem(j.UpdatedAt); why != "" {
		return jsonx.Errorf(join(root, "updated_at"), "%s", why)
	}
	if j.UpdatedAt.Before(j.CreatedAt) {
		return jsonx.Errorf(join(root, "updated_at"), "before created_at")
	}
	if j.Revision < 1 {
		return jsonx.Errorf(join(root, "revision"), "must be at least 1, got %d", j.Revision)
	}
	if j.NonGoals == nil {
		return jsonx.Errorf(join(root, "non_goals"), "required ([] for none)")
	}
	for i, s := range j.NonGoals {
		if why := lineProblem(s); why != "" {
			return jsonx.Errorf(index(join(root, "non_goals"), i), "%s", why)
		}
	}
	win := window{from: j.CreatedAt, to: j.UpdatedAt}
	if err := j.validateChecklist(root, win); err != nil {
		return err
	}
	if err := j.validateReceipts(root, win); err != nil {
		return err
	}
	steps := int64(1 + len(j.Receipts))
	if j.Closure != nil {
		steps++
	}
	if j.Revision < steps {
		return jsonx.Errorf(join(root, "revision"), "%d is too low for %d sealed phases%s: every seal and the closure is its own revision", j.Revision, len(j.Receipts), map[bool]string{true: " and a closure"}[j.Closure != nil])
	}
	if j.Closure != nil {
		return j.validateClosure(root, win)
	}
	return nil
}

type window struct{ from, to time.Time }

func (w window) check(path string, t time.Time) error {
	if why := timeProblem(t); why != "" {
		return jsonx.Errorf(path, "%s", why)
	}
	if t.Before(w.from) {
		return jsonx.Errorf(path, "%s is before %s", stamp(t), stamp(w.from))
	}
	if t.After(w.to) {
		return jsonx.Errorf(path, "%s is after the journal's updated_at %s", stamp(t), stamp(w.to))
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (j *Journal) validateChecklist(root string, win window) error {
	path := join(root, "checklist")
	if j.Checklist == nil {
		return jsonx.Errorf(path, "required ([] for none)")
	}
	seen := map[string]int{}
	for i, it := range j.Checklist {
		p := index(path, i)
		if why := idProblem(it.ID); why != "" {
			return jsonx.Errorf(join(p, "id"), "%q: %s (ids are %s)", it.ID, why, IDRule)
		}
		if isDigits(it.ID) {
			return jsonx.Errorf(join(p, "id"), "%q: all digits, which would read as an index", it.ID)
		}
		if k, dup := seen[it.ID]; dup {
			return jsonx.Errorf(join(p, "id"), "%q duplicates checklist[%d]", it.ID, k)
		}
		seen[it.ID] = i
		if why := lineProblem(it.Text); why != "" {
			return jsonx.Errorf(join(p, "text"), "%s", why)
		}
		if it.Evidence == nil {
			return jsonx.Errorf(join(p, "evidence"), "required ([] for none)")
		}
		if err := validateEvidenceList(join(p, "evidence"), it.Evidence, win); err != nil {
			return err
		}
	}
	return nil
}

func validateEvidenceList(path string, evs []Evidence, win window) error {
	for i, e := range evs {
		p := index(path, i)
		if err := e.validate(p); err != nil {
			return err
		}
		if err := win.check(join(p, "recorded_at"), e.RecordedAt); err != nil {
			return err
		}
		if i > 0 && e.RecordedAt.Before(evs[i-1].RecordedAt) {
			return jsonx.Errorf(join(p, "recorded_at"), "before the evidence recorded ahead of it: evidence is appended in time order")
		}
	}
	return nil
}

func (j *Journal) validateReceipts(root string, win window) error {
	path := join(root, "receipts")
	cur := j.Phase.Index()
	if cur < 0 {
		return jsonx.Errorf(join(root, "phase"), "unknown phase %q (phases are %s)", j.Phase, phaseList())
	}
	if j.Receipts == nil {
		return jsonx.Errorf(path, "required ({} for none)")
	}
	for p := range j.Receipts {
		if p.Index() < 0 {
			return jsonx.Errorf(join(path, string(p)), "unknown phase (phases are %s)", phaseList())
		}
	}
	last := len(Phases) - 1
	var prevSeal time.Time
	for i, p := range Phases {
		r, ok := j.Receipts[p]
		switch {
		case i < cur && !ok:
			return jsonx.Errorf(join(root, "phase"), "is %s but phase %s has no receipt: a phase is entered only by sealing the one before", j.Phase, p)
		case i > cur && ok:
			return jsonx.Errorf(join(path, string(p)), "sealed ahead of the current phase %s", j.Phase)
		case i == cur && ok && i != last:
			return jsonx.Errorf(join(path, string(p)), "the current phase is sealed but the goal did not advance to %s", Phases[i+1])
		}
		if !ok {
			continue
		}
		rp := join(path, string(p))
		if why := paragraphProblem(r.Summary); why != "" {
			return jsonx.Errorf(join(rp, "summary"), "%s", why)
		}
		if err := win.check(join(rp, "sealed_at"), r.SealedAt); err != nil {
			return err
		}
		if r.SealedAt.Before(prevSeal) {
			return jsonx.Errorf(join(rp, "sealed_at"), "before the seal of the phase ahead of it")
		}
		prevSeal = r.SealedAt
		if len(r.Evidence) == 0 {
			return jsonx.Errorf(join(rp, "evidence"), "a receipt needs at least one piece of evidence")
		}
		if err := validateEvidenceList(join(rp, "evidence"), r.Evidence, window{from: r.SealedAt, to: win.to}); err != nil {
			return err
		}
	}
	return nil
}

func (j *Journal) validateClosure(root string, win window) error {
	path := join(root, "closure")
	if err := j.Closure.ClosureBody.validate(path); err != nil {
		return err
	}
	if err := closable(j); err != nil {
		return jsonx.Errorf(path, "%s", err.(*SuccessorError).Msg)
	}
	from := j.Receipts[PhaseDeliver].SealedAt
	return window{from: from, to: win.to}.check(join(path, "closed_at"), j.Closure.ClosedAt)
}

// closable is the closure precondition: all eight receipts, a non-empty
// checklist, evidence on every item.
func closable(j *Journal) error {
	for _, p := range Phases {
		if !j.Sealed(p) {
			return illegal(RuleClosure, "phase %s has no receipt: closure needs all %d phases sealed", p, len(Phases))
		}
	}
	if len(j.Checklist) == 0 {
		return illegal(RuleClosure, "the acceptance checklist is empty: a goal closes against at least one evidenced item")
	}
	for i, it := range j.Checklist {
		if len(it.Evidence) == 0 {
			return illegal(RuleClosure, "checklist item %d (%s) has no evidence", i, it.ID)
		}
	}
	return nil
}

func phaseList() string {
	s := make([]string, len(Phases))
	for i, p := range Phases {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// EvidenceShape names the type-specific fields an evidence type requires
// and allows; every other type-specific field must be absent.
type EvidenceShape struct {
	Required, Optional []string
}

// EvidenceShapes is the field table of every evidence type, shared by
// validation and the schema parity test.
var EvidenceShapes = map[EvidenceType]EvidenceShape{
	EvidenceCommand: {Required: []string{"argv", "exit_code"}, Optional: []string{"path", "digest"}},
	EvidenceFile:    {Required: []string{"path", "digest"}},
	EvidenceTask:    {Required: []string{"task", "state"}, Optional: []string{"from_queue"}},
	EvidenceEvent:   {Required: []string{"event"}, Optional: []string{"from_sink"}},
	EvidenceURL:     {Required: []string{"url"}},
	EvidenceNote:    {Required: []string{"text"}},
}

// validate checks one piece of evidence: its type's fields present and
// well-formed, every other type's fields absent.
func (e Evidence) validate(path string) error {
	switch e.Type {
	case EvidenceCommand:
		if len(e.Argv) == 0 {
			return jsonx.Errorf(join(path, "argv"), "required for command evidence (at least the program)")
		}
		if len(e.Argv) > MaxArgv {
			return jsonx.Errorf(join(path, "argv"), "more than %d words", MaxArgv)
		}
		for i, w := range e.Argv {
			if i == 0 && w == "" {
				return jsonx.Errorf(index(join(path, "argv"), i), "empty program")
			}
			if len(w) > MaxLineBytes || strings.ContainsRune(w, 0) {
				return jsonx.Errorf(index(join(path, "argv"), i), "longer than %d bytes or contains a NUL byte", MaxLineBytes)
			}
		}
		if e.ExitCode == nil {
			return jsonx.Errorf(join(path, "exit_code"), "required for command evidence")
		}
		if *e.ExitCode < 0 || *e.ExitCode > MaxExitCode {
			return jsonx.Errorf(join(path, "exit_code"), "%d is not an exit code (0-%d)", *e.ExitCode, MaxExitCode)
		}
		if e.Path != "" && e.Digest == "" {
			return jsonx.Errorf(join(path, "digest"), "required when path is set: the path names the file the digest was taken of")
		}
	case EvidenceFile:
		if e.Digest == "" {
			return jsonx.Errorf(join(path, "digest"), "required for file evidence")
		}
		if why := pathProblem(e.Path); why != "" {
			return jsonx.Errorf(join(path, "path"), "%s", why)
		}
	case EvidenceTask:
		if why := taskIDProblem(e.Task); why != "" {
			return jsonx.Errorf(join(path, "task"), "%q: %s (task ids are %s)", e.Task, why, TaskIDRule)
		}
		if !in(e.State, TaskStates) {
			return jsonx.Errorf(join(path, "state"), "%q is not a task state (%s)", e.State, joinStrings(TaskStates))
		}
		if e.FromQueue != nil {
			if !e.State.Terminal() {
				return jsonx.Errorf(join(path, "state"), "%s with from_queue: only a finished task (succeeded, failed, cancelled) is recorded from a queue", e.State)
			}
			if err := e.FromQueue.validate(join(path, "from_queue")); err != nil {
				return err
			}
		}
	case EvidenceEvent:
		if why := digestProblem(e.Event); why != "" {
			return jsonx.Errorf(join(path, "event"), "%s", why)
		}
		if e.FromSink != nil {
			if err := e.FromSink.validate(join(path, "from_sink")); err != nil {
				return err
			}
		}
	case EvidenceURL:
		if why := urlProblem(e.URL); why != "" {
			return jsonx.Errorf(join(path, "url"), "%s", why)
		}
	case EvidenceNote:
		if why := paragraphProblem(e.Text); why != "" {
			return jsonx.Errorf(join(path, "text"), "%s", why)
		}
	case "":
		return jsonx.Errorf(join(path, "type"), "required (%s)", joinStrings(EvidenceTypes))
	default:
		return jsonx.Errorf(join(path, "type"), "unknown evidence type %q (%s)", e.Type, joinStrings(EvidenceTypes))
	}
	if e.Path != "" {
		if why := pathProblem(e.Path); why != "" {
			return jsonx.Errorf(join(path, "path"), "%s", why)
		}
	}
	if e.Digest != "" {
		if why := digestProblem(e.Digest); why != "" {
			return jsonx.Errorf(join(path, "digest"), "%s", why)
		}
	}
	shape := EvidenceShapes[e.Type]
	for _, f := range e.setFields() {
		if !in(f, shape.Required) && !in(f, shape.Optional) {
			return jsonx.Errorf(join(path, f), "not allowed in %s evidence", e.Type)
		}
	}
	if e.Note != "" {
		if why := paragraphProblem(e.Note); why != "" {
			return jsonx.Errorf(join(path, "note"), "%s", why)
		}
	}
	return nil
}

// MaxEventHeader bounds the event subject and type a SinkCheck copies: the
// bound artobs puts on an envelope's header.
const MaxEventHeader = vocab.MaxEventHeader

func (c *QueueCheck) validate(path string) error {
	if why := absPathProblem(c.Dir); why != "" {
		return jsonx.Errorf(join(path, "dir"), "%s", why)
	}
	if c.Seq < 1 {
		return jsonx.Errorf(join(path, "seq"), "must be at least 1 (a queue that holds the task has events)")
	}
	if c.Attempts < 0 {
		return jsonx.Errorf(join(path, "attempts"), "must not be negative")
	}
	if why := timeProblem(c.UpdatedAt); why != "" {
		return jsonx.Errorf(join(path, "updated_at"), "%s", why)
	}
	return nil
}

func (c *SinkCheck) validate(path string) error {
	if why := absPathProblem(c.Path); why != "" {
		return jsonx.Errorf(join(path, "path"), "%s", why)
	}
	if c.Line < 1 {
		return jsonx.Errorf(join(path, "line"), "must be at least 1")
	}
	if why := headerProblem(c.Subject); why != "" {
		return jsonx.Errorf(join(path, "subject"), "%s", why)
	}
	if why := headerProblem(c.Type); why != "" {
		return jsonx.Errorf(join(path, "type"), "%s", why)
	}
	if c.Seq < 1 || c.Seq > jsonx.MaxSafeInteger {
		return jsonx.Errorf(join(path, "seq"), "must be 1..%d", uint64(jsonx.MaxSafeInteger))
	}
	if why := timeProblem(c.Time); why != "" {
		return jsonx.Errorf(join(path, "time"), "%s", why)
	}
	return nil
}

// absPathProblem checks a path artgoal resolved itself: absolute and clean.
func absPathProblem(p string) string {
	if why := pathProblem(p); why != "" {
		return why
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Sprintf("%q is not an absolute, clean path", p)
	}
	return ""
}

// headerProblem checks an event's subject or type by artobs's own rule for
// envelope headers (non-empty, bounded, UTF-8, no C0 control or DEL), so
// every event artobs can seal can be cited.
func headerProblem(s string) string {
	switch {
	case s == "":
		return "required"
	case len(s) > MaxEventHeader:
		return fmt.Sprintf("longer than %d bytes", MaxEventHeader)
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return fmt.Sprintf("control character 0x%02x not allowed", s[i])
		}
	}
	return ""
}

// setFields names the type-specific fields that carry a value.
func (e Evidence) setFields() []string {
	var f []string
	add := func(set bool, name string) {
		if set {
			f = append(f, name)
		}
	}
	add(e.Argv != nil, "argv")
	add(e.ExitCode != nil, "exit_code")
	add(e.Path != "", "path")
	add(e.Digest != "", "digest")
	add(e.Task != "", "task")
	add(e.State != "", "state")
	add(e.FromQueue != nil, "from_queue")
	add(e.Event != "", "event")
	add(e.FromSink != nil, "from_sink")
	add(e.URL != "", "url")
	add(e.Text != "", "text")
	return f
}

func joinStrings[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// Validate checks a GoalClosure document (header and body). It carries
// exit code 2.
func (d *ClosureDocument) Validate() error {
	if d.APIVersion != jsonx.APIVersion {
		return jsonx.Errorf("closure.apiVersion", "got %q, want %q", d.APIVersion, jsonx.APIVersion)
	}
	if d.Kind != KindClosure {
		return jsonx.Errorf("closure.kind", "got %q, want %q", d.Kind, KindClosure)
	}
	return d.ClosureBody.validate("closure")
}

func (c *ClosureBody) validate(path string) error {
	if why := paragraphProblem(c.Outcome); why != "" {
		return jsonx.Errorf(join(path, "outcome"), "%s", why)
	}
	if c.Cleanup == nil {
		return jsonx.Errorf(join(path, "cleanup"), "required ([] when nothing needed cleaning up)")
	}
	for i, s := range c.Cleanup {
		if why := paragraphProblem(s); why != "" {
			return jsonx.Errorf(index(join(path, "cleanup"), i), "%s", why)
		}
	}
	if c.Debt == nil {
		return jsonx.Errorf(join(path, "debt"), "required ([] for no remaining debt)")
	}
	for i, d := range c.Debt {
		p := index(join(path, "debt"), i)
		if !in(d.Kind, DebtKinds) {
			return jsonx.Errorf(join(p, "kind"), "%q is not a debt kind (%s)", d.Kind, joinStrings(DebtKinds))
		}
		if why := paragraphProblem(d.Text); why != "" {
			return jsonx.Errorf(join(p, "text"), "%s", why)
		}
	}
	if c.Risks == nil {
		return jsonx.Errorf(join(path, "risks"), "required ([] for no remaining risk)")
	}
	for i, r := range c.Risks {
		p := index(join(path, "risks"), i)
		if !in(r.Severity, Severities) {
			return jsonx.Errorf(join(p, "severity"), "%q is not a severity (%s)", r.Severity, joinStrings(Severities))
		}
		if why := paragraphProblem(r.Text); why != "" {
			return jsonx.Errorf(join(p, "text"), "%s", why)
		}
		if r.Mitigation != "" {
			if why := paragraphProblem(r.Mitigation); why != "" {
				return jsonx.Errorf(join(p, "mitigation"), "%s", why)
			}
		}
	}
	if c.Next == nil {
		return jsonx.Errorf(join(path, "next"), "required ([] for no follow-up work)")
	}
	for i, n := range c.Next {
		p := index(join(path, "next"), i)
		if why := lineProblem(n.Title); why != "" {
			return jsonx.Errorf(join(p, "title"), "%s", why)
		}
		if n.Goal != "" {
			if why := idProblem(n.Goal); why != "" {
				return jsonx.Errorf(join(p, "goal"), "%q: %s (ids are %s)", n.Goal, why, IDRule)
			}
		}
	}
	return nil
}
