package browser

// Element actions of a session: finding what a snapshot numbered or a
// selector names, clicking it, typing into it, and waiting for what that
// starts to settle.

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// Target is the element an action is for: a number from the last
// snapshot, or a CSS selector.
type Target struct {
	Ref      int
	Selector string
}

func (t Target) selector() string {
	if t.Selector != "" {
		return t.Selector
	}
	return RefSelector(t.Ref)
}

// String names the target for messages.
func (t Target) String() string {
	if t.Selector != "" {
		return fmt.Sprintf("selector %q", t.Selector)
	}
	return fmt.Sprintf("element [%d]", t.Ref)
}

// ElementError says an action's target is not on the page.
type ElementError struct {
	Target  Target
	Invalid string // the selector's syntax error, if that is the problem
}

func (e *ElementError) Error() string {
	if e.Invalid != "" {
		return fmt.Sprintf("%s is not a valid CSS selector: %s", e.Target, e.Invalid)
	}
	if e.Target.Selector == "" {
		return fmt.Sprintf("%s is not on the page: numbers come from the latest browser_snapshot, take a new one", e.Target)
	}
	return fmt.Sprintf("no element matches %s on the page", e.Target)
}

// Element describes the element an action touched.
type ElementInfo struct {
	Tag  string `json:"tag"`
	Name string `json:"name,omitempty"`
}

type described struct {
	ElementInfo
	Invalid string `json:"invalid,omitempty"`
}

func (s *Session) find(tab context.Context, t Target) (ElementInfo, error) {
	d, err := chromedp.Run(tab, chromedp.Evaluate[*described](describeJS(t.selector())))
	if err != nil {
		return ElementInfo{}, fmt.Errorf("looking for %s: %w", t, err)
	}
	if d == nil || d.Invalid != "" {
		e := &ElementError{Target: t}
		if d != nil {
			e.Invalid = d.Invalid
		}
		return ElementInfo{}, e
	}
	return d.ElementInfo, nil
}

// Click clicks an element with the mouse and waits for a navigation it
// causes.
func (s *Session) Click(ctx context.Context, t Target, timeout time.Duration) (ElementInfo, State, error) {
	var el ElementInfo
	var st State
	err := s.do(ctx, timeout, func(tab context.Context) error {
		var err error
		if el, err = s.find(tab, t); err != nil {
			return err
		}
		before, _ := s.loadCount()
		s.takeBlocked()
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(t.selector()), chromedp.NodeVisible)); err != nil {
			return fmt.Errorf("clicking %s: %w", t, err)
		}
		st, err = s.settle(tab, before)
		return err
	})
	return el, st, err
}

// Type types text into an element (replacing its value unless appending),
// optionally pressing Enter afterwards, and waits for a navigation that
// causes.
func (s *Session) Type(ctx context.Context, t Target, text string, appendText, submit bool, timeout time.Duration) (ElementInfo, State, error) {
	var el ElementInfo
	var st State
	err := s.do(ctx, timeout, func(tab context.Context) error {
		var err error
		if el, err = s.find(tab, t); err != nil {
			return err
		}
		sel := chromedp.CSS(t.selector())
		if !appendText {
			if err := chromedp.Do(tab, chromedp.Clear(sel, chromedp.NodeVisible)); err != nil {
				return fmt.Errorf("clearing %s: %w", t, err)
			}
		}
		keys := text
		if submit {
			keys += "\r"
		}
		before, _ := s.loadCount()
		s.takeBlocked()
		if err := chromedp.Do(tab, chromedp.SendKeys(sel, keys, chromedp.NodeVisible)); err != nil {
			return fmt.Errorf("typing into %s: %w", t, err)
		}
		if !submit {
			// Typing alone rarely navigates; do not wait for it.
			st, err = s.finalState(tab, State{})
			return err
		}
		st, err = s.settle(tab, before)
		return err
	})
	return el, st, err
}

// settle waits briefly for a navigation the last action may have started,
// and for its load to finish if it did.
func (s *Session) settle(tab context.Context, before int) (State, error) {
	deadline := time.Now().Add(settleWindow)
	navigated := false
	for {
		started, done := s.loadCount()
		if started > before {
			navigated = true
			if done >= started {
				break
			}
		} else if time.Now().After(deadline) {
			break
		}
		select {
		case <-tab.Done():
			return State{}, fmt.Errorf("waiting for the page to load: %w", tab.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
	if blocked := s.takeBlocked(); blocked != nil {
		s.settleBlank(tab)
		return State{}, blocked
	}
	st, err := s.finalState(tab, State{})
	st.Navigated = navigated
	return st, err
}
