package execcli

import "github.com/art-runtime/art/internal/cli"

// FieldFlags implements cli.FieldFlagger: the fields of execx.Narrowing
// (and the policy's IsolationBestEffort, the way out of an isolation this
// machine cannot enforce) that run's flags set, and the Task and Policy
// document fields a flag set in this run (a flag overrides the manifest's
// field; without --policy the flags are the policy), so an error about
// one names the flag typed: "--cwd ../..: parent directory component not
// allowed", not "task.dir: …".
func (c *RunCmd) FieldFlags() cli.Flags {
	f := cli.Flags{
		"Allow": "--allow", "Workspace": "--workspace",
		"Isolation": "--isolation", "IsolationBestEffort": "--isolation-best-effort",
		"Network": "--network", "AllowHost": "--allow-host",
	}
	f.Given("task.dir", "--cwd", c.Cwd != "", c.Cwd)
	f.Given("task.limits.timeout", "--timeout", c.Timeout != 0, c.Timeout)
	f.Given("task.limits.kill_after", "--kill-after", c.KillAfter != 0, c.KillAfter)
	f.Given("task.limits.grace", "--grace", c.Grace != 0, c.Grace)
	f.Given("task.limits.output_bytes", "--output-bytes", c.OutputBytes != 0, c.OutputBytes)
	f.Given("task.limits.cpu_seconds", "--cpu-seconds", c.CPUSeconds != 0, c.CPUSeconds)
	f.Given("task.limits.memory_bytes", "--memory-bytes", c.MemoryBytes != 0, c.MemoryBytes)
	f.Given("task.limits.processes", "--processes", c.Processes != 0, c.Processes)
	f.Given("task.limits.file_bytes", "--file-bytes", c.FileBytes != 0, c.FileBytes)
	f.Given("task.limits.open_files", "--open-files", c.OpenFiles != 0, c.OpenFiles)
	f.Given("task.context", "--context", len(c.Context) > 0 && c.Manifest == "", "")
	f.Given("policy.max.timeout", "--max-timeout", c.MaxTimeout != 0, c.MaxTimeout)
	f.Given("policy.max.output_bytes", "--max-output", c.MaxOutput != 0, c.MaxOutput)
	if c.Policy == "" {
		f.Given("policy.allow", "--allow", len(c.Allow) > 0, "")
		f.Given("policy.env_allow", "--env", len(c.Env) > 0, "")
		f.Given("policy.workspace", "--workspace", c.Workspace != "", c.Workspace)
	}
	f.Given("Policy", "--policy", c.Policy != "", "")
	return f
}
