package activities

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/fenixrt/fenix/agent/skills"
	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/hooks"
)

// RunSkillInput is the skill flow's input.
type RunSkillInput struct {
	Mode          string                `json:"mode"`
	Request       contract.SkillRequest `json:"request"`
	WorkspaceRoot string                `json:"workspace_root,omitempty"`
}

// RunSkillResult is a skill operation's preset output.
type RunSkillResult struct {
	Content string              `json:"content"`
	Data    map[string]any      `json:"data,omitempty"`
	Trace   contract.TraceEntry `json:"trace"`
}

// RunSkill performs a skill operation — list the catalog, load a skill,
// read one of its files, install one — whose output is the assignment's
// output (the seed's execute_skill_flow).
func (a *Activities) RunSkill(_ context.Context, in RunSkillInput) (RunSkillResult, error) {
	if a.Skills == nil {
		return fail[RunSkillResult](fenixerr.New(fenixerr.TypeToolUnavailable, "skill operation %q: this worker has no skills catalog configured (set FENIX_SKILLS_DIR)", in.Mode))
	}
	// Another worker may have installed a skill since this one started.
	if err := a.Skills.Reload(); err != nil {
		return fail[RunSkillResult](fenixerr.Transient(fmt.Errorf("reload skills catalog: %w", err)))
	}
	trace := contract.Trace(StageSkills, "mode", in.Mode, "skill_name", in.Request.SkillName)
	switch in.Mode {
	case contract.ModeSkillsCatalogList:
		entries := a.Skills.List()
		var b strings.Builder
		fmt.Fprintf(&b, "%d skills available:", len(entries))
		for _, e := range entries {
			fmt.Fprintf(&b, "\n- %s (%s): %s", e.Name, e.Source, e.Description)
		}
		trace.Fields["skill_count"] = len(entries)
		if problems := a.Skills.Problems(); len(problems) > 0 {
			trace.Fields["skipped_skills"] = problems
		}
		return RunSkillResult{Content: b.String(), Data: map[string]any{"skills": entries}, Trace: trace}, nil
	case contract.ModeSkillsLoad:
		pkg, err := a.Skills.Load(in.Request.SkillName)
		if err != nil {
			return fail[RunSkillResult](err)
		}
		trace.Fields["file_count"] = len(pkg.Files)
		return RunSkillResult{
			Content: fmt.Sprintf("Skill %s (%s):\n%s", pkg.Name, pkg.Source, pkg.SkillMD),
			Data:    map[string]any{"skill": pkg.Entry, "files": pkg.Files, "files_truncated": pkg.FilesTruncated},
			Trace:   trace,
		}, nil
	case contract.ModeSkillsReadFile:
		f, err := a.Skills.ReadFile(in.Request.SkillName, in.Request.RelativePath)
		if err != nil {
			return fail[RunSkillResult](err)
		}
		trace.Fields["path"] = f.Path
		trace.Fields["size"] = f.Size
		return RunSkillResult{
			Content: fmt.Sprintf("Skill %s file %s:\n%s", f.Skill, f.Path, f.Content),
			Data:    map[string]any{"skill": f.Skill, "path": f.Path, "size": f.Size, "truncated": f.Truncated},
			Trace:   trace,
		}, nil
	case contract.ModeSkillsInstall:
		entry, err := a.installSkill(in)
		if err != nil {
			return fail[RunSkillResult](err)
		}
		trace.Fields["skill_name"] = entry.Name
		trace.Fields["source_path"] = in.Request.SourcePath
		return RunSkillResult{
			Content: fmt.Sprintf("Installed skill %s from %s.", entry.Name, in.Request.SourcePath),
			Data:    map[string]any{"skill": entry},
			Trace:   trace,
		}, nil
	}
	return fail[RunSkillResult](fenixerr.Validation("skill mode %q is unknown", in.Mode))
}

// installSkill confines an install source to the workspace: skills are
// installed from what the agent's workspace holds, never from arbitrary
// worker paths. What the permission rules keep from a read (the source,
// or a file of a source directory) is refused: a skill's files are read
// in full once installed.
func (a *Activities) installSkill(in RunSkillInput) (skills.Entry, error) {
	ws, err := a.openWorkspace(in.WorkspaceRoot, true)
	if err != nil {
		return skills.Entry{}, err
	}
	defer ws.Close()
	// Opened through the workspace root and installed from the handles: a
	// source swapped for a link out of the workspace after this open is
	// never read (Install would resolve the host path again).
	dir, file, cleaned, err := ws.OpenSource(in.Request.SourcePath)
	if err != nil {
		return skills.Entry{}, err
	}
	if dir != nil {
		defer dir.Close()
	}
	if file != nil {
		defer file.Close()
		if info, err := file.Stat(); err != nil || !info.Mode().IsRegular() {
			return skills.Entry{}, fenixerr.Validation("skill source %q is neither a directory nor an archive file", cleaned)
		}
	}
	// What is read in full once installed must be readable now: not the
	// worker's private files (in a workspace of its home), not what a
	// Read deny rule keeps from the agent.
	filter, _ := a.hookRegistry().PermissionPolicy().(hooks.PathFilter)
	var refused error
	denied := func(rel string) bool {
		p := path.Join(cleaned, rel)
		if err := ws.RefusePrivate(p); err != nil {
			refused = err
			return true
		}
		return filter != nil && filter.ReadDenied(ws.Dir(), p, ws.ResolveLinks)
	}
	if denied(".") {
		if refused != nil {
			return skills.Entry{}, refused
		}
		return skills.Entry{}, fenixerr.New(fenixerr.TypePermissionDenied, "skill source %q is denied to reads by a permission rule, so it is not installed", cleaned).WithCode("read_denied")
	}
	opts := []skills.InstallOption{skills.RefuseReadDenied(denied)}
	entry, err := a.Skills.InstallOpened(filepath.Join(ws.Dir(), filepath.FromSlash(cleaned)), skills.OpenedSource{Dir: dir, Archive: file}, opts...)
	if err != nil && refused != nil {
		return skills.Entry{}, refused
	}
	return entry, err
}
