// Package prompt prepares the context of a round (the seed's PrepareTurn):
// it normalizes the kernel's transcript, selects the skills the messages
// refer to, and assembles the system prompt (BuildRoundPrompt). The
// result is [system prompt] + transcript, with estimates and a trace.
//
// # Sections
//
// The system prompt is made of these sections, in this order; empty
// sections are left out, each present one is "Heading:\n<body>", and
// sections are separated by a blank line. A line of a section's text that
// would read as a heading (a section's, "Skill name:" or "Files of skill
// name: ...") is quoted with "> ", and a skill's description is put on
// one line, so no text opens a section of its own:
//
//	#  section               heading               source
//	1  agent_prompt          Agent Prompt          prompts.agent_prompt, else AGENT.md
//	2  soul                  Soul                  prompts.soul, else SOUL.md
//	3  user                  User                  prompts.user, else USER.md
//	4  memory                Memory                prompts.memory, else MEMORY.md
//	5  conversation_summary  Conversation Summary  prompts.conversation_summary
//	6  operator_prompt       Operator Prompt       prompts.operator_prompt, else OPERATOR.md   (operator layer)
//	7  operator_state        Operator State        prompts.operator_state, else a workspace snapshot (operator layer)
//	8  active_skills         Active Skills         the skill catalog: "- name: description" per skill
//	9  selected_skills       Selected Skills       SKILL.md of each skill referenced as $name or [$name](...)
//	10 context_imports       Context Imports       context_imports, as indented JSON
//
// Files come from the profile directory <profiles>/<agent_context.profile>/
// (see LoadProfile). A section sent inline in the assignment wins over the
// file, whole: the two are not merged. The trace's section_sources says
// which one was used ("inline", "file", "snapshot" or "catalog").
//
// The operator layer (sections 6 and 7) is injected only when the profile
// is "main" and is_subagent is false, so a subagent or another profile
// never sees, or acts on, the main agent's runtime resources. When it is
// not injected, inline operator sections are dropped too, and the trace
// says why (operator_layer_reason).
//
// Operator State comes from operator.Snapshotter, which also writes the
// session's operator_state.json; a failing snapshot leaves the section out
// and is reported in the trace, it does not fail the round.
package prompt

import (
	"encoding/json"
	"strings"

	"github.com/fenixrt/fenix/contract"
)

// NormalizeTranscript keeps only what the model needs of each message:
// role and content, the tool-call linkage that keeps a tool request next
// to its answer, and the images a tool returned.
func NormalizeTranscript(messages []contract.Message) []contract.Message {
	out := make([]contract.Message, len(messages))
	for i, m := range messages {
		out[i] = contract.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name, Images: m.Images}
	}
	return out
}

// SkillSummary is an active skill's catalog line.
type SkillSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// SelectedSkill is a skill whose full package was loaded for this round.
type SelectedSkill struct {
	Name    string `json:"name"`
	SkillMD string `json:"skill_md"`
	// Files lists the skill's other files, so the model knows what it can
	// read from the skill.
	Files []string `json:"files,omitempty"`
}

// Sections are the inputs of BuildRoundPrompt, in prompt order.
type Sections struct {
	AgentPrompt         string
	Soul                string
	User                string
	Memory              string
	ConversationSummary string
	OperatorPrompt      string
	OperatorState       map[string]any
	ActiveSkills        []SkillSummary
	SelectedSkills      []SelectedSkill
	ContextImports      []map[string]any
}

// SectionSize is the size of one assembled section, for the trace.
type SectionSize struct {
	Name  string `json:"name"`
	Bytes int    `json:"bytes"`
}

// Build joins the non-empty sections, in the fixed order agent_prompt,
// soul, user, memory, conversation_summary, operator_prompt,
// operator_state, active skills, selected skills, context imports, with a
// heading each and a blank line between them.
func Build(s Sections) (string, []SectionSize) {
	var parts []string
	var sizes []SectionSize
	add := func(name, heading, body string) {
		body = strings.TrimSpace(body)
		if body == "" {
			return
		}
		part := heading + ":\n" + body
		parts = append(parts, part)
		sizes = append(sizes, SectionSize{Name: name, Bytes: len(part)})
	}
	// Text sections are quoted; the JSON ones cannot hold a bare line.
	text := func(name, heading, body string) { add(name, heading, quoteHeadings(body)) }
	text("agent_prompt", "Agent Prompt", s.AgentPrompt)
	text("soul", "Soul", s.Soul)
	text("user", "User", s.User)
	text("memory", "Memory", s.Memory)
	text("conversation_summary", "Conversation Summary", s.ConversationSummary)
	text("operator_prompt", "Operator Prompt", s.OperatorPrompt)
	if len(s.OperatorState) > 0 {
		add("operator_state", "Operator State", prettyJSON(s.OperatorState))
	}
	if len(s.ActiveSkills) > 0 {
		lines := make([]string, len(s.ActiveSkills))
		for i, sk := range s.ActiveSkills {
			// One line per skill, whatever the YAML made of it.
			lines[i] = "- " + sk.Name + ": " + strings.Join(strings.Fields(sk.Description), " ")
		}
		add("active_skills", "Active Skills", strings.Join(lines, "\n"))
	}
	if len(s.SelectedSkills) > 0 {
		blocks := make([]string, len(s.SelectedSkills))
		for i, sk := range s.SelectedSkills {
			blocks[i] = "Skill " + sk.Name + ":\n" + quoteHeadings(strings.TrimSpace(sk.SkillMD))
			if len(sk.Files) > 0 {
				blocks[i] += "\nFiles of skill " + sk.Name + ": " + strings.Join(sk.Files, ", ")
			}
		}
		add("selected_skills", "Selected Skills", strings.Join(blocks, "\n\n"))
	}
	if len(s.ContextImports) > 0 {
		blocks := make([]string, len(s.ContextImports))
		for i, imp := range s.ContextImports {
			blocks[i] = prettyJSON(imp)
		}
		add("context_imports", "Context Imports", strings.Join(blocks, "\n\n"))
	}
	return strings.Join(parts, "\n\n"), sizes
}

// sectionHeadings are the headings Build writes, for quoteHeadings.
var sectionHeadings = []string{"Agent Prompt", "Soul", "User", "Memory", "Conversation Summary",
	"Operator Prompt", "Operator State", "Active Skills", "Selected Skills", "Context Imports"}

// quoteHeadings quotes ("> ") each line of a section's text that would
// read as one of Build's own headings — a section's, a selected skill's
// ("Skill name:") or its file list ("Files of skill name: ...") — so
// text from a file or a skill cannot end its section and open another,
// more trusted one, such as Operator Prompt.
func quoteHeadings(body string) string {
	if !strings.Contains(body, ":") {
		return body
	}
	lines := strings.Split(body, "\n")
	for i, line := range lines {
		if looksLikeHeading(strings.TrimSpace(line)) {
			lines[i] = "> " + line
		}
	}
	return strings.Join(lines, "\n")
}

func looksLikeHeading(line string) bool {
	if len(line) > 96 {
		return false
	}
	lower := strings.ToLower(line)
	if strings.HasPrefix(lower, "files of skill ") {
		return true
	}
	name, ok := strings.CutSuffix(lower, ":")
	if !ok {
		return false
	}
	if rest, ok := strings.CutPrefix(name, "skill "); ok && !strings.ContainsAny(rest, " \t") {
		return true
	}
	for _, h := range sectionHeadings {
		if name == strings.ToLower(h) {
			return true
		}
	}
	return false
}

func prettyJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}
